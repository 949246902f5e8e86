"""The lab dataset's provenance README, written from what the recorder logged (never by hand)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from reveal_lab.io import read_labels, read_meta
from reveal_lab.machine import machine_cores, machine_info

__all__ = ["provenance_readme", "STORY_MARKER", "machine_provenance", "recorded_slots"]

#: the line after which ``README.md`` of a dataset folder is written by hand (the recording's
#: story); :func:`provenance_readme` carries it over, marker included, when it rebuilds the file
STORY_MARKER = "<!-- written by hand below this line; reveal-lab record --build-only keeps it -->"


def _sessions(raw: Path) -> list[dict]:
    p = raw / "recording.json"
    return json.loads(p.read_text()).get("sessions", []) if p.exists() else []


def _story(out: Path) -> str:
    """The hand-written part of ``out/README.md`` (from :data:`STORY_MARKER` on), or ``""``."""
    readme = out / "README.md"
    text = readme.read_text() if readme.exists() else ""
    return text[text.index(STORY_MARKER):] if STORY_MARKER in text else ""


def provenance_readme(raw_dir: str | Path, out_dir: str | Path) -> str:
    """Markdown provenance for the dataset in ``out_dir`` recorded into ``raw_dir``; the part
    of ``out_dir/README.md`` from :data:`STORY_MARKER` on is written by hand and kept."""
    raw, out = Path(raw_dir), Path(out_dir)
    meta = read_meta(out / "meta_lab.csv", required=())
    labels = read_labels(out / "labels.csv")
    sessions = _sessions(raw)
    s0 = sessions[0] if sessions else {}
    m = s0.get("machine", {})
    size = sum(p.stat().st_size for p in out.rglob("*.parquet"))
    lines = [
        *_contents(meta, labels, size),
        *_run_tables(meta, labels),
        *_how_recorded(s0, meta),
        *_machine(m, sessions),
        *_rerecording(sessions),
        *_session_notes(raw, sessions),
    ]
    story = _story(out)
    return "\n".join(lines) + "\n" + ("\n" + story if story else "")


def _contents(meta: pl.DataFrame, labels: pl.DataFrame, size: int) -> list[str]:
    """The README's title, what the dataset holds and its files."""
    return [
        "# reveal-lab lab dataset: real ML workloads under injected faults",
        "",
        "Telemetry recorded by `reveal-lab collect` (one collector per lab host, 100 ms) while PyTorch",
        "workloads trained and inferred on the CPU, with faults injected at recorded times.",
        "This file is written by `reveal-lab record --build-only` from the recorder's log",
        "(`recording.json`); do not edit it by hand, except below the marker at its end (the",
        "recording's story, kept when the file is written again).",
        "",
        "## Contents",
        "",
        f"* {meta.height} host runs ({meta['run'].n_unique()} runs) in the public "
        f"dataset's layout and grammar: "
        "`train_separated/` and `infer_separated/`, "
        "`{prefix}_{MODEL}for{Task}_{dataset}_{YYYY-MM-DDTHH-MM-SS}_{host}.parquet` (UTC start time), "
        'canonical wide frames (`view="dataset"`: counters as `_diff` columns); '
        f"{size / 1e6:.1f} MB of Parquet.",
        "* `meta_lab.csv`: the public meta columns (`source_file, n_rows, n_cols, phase, mode, model, task, "
        "dataset, model_task, workload`) and lab columns (`run` = file stem without host, `host`, `core`, "
        "`run_group` (ties the two hosts of a DDP run), `world_size`, `fault`, `repeat`, "
        "`seed`, `start`, `end`, "
        "`steps`, `samples_per_s` (workload throughput), `cpu_quota`, `n_dropped_nan_columns`).",
        f"* `labels.csv`: {labels.height} ground-truth fault rows: `run, host, fault_type, start, end, "
        "expected_subsystem, magnitude, unit, scope, source_file`; `start`/`end` are the wall-clock times "
        "(ms, naive UTC -- the collector's row clock) right after the fault became active / was removed; "
        "`scope` is `episode` (inside a run, calm before and after) or `run` (a configuration difference "
        "for the whole run).",
        "* `recording.json`: the recorder's log (machine, versions, hosts, per-slot load average and the "
        "busiest other processes, plans).",
        "",
        "Channels that were missing for a whole run (e.g. counters the kernel does not provide here) were",
        "dropped from that run's file; `n_dropped_nan_columns` says how many. Nothing else was removed.",
        "",
    ]


def _run_tables(meta: pl.DataFrame, labels: pl.DataFrame) -> list[str]:
    """The host runs per workload, phase, world size and fault; the fault episodes per kind."""
    lines = [
        "### Runs",
        "",
        "| workload | phase | world size | fault | host runs |",
        "|---|---|---|---|---|",
    ]
    counts = Counter(
        (r["model"], r["phase"], r["world_size"], r["fault"]) for r in meta.iter_rows(named=True)
    )
    for (model, phase, ws, fault), n in sorted(counts.items()):
        lines.append(f"| {model} | {phase} | {ws} | {fault} | {n} |")
    lines += [
        "",
        "### Fault episodes",
        "",
        "| fault_type | expected_subsystem | magnitude | episodes |",
        "|---|---|---|---|",
    ]
    if labels.height:
        for r in (
            labels.group_by("fault_type", "expected_subsystem", "magnitude")
            .agg(pl.len().alias("n"))
            .sort("fault_type", "magnitude")
            .iter_rows(named=True)
        ):
            lines.append(f"| {r['fault_type']} | {r['expected_subsystem']} | {r['magnitude']} | {r['n']} |")
    return lines


def _how_recorded(s0: dict, meta: pl.DataFrame) -> list[str]:
    """Hosts, collectors, workloads, faults, schedule and what was not emulated."""
    return [
        "",
        "## How it was recorded",
        "",
        "* **Hosts**: " + _hosts_text(s0.get("hosts", [])),
        "* **Collectors**: `reveal-lab collect --host labX --interval 100ms "
        "--cgroup-root <host's v2 cgroup>` "
        "started inside the host (`nsenter --net=/run/netns/labX`; `ip netns exec` would "
        "remount /sys and hide "
        "the cgroup tree) and in the host's cgroup.",
        "* **Workloads** (`reveal_lab/lab/_workloads.py`, `torch.set_num_threads(1)` unless a thread-count "
        "case says otherwise, synthetic data): CNN "
        "(3 conv + 2 fc, 3x32x32 images, 10 classes), Transformer encoder text classifier (2 layers, d=128, "
        "sequence 64, vocabulary 4000), MLP (784-1024-512-10); train (SGD) and infer; DDP: CNN over gloo "
        "(`MASTER_ADDR` = the first host's address, `GLOO_SOCKET_IFNAME`=the veth), one rank per host, "
        "every DDP host under the CPU quota in `meta_lab.csv`'s `cpu_quota`.",
        "* **Faults** (`reveal_lab/lab/_faults.py`, `_stress.py`; magnitudes and units in `labels.csv`): "
        "packet loss = `iptables -I INPUT/OUTPUT -m "
        "statistic --mode random --probability P -j DROP` inside one host's namespace during DDP; CPU "
        "contention = N busy loops in the host's cgroup (same core as the workload); memory pressure = M MiB "
        "of touched anonymous memory + files of M/8 MiB written and fsynced in a loop (v1: 128 MiB); storage "
        "read bursts = sequential `O_DIRECT` reads of a 512 MiB file for a share (duty cycle) of every "
        "200 ms; configuration differences for a whole run: a host's cgroup CPU quota (`config_cpu_quota`), "
        "one host's rank with N intra-op threads (`config_threads`), every host's network processing "
        "(RPS/XPS of both ends of its veth) steered to one core (`config_irq_imbalance`, labelled on the hosts whose "
        "processing left their own core; the others run spread: each host's on its own core). A stressor reports `ready` when the stress is on; the "
        "start time is taken then. `meta_lab.csv`'s `case` marks the case studies' sides "
        "(`ddp:before`, `<study>:after`).",
        "* **Schedule**: every run is recorded alone (no concurrent runs); single-host runs on labA. A run: "
        f"collectors start, {s0.get('calm_before_s', 3):g} s calm, workload processes start (import + "
        "set-up), the fault schedule is anchored at the workload's first step, episodes at the plan's "
        "offsets with calm before the first and after the last, "
        f"{s0.get('calm_after_s', 2):g} s calm after the workload ends, collectors stop (SIGINT). "
        f"Workload lengths: {_durations(meta)}.",
        "* **Not emulated**: NUMA placement and RDMA queue pairs (the paper's NCCL-QP case) need "
        "hardware this machine lacks (one NUMA node, no RDMA NIC); the loaders, cross-host deviation and "
        "`reveal-lab compare` take runs from such hosts unchanged.",
        "",
    ]


def _machine(m: dict, sessions: list[dict]) -> list[str]:
    """The machine, the software and what else ran, with the slots' load table."""
    return [
        "## Machine and software",
        "",
        f"* CPU: {m.get('cpu_model', '?')}, {machine_cores(m) or '?'} cores (a VM); memory "
        f"{int(m.get('mem_total_kb') or 0) / 1048576:.1f} GiB; kernel {m.get('kernel', '?')}; Python "
        f"{m.get('python', '?')}.",
        f"* Packages: {', '.join(f'{k} {v}' for k, v in m.get('versions', {}).items())}; "
        f"reveal-lab commit {m.get('git_commit', '?')[:12]}.",
        "* cgroups: v1 controllers (cpuset, cpu, cpuacct, memory, blkio) + the v2 `unified` tree (hybrid); "
        "perf: software events only (hardware counters are not exposed in this VM); turbostat not installed; "
        "no GPU (NVML/nvidia-smi absent). **No GPU run is included**: no GPU machine was lent to the "
        "recording session.",
        "* **What else was running**: " + _background(sessions),
        "",
        *_slot_table(sessions),
    ]


def _rerecording(sessions: list[dict]) -> list[str]:
    """How to record it again, and the recording sessions."""
    return [
        "## Re-recording",
        "",
        "As root on a Linux host with `ip`, `nsenter` and `iptables` (`scripts/bootstrap.sh` installs the "
        "environment and iptables):",
        "",
        "```bash",
        "sudo scripts/record_lab_dataset.sh v2 /var/tmp/reveal_lab/raw data/lab   # or: sudo make record-lab",
        "# which is, with the load gate on (exit status 75 when the machine stays busy):",
        "sudo .venv/bin/reveal-lab record --plan v2 --dry-run   # the slots, counts and time estimate",
        "sudo .venv/bin/reveal-lab record --plan v2 --raw /var/tmp/reveal_lab/raw --no-build --load-gate 0.5",
        "sudo .venv/bin/reveal-lab record --build-only --raw /var/tmp/reveal_lab/raw --out data/lab",
        "sudo .venv/bin/reveal-lab record --plan smoke --raw /tmp/raw --out /tmp/lab  # one 8 s run, ~30 s",
        "```",
        "",
        "Recording sessions: "
        + "; ".join(
            f"{s.get('started', '?')} to {s.get('finished', '?')} UTC "
            f"({len(s.get('slots', []))} slots, argv `{' '.join(s.get('argv', []))}`"
            + (f"; note: {s['note']}" if s.get("note") else "")
            + ")"
            for s in sessions
        )
        + ".",
    ]


def _session_notes(raw: Path, sessions: list[dict]) -> list[str]:
    """The page-cache settling, re-recorded slots, mixed sessions, warm-ups and runs left out."""
    lines: list[str] = []
    settled = [(s, s["settle"]) for s in sessions if s.get("settle")]
    if settled:
        lines += [
            "",
            "Page cache (`--settle`): before a session's first slot the recorder waited until `Cached` "
            "of `/proc/meminfo` moved by at most the allowed rate over the window: "
            + "; ".join(
                f"session of {s.get('started', '?')}: {r['drift_mb_s']:+.2f} MB/s over {r['settle_s']:g} s "
                f"(allowed {r['settle_mb_s']:g}), after {r['waited_s']:.0f} s"
                for s, r in settled
                if "drift_mb_s" in r
            )
            + ". Sessions before this check existed have no such reading.",
        ]
    moved = [
        (sl["slot"], sl["supersedes"]) for s in sessions for sl in s.get("slots", []) if sl.get("supersedes")
    ]
    if moved:
        lines += ["", "Slots recorded again (the earlier runs are kept in the raw folder's `superseded/`):"]
        lines += [f"* slot {n}: replaces {', '.join(f'`{x}`' for x in stems)}" for n, stems in moved]
    mixed = _mixed_sessions(sessions)
    if mixed:
        lines += [
            "",
            "Workloads whose runs come from more than one recording session (a run recorded in "
            "another session meets another machine state, e.g. another page-cache composition, "
            "and its calibrated thresholds are set by runs of both):",
        ]
        lines += [f"* `{w}`: {', '.join(f'{n} run(s) of {st}' for st, n in parts)}" for w, parts in mixed]
    warm = [(sl["slot"], sl["warmup"]) for s in sessions for sl in s.get("slots", []) if sl.get("warmup")]
    if warm:
        secs = sorted({float(s.get("warmup_s") or 0) for s in sessions if s.get("warmup_s")})
        bad = [(n, w["error"]) for n, w in warm if "error" in w]
        lines += [
            "",
            f"Warm-ups (`--warmup`): before each workload's first slot of a session, a discarded "
            f"fault-free run of {'/'.join(f'{x:g}' for x in secs)} s on the same hosts (kept in the raw "
            f"folder's `warmup/`, not in the dataset): {len(warm)} warm-up(s), {len(bad)} failed "
            "(the slot was recorded all the same)"
            + (": " + "; ".join(f"before slot {n}: {_gist(e)}" for n, e in bad) if bad else "")
            + ".",
        ]
    failed = sorted(p.name[: -len(".failed.json")] for p in raw.glob("*.failed.json"))
    for mp in raw.glob("*.run.json"):
        man = json.loads(mp.read_text())
        if any(h.get("collector_rc") not in (0, None) for h in man.get("hosts", {}).values()):
            failed.append(man["stem"])
    if failed:
        lines += [
            "",
            "Runs left out because a collector exited with an error during the run (re-recorded in a "
            "later slot under a new time stamp):",
        ]
        lines += [f"* `{f}`" for f in sorted(set(failed))]
    errors = [sl for s in sessions for sl in s.get("slots", []) if "error" in sl]
    if errors:
        lines += ["", f"{len(errors)} slot(s) failed while recording and are not in the dataset:"]
        lines += [f"* slot {e['slot']}: {e['error'][:300]}" for e in errors]
    return lines


def _mixed_sessions(sessions: list[dict]) -> list[tuple[str, list[tuple[str, int]]]]:
    """Workloads (a run stem less its time stamp) whose current runs come from several sessions.

    >>> s = [{"started": "a", "slots": [{"slot": 0, "runs": ["w_2026-01-01T00-00-00"]},
    ...                                 {"slot": 1, "runs": ["w_2026-01-01T00-02-00"]}]},
    ...      {"started": "b", "slots": [{"slot": 1, "runs": ["w_2026-01-02T00-00-00"]}]}]
    >>> _mixed_sessions(s)
    [('w', [('a', 1), ('b', 1)])]
    """
    current = {r for runs in recorded_slots(sessions).values() for r in runs}
    by: dict[str, Counter[str]] = defaultdict(Counter)
    for ses in sessions:
        for sl in ses.get("slots", []):
            for r in sl.get("runs") or []:
                if r in current:  # the stem less its time stamp (run_stem): the workload
                    by[r.rsplit("_", 1)[0]][str(ses.get("started", "?"))] += 1
    return [(w, sorted(v.items())) for w, v in sorted(by.items()) if len(v) > 1]


def _gist(error: str) -> str:
    r"""An error's first clause and its last line (a workload's stderr ends with the cause).

    >>> _gist("workload X failed (-6): noise\nmore noise\nterminate called\n")
    'workload X failed (-6) … terminate called'
    >>> _gist("plain")
    'plain'
    """
    head = error.split(":", 1)[0].strip()
    lines = [ln.strip() for ln in error.strip().splitlines() if ln.strip()]
    tail = lines[-1] if len(lines) > 1 else ""
    return f"{head} … {tail[:160]}" if tail and tail != head else head[:200]


def _hosts_text(hosts: list[dict]) -> str:
    """The lab's hosts as the recorder logged them (names, addresses, cores, link, steering)."""
    if not hosts:
        return "(not logged)"
    names = "/".join(f"`{h['name']}`" for h in hosts)
    link = (
        f"each joined by a veth to a bridge in the namespace `{hosts[0]['bridge_namespace']}`"
        if hosts[0].get("bridge_namespace")
        else ("joined by a veth pair" if len(hosts) == 2 else "with a veth to the outside")
    )
    cores = ", ".join(f"{h['name']}: {h['address']}, core {h['core']}" for h in hosts)
    steer = (
        "; each host's network processing (RPS/XPS) steered to its own core"
        if any(h.get("steering") for h in hosts)
        else ""
    )
    return (
        f"{len(hosts)} network namespaces {names}, {link} (addresses /24 created inside the namespaces; "
        "traffic only between them), each with its own cgroup whose cpuset pins every process of the host "
        f"(workload, fault stressors, its collector) to one core ({cores}){steer}. `/proc/net/*` is per "
        "namespace; `/proc/stat`, `/proc/meminfo`, `/proc/diskstats`, `/proc/softirqs` are global (one "
        "kernel), so every host's files carry them."
    )


def _durations(meta: pl.DataFrame) -> str:
    if not {"workload_start", "workload_end"} <= set(meta.columns):
        return "(not logged)"
    d = meta.select(
        (
            pl.col("workload_end").cast(pl.String).str.to_datetime(strict=False)
            - pl.col("workload_start").cast(pl.String).str.to_datetime(strict=False)
        ).dt.total_milliseconds()
        / 1000
    ).to_series().drop_nulls()
    return f"{d.min():.0f} to {d.max():.0f} s" if d.len() else "(not logged)"


def _background(sessions: list[dict]) -> str:
    """One sentence on the machine's load while recording (from the gate's per-slot readings)."""
    gates = {s.get("load_gate", "not used") for s in sessions}
    readings = [sl["gate_reading"] for s in sessions for sl in s.get("slots", []) if "gate_reading" in sl]
    if not readings:  # recorded before the gate existed
        return (
            "the machine was shared with other development work during the recording (tests, notebooks, "
            "benchmarks on both cores). Load averages before each run and the busiest other processes are in "
            "`recording.json`; the 1-minute load average ranged over "
            + _load_range(sessions)
            + ". Baseline runs therefore carry background noise too, as real shared clusters do."
        )
    other = sorted(r["other_load"] for r in readings)
    waited = sum(r.get("waited_s", 0) for r in readings)
    return (
        f"before every slot the recorder checked the 1-minute load average less the lab's own share "
        f"(load gate: {', '.join(str(g) for g in sorted(gates, key=str))}; `reveal_lab/lab/_gate.py`) and "
        f"waited while it was above the gate ({waited:.0f} s of waiting in all). The load not due to the lab "
        f"was {other[0]:.2f} to {other[-1]:.2f} (median {other[len(other) // 2]:.2f}) over "
        f"{len(readings)} slots; the table below gives each slot's reading and the busiest other processes."
    )


def _slot_table(sessions: list[dict]) -> list[str]:
    """Per slot: load average, the lab's share, the rest, the wait, the busiest other processes."""
    current = recorded_slots(sessions)
    rows = []
    for s in sessions:
        for sl in s.get("slots", []):
            r = sl.get("gate_reading")
            if r is None:
                continue
            top = ", ".join(f"{p['comm']} {p['cores']:.2f}" for p in r.get("top_other_processes", [])[:3])
            status = "refused" if "refused" in sl else ("failed" if "error" in sl else "recorded")
            if status == "recorded" and current.get(int(sl["slot"])) != sl.get("runs"):
                status = "superseded (recorded again later)"
            rows.append(
                f"| {sl['slot']} | {status} | {r['loadavg1']:.2f} | {r['own_load']:.2f} "
                f"| {r['other_load']:.2f} "
                f"| {r.get('waited_s', 0):.0f} | {top or '-'} |"
            )
    if not rows:
        return []
    return [
        "| slot | status | loadavg 1 min | lab's own | other | waited (s) "
        "| busiest other processes (cores) |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def _load_range(sessions: list[dict]) -> str:
    vals = [
        float(sl["loadavg_before"][0])
        for s in sessions
        for sl in s.get("slots", [])
        if "loadavg_before" in sl
    ]
    if not vals:
        return "(not logged)"
    return f"{min(vals):.1f} to {max(vals):.1f} (median {sorted(vals)[len(vals) // 2]:.1f}) on 2 cores"


def _version(module: str) -> str:
    """``module.__version__``, read from its installed metadata unless it is imported already
    (importing torch only for its version took 5 s of CPU)."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        return loaded.__version__
    from importlib.metadata import version

    return version(module)


def machine_provenance() -> dict:
    """What the recording ran on (:func:`reveal_lab.machine.machine_info`), the package
    versions and the commit."""
    import numpy
    import polars

    info: dict = machine_info()
    versions = {"numpy": numpy.__version__, "polars": polars.__version__}
    for mod in ("torch", "pyarrow"):
        with contextlib.suppress(ImportError):  # PackageNotFoundError is one
            versions[mod] = _version(mod)
    with contextlib.suppress(Exception):
        from importlib.metadata import version

        versions["reveal-lab"] = version("reveal-lab")
    info["versions"] = versions
    with contextlib.suppress(Exception):
        info["git_commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        ).stdout.strip()
    return info


def recorded_slots(sessions: Sequence[dict]) -> dict[int, list[str]]:
    """The run stems each slot number holds now: its latest recording that gave runs.

    >>> recorded_slots([{"slots": [{"slot": 0, "runs": ["a"]}, {"slot": 1, "error": "x"}]},
    ...                 {"slots": [{"slot": 0, "runs": ["b"]}]}])
    {0: ['b']}
    """
    out: dict[int, list[str]] = {}
    for s in sessions:
        for sl in s.get("slots", []):
            if sl.get("runs"):
                out[int(sl["slot"])] = list(sl["runs"])
    return out
