"""The recorder: run workloads on lab hosts under a collector each, inject faults, write the dataset.

One :class:`RunPlan` is one run of a workload on one host (or a two-host DDP run). The
recorder, for each *slot* (plans on disjoint hosts that run at the same time):

1. starts one collector per host inside the host (``reveal-lab collect --host labX``,
   in the host's namespace and cgroup, so it shares the host's core like a real agent);
2. waits ``calm_before_s``, starts the workload processes (DDP: rank 0 on the first host,
   ``MASTER_ADDR`` = its veth address);
3. starts and stops each planned fault at its offset, recording wall-clock ms;
4. waits for the workload, lets ``calm_after_s`` pass, stops the collectors (SIGINT);
5. reads every collector directory back with
   :func:`reveal_lab.io.read_collector_run` (``view="dataset"``), writes
   ``{train,infer}_separated/<public-grammar name>.parquet`` and returns the meta rows and
   ground-truth label rows.

:func:`record_plans` runs many slots on one set of hosts and writes ``meta_lab.csv``,
``labels.csv`` and ``recording.json`` (provenance) beside the Parquet files.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from reveal_lab.lab._faults import RUN_ONLY_FAULTS, Fault, make_fault, now_ms, prepare_read_file
from reveal_lab.lab._gate import GateRefused, LoadGate, lab_active_tasks, lab_cpu_seconds
from reveal_lab.lab._hosts import LabError, LabHost, lab_hosts
from reveal_lab.lab._labels import (
    EXTRA_META_COLUMNS,
    LABEL_COLUMNS,
    META_COLUMNS,
    file_name,
    ms_to_stamp,
    run_stem,
    split_dir,
    write_csv,
)
from reveal_lab.lab._workloads import workload_spec
from reveal_lab.telemetry import Run, RunMeta

__all__ = [
    "FaultPlan",
    "RunPlan",
    "RecordedRun",
    "record_slot",
    "record_plans",
    "workload_key",
    "warmup_plans",
    "recorded_slots",
    "label_hosts",
    "supersede_runs",
    "WARMUP_DIR",
    "collector_command",
    "machine_provenance",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FaultPlan:
    """A fault on ``host``: from ``at_s`` for ``for_s`` seconds after the workload starts.

    ``at_s=None`` means the whole run (a configuration difference such as a CPU quota).
    """

    fault_type: str
    host: str
    magnitude: float | None = None
    at_s: float | None = None
    for_s: float | None = None


@dataclass(frozen=True)
class RunPlan:
    """One run: ``model`` x ``phase`` on ``hosts`` (several hosts: DDP training over gloo).

    ``host_quota``: every host of the run limited to this share of a core for the run
    (so that DDP ranks on a 2-core machine leave headroom); ``None``: no limit.
    ``case``: the case study (before/after pair) the run belongs to, e.g. ``irq:after``.
    """

    model: str
    phase: str
    hosts: tuple[str, ...] = ("labA",)
    duration_s: float = 40.0
    faults: tuple[FaultPlan, ...] = ()
    repeat: int = 0
    seed: int = 0
    host_quota: float | None = None
    case: str = ""

    @property
    def world_size(self) -> int:
        return len(self.hosts)

    @property
    def model_name(self) -> str:
        """The ``{MODEL}`` of the file name: ``DDP`` prefixed for distributed runs."""
        return f"DDP{self.model}" if self.world_size > 1 else self.model

    @property
    def fault_name(self) -> str:
        if not self.faults:
            return "none"
        parts = []
        for f in self.faults:
            mag = "" if f.magnitude is None else f"@{f.magnitude:g}"
            if f.fault_type + mag not in parts:
                parts.append(f.fault_type + mag)
        return "+".join(parts)

    def validate(self) -> None:
        workload_spec(self.model)
        if self.phase not in ("train", "infer"):
            raise ValueError(f"phase must be train or infer, got {self.phase!r}")
        if self.world_size > 1 and self.phase != "train":
            raise ValueError("two-host runs are DDP training runs")
        if self.host_quota is not None and not 0 < self.host_quota <= 64:
            raise ValueError(f"host_quota must be a positive share of cores, got {self.host_quota}")
        for f in self.faults:
            if f.host not in self.hosts:
                raise ValueError(f"fault on {f.host} but the run uses {self.hosts}")
            if f.fault_type in RUN_ONLY_FAULTS and f.at_s is not None:
                raise ValueError(f"{f.fault_type} is a whole-run configuration: at_s and for_s must be None")
            if (f.at_s is None) != (f.for_s is None):
                raise ValueError("a fault needs both at_s and for_s, or neither (whole run)")
            if f.at_s is not None and f.at_s + f.for_s >= self.duration_s:
                raise ValueError(f"fault {f} does not end before the workload ({self.duration_s}s)")


@dataclass
class RecordedRun:
    plan: RunPlan
    stem: str
    files: dict[str, Path]  #: host -> parquet
    meta_rows: list[dict]
    label_rows: list[dict]
    workload: dict[str, dict] = field(default_factory=dict)  #: host -> workload summary


#: where :func:`record_plans` puts the discarded warm-up runs (inside the raw folder, out of
#: :func:`build_dataset`'s reach: it reads ``raw/*.run.json`` only)
WARMUP_DIR = "warmup"
#: where :func:`record_plans` moves the raw files of a slot's earlier recording when the slot
#: is recorded again (kept, out of :func:`build_dataset`'s reach)
SUPERSEDED_DIR = "superseded"
#: calm before and after a warm-up run (it is not analysed: it only has to run the workload)
WARMUP_CALM_S = 0.5


def workload_key(p: RunPlan) -> tuple:
    """What one warm-up run stands for: the workload on its hosts under the run's base quota."""
    return (p.model, p.phase, p.hosts, p.host_quota)


def warmup_plans(slot: Sequence[RunPlan], warmup_s: float, seen: set) -> list[RunPlan]:
    """Fault-free warm-up runs of ``warmup_s`` seconds for the plans of ``slot`` whose
    workload (:func:`workload_key`) is not in ``seen`` yet; ``seen`` is updated. None when
    ``warmup_s`` is 0.

    The first run of each workload in a recording session meets the machine in another
    state than its later repeats (on the v2 recording: twice the page cache, and 17 % of
    its fault-free windows flagged against 0.13 % for repeats 1-4), so a discarded run of
    the same workload on the same hosts goes first.

    >>> a = RunPlan("MLP", "train", duration_s=9, faults=(FaultPlan("cpu_contention", "labA", 1, 2, 2),))
    >>> seen = set()
    >>> [(w.model, w.faults, w.duration_s, w.case) for w in warmup_plans([a], 5.0, seen)]
    [('MLP', (), 5.0, 'warmup')]
    >>> warmup_plans([a], 5.0, seen), warmup_plans([RunPlan("CNN", "train")], 0.0, seen)
    ([], [])
    """
    if warmup_s <= 0:
        return []
    out = []
    for p in slot:
        k = workload_key(p)
        if k not in seen:
            seen.add(k)
            out.append(replace(p, duration_s=float(warmup_s), faults=(), case="warmup"))
    return out


def collector_command(
    host: LabHost,
    out_dir: Path,
    *,
    interval: str = "100ms",
    probes: str | None = None,
    python: str = sys.executable,
) -> list[str]:
    """``reveal-lab collect --host <host> --out <dir> ...`` for one host (run inside the host).

    Uses the ``reveal-lab`` script beside ``python`` (the same virtual environment), else
    ``python -c 'from reveal_lab.cli import main; ...'``.
    """
    args = ["collect", "--host", host.name, "--out", str(out_dir), "--interval", interval]
    if probes:
        args += ["--probes", probes]
    if host.cgroup_v2_root is not None:
        args += ["--cgroup-root", str(host.cgroup_v2_root)]
    script = Path(python).with_name("reveal-lab")
    if script.exists():
        return [str(script), *args]
    return [python, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main(sys.argv[1:]))", *args]


def _seconds(interval: str) -> float:
    from reveal_lab.config import parse_duration

    return parse_duration(interval)


def _stop(proc: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 30.0) -> int:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    return proc.returncode


def _wait_started(out_dir: Path, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if (out_dir / "meta.json").exists() or any(out_dir.glob("journal-*.bin")):
            return
        if proc.poll() is not None:
            logf = out_dir.with_name(out_dir.name + ".collector.log")
            err = logf.read_text(errors="replace") if logf.exists() else ""
            raise LabError(f"collector exited ({proc.returncode}) before writing {out_dir}: {err[-2000:]}")
        time.sleep(0.05)
    raise LabError(f"collector did not start writing {out_dir} within {timeout}s")


def _started_at(logs: Sequence[Path], stop_evt: threading.Event, timeout: float = 180.0) -> float:
    """When every rank has logged its ``start`` line (the latest of them), in epoch seconds."""
    end = time.time() + timeout
    starts: dict[Path, float] = {}
    while time.time() < end and not stop_evt.is_set():
        for lp in logs:
            if lp in starts or not lp.exists():
                continue
            for line in lp.read_text().splitlines():
                rec = json.loads(line)
                if rec.get("event") == "start":
                    starts[lp] = rec["time_ms"] / 1000
                    break
        if len(starts) == len(logs):
            return max(starts.values())
        stop_evt.wait(0.05)
    raise LabError(f"workload did not start within {timeout}s ({[str(p) for p in logs]})")


def _summary_line(stdout: bytes | None) -> dict | None:
    r"""The workload's summary (its last stdout line, a JSON object), or ``None``.

    >>> _summary_line(b'noise\n{"steps": 3}\n')
    {'steps': 3}
    >>> _summary_line(b"") is None and _summary_line(b"not json") is None
    True
    """
    lines = (stdout or b"").decode(errors="replace").strip().splitlines()
    try:
        out = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return out if isinstance(out, dict) else None


def _fault_schedule(
    faults: list[tuple[Fault, FaultPlan]],
    logs: Sequence[Path],
    stop_evt: threading.Event,
    errors: list[BaseException],
    anchor: dict,
) -> None:
    try:
        t0 = _started_at(logs, stop_evt)
        anchor["t0"] = t0
    except BaseException as exc:  # noqa: BLE001 - handed to the main thread
        errors.append(exc)
        return
    events = []
    for f, fp in faults:
        if fp.at_s is None:
            continue
        events.append((t0 + fp.at_s, 0, f))
        events.append((t0 + fp.at_s + fp.for_s, 1, f))
    events.sort(key=lambda e: (e[0], e[1]))
    try:
        for when, kind, f in events:
            delay = when - time.time()
            if delay > 0 and stop_evt.wait(delay):
                break
            if kind == 0:
                f.start()
                log.info("fault %s on %s started", f.fault_type, f.host.name)
            else:
                f.stop()
                log.info("fault %s on %s stopped", f.fault_type, f.host.name)
    except BaseException as exc:  # noqa: BLE001 - handed to the main thread
        errors.append(exc)


def _threads(p: RunPlan, host: str) -> int:
    """Intra-op threads of ``p``'s workload on ``host``: 1 unless a ``config_threads`` fault says."""
    for f in p.faults:
        if f.fault_type == "config_threads" and f.host == host:
            return int(f.magnitude)
    return 1


def record_slot(
    hosts: dict[str, LabHost],
    plans: Sequence[RunPlan],
    raw_root: Path,
    *,
    interval: str = "100ms",
    probes: str | None = None,
    calm_before_s: float = 3.0,
    calm_after_s: float = 2.0,
    master_port: int = 29500,
    read_file: str = "/var/tmp/reveal_lab/readburst.bin",
) -> list[RecordedRun]:
    """Record ``plans`` at the same time (their hosts must be disjoint) into ``raw_root``.

    Each run leaves ``<stem>.run.json`` (plan, ground-truth labels in epoch ms, workload
    summaries) and one collector directory per host ``<stem>_<host>/``.
    """
    used = [h for p in plans for h in p.hosts]
    if len(used) != len(set(used)):
        raise ValueError(f"plans of one slot share hosts: {used}")
    for p in plans:
        p.validate()
    start_ms = now_ms()
    stems = {}
    for p in plans:
        spec = workload_spec(p.model)
        stems[p] = run_stem(p.phase, p.model_name, spec.task, spec.dataset, start_ms)
    collectors: dict[tuple[RunPlan, str], tuple[subprocess.Popen, Path]] = {}
    workers: dict[tuple[RunPlan, str], tuple[subprocess.Popen, Path]] = {}
    faults: dict[RunPlan, list[tuple[Fault, FaultPlan]]] = {}
    stop_evt = threading.Event()
    errors: list[BaseException] = []
    threads: list[threading.Thread] = []
    anchors: dict[RunPlan, dict] = {}
    results: list[RecordedRun] = []
    quotas: dict[str, float | None] = {}
    try:
        # 1. collectors
        for p in plans:
            for hn in p.hosts:
                d = raw_root / f"{stems[p]}_{hn}"
                if (raw_root / f"{stems[p]}.run.json").exists():
                    raise LabError(f"{stems[p]} was already recorded in {raw_root}")
                if d.exists():
                    shutil.rmtree(d)
                d.parent.mkdir(parents=True, exist_ok=True)
                cmd = collector_command(hosts[hn], d, interval=interval, probes=probes)
                with open(
                    raw_root / f"{stems[p]}_{hn}.collector.log", "wb"
                ) as errf:  # never a pipe: it can fill
                    proc = hosts[hn].popen(cmd, stdout=subprocess.DEVNULL, stderr=errf)
                collectors[(p, hn)] = (proc, d)
        for proc, d in collectors.values():
            _wait_started(d, proc)
        # the run's host configuration (a base CPU quota) once the collectors run (their start-up
        # compiles and imports a lot: under a quota it could take longer than the start timeout)
        for p in plans:
            for hn in p.hosts:
                quotas[hn] = hosts[hn].cpu_quota()
                if p.host_quota is not None:
                    hosts[hn].set_cpu_quota(p.host_quota)
        # whole-run configuration faults go on before the calm period
        for p in plans:
            faults[p] = []
            for fp in p.faults:
                kw: dict = {}
                if fp.fault_type == "storage_read":
                    kw["path"] = read_file
                elif fp.fault_type == "config_irq_imbalance":
                    kw["peers"] = tuple(hosts[h] for h in p.hosts)
                faults[p].append((make_fault(fp.fault_type, hosts[fp.host], fp.magnitude, **kw), fp))
            for f, fp in faults[p]:
                if fp.at_s is None:
                    f.start()
        config = {
            p: {hn: {"cpu_quota": hosts[hn].cpu_quota(), "steering": hosts[hn].steering()} for hn in p.hosts}
            for p in plans
        }  # as the workload will see it
        time.sleep(calm_before_s)
        # 2. workloads
        t_work = time.time()
        for i, p in enumerate(plans):
            port = master_port + i
            for rank, hn in enumerate(p.hosts):
                logf = raw_root / f"{stems[p]}_{hn}.progress.jsonl"
                cmd = [
                    sys.executable,
                    "-m",
                    "reveal_lab.lab._workloads",
                    "--model",
                    p.model,
                    "--phase",
                    p.phase,
                    "--duration",
                    str(p.duration_s),
                    "--seed",
                    str(p.seed * 10 + p.repeat),
                    "--log",
                    str(logf),
                    "--threads",
                    str(_threads(p, hn)),
                ]
                if p.world_size > 1:
                    cmd += [
                        "--rank",
                        str(rank),
                        "--world-size",
                        str(p.world_size),
                        "--master-addr",
                        hosts[p.hosts[0]].address,
                        "--master-port",
                        str(port),
                    ]
                # gloo must use the veth (hostname resolution would pick 127.0.0.1)
                env = {**os.environ, "GLOO_SOCKET_IFNAME": hosts[hn].veth, "OMP_NUM_THREADS": "1"}
                with open(raw_root / f"{stems[p]}_{hn}.workload.log", "wb") as errf:
                    proc = hosts[hn].popen(cmd, stdout=subprocess.PIPE, stderr=errf, env=env)
                workers[(p, hn)] = (proc, logf)
            logs = [workers[(p, hn)][1] for hn in p.hosts]
            anchors[p] = {}
            th = threading.Thread(
                target=_fault_schedule, args=(faults[p], logs, stop_evt, errors, anchors[p]), daemon=True
            )
            th.start()
            threads.append(th)
        # 3. wait
        summaries: dict[tuple[RunPlan, str], dict] = {}
        for key, (proc, _) in workers.items():
            try:
                so, _ = proc.communicate(timeout=key[0].duration_s + 120)
            except subprocess.TimeoutExpired:
                _stop(proc, signal.SIGKILL)
                raise LabError(f"workload {key[0].model} on {key[1]} did not finish") from None
            summary = _summary_line(so)
            if proc.returncode != 0 and summary is None:
                raise LabError(
                    f"workload {key[0].model}/{key[0].phase} on {key[1]} failed "
                    f"({proc.returncode}): "
                    + (raw_root / f"{stems[key[0]]}_{key[1]}.workload.log").read_text(errors="replace")[
                        -2000:
                    ]
                )
            if summary is None:
                raise LabError(f"workload {key[0].model}/{key[0].phase} on {key[1]} printed no summary")
            if proc.returncode != 0:  # it finished its steps, then its teardown failed: keep the run
                log.warning(
                    "workload %s/%s on %s exited %d after its summary (teardown); the run is kept",
                    key[0].model,
                    key[0].phase,
                    key[1],
                    proc.returncode,
                )
                summary["exit_code"] = proc.returncode
            summaries[key] = summary
        for th in threads:
            th.join(timeout=30)
        if errors:
            raise LabError(f"fault injection failed: {errors[0]!r}") from errors[0]
        for p in plans:
            for f, fp in faults[p]:
                if fp.at_s is None:
                    f.stop()
        time.sleep(calm_after_s)
    finally:
        stop_evt.set()
        for fl in faults.values():
            for f, _ in fl:
                if f.started_ms is not None and f.stopped_ms is None:
                    with contextlib.suppress(Exception):
                        f.stop()
        for proc, _ in workers.values():
            _stop(proc, signal.SIGKILL, timeout=5)
        for proc, _ in collectors.values():
            _stop(proc, signal.SIGINT)
        for hn, q in quotas.items():  # the hosts as they were before the run
            with contextlib.suppress(LabError, OSError):
                hosts[hn].set_cpu_quota(q)
    # 4. the raw record: collector directories + run.json (plan, labels, workload summaries)
    for p in plans:
        stem = stems[p]
        labels = []
        for f, fp in faults[p]:
            lab = f.label()
            labels.append({**lab, "scope": "run" if fp.at_s is None else "episode"})
        manifest = {
            "stem": stem,
            "plan": asdict(p),
            "model_name": p.model_name,
            "fault": p.fault_name,
            "hosts": {
                hn: {
                    "collector_dir": collectors[(p, hn)][1].name,
                    "address": hosts[hn].address,
                    "core": hosts[hn].core,
                    "cpu_quota": config[p][hn]["cpu_quota"],
                    "steering": config[p][hn]["steering"],
                    "threads": _threads(p, hn),
                    "collector_rc": collectors[(p, hn)][0].returncode,
                    "workload": summaries.get((p, hn), {}),
                }
                for hn in p.hosts
            },
            "workload_launch_ms": int(t_work * 1000),
            "workload_start_ms": int(anchors[p].get("t0", float("nan")) * 1000)
            if "t0" in anchors[p]
            else None,
            "labels": labels,
        }
        bad = {hn: v["collector_rc"] for hn, v in manifest["hosts"].items() if v["collector_rc"] != 0}
        manifest["ok"] = not bad
        name = f"{stem}.run.json" if not bad else f"{stem}.failed.json"
        (raw_root / name).write_text(json.dumps(manifest, indent=1, default=str))
        if bad:
            logs = {
                hn: (raw_root / f"{stem}_{hn}.collector.log").read_text(errors="replace")[-1500:]
                for hn in bad
            }
            raise LabError(f"{stem}: collector failed on {bad}: {logs}")
        results.append(
            RecordedRun(
                p,
                stem,
                {hn: collectors[(p, hn)][1] for hn in p.hosts},
                [],
                [],
                {hn: summaries.get((p, hn), {}) for hn in p.hosts},
            )
        )
    return results


def label_hosts(manifest: dict, label: dict) -> list[str]:
    """The hosts a recorded fault label belongs to in ``labels.csv``.

    A fault is recorded on one host. A network-steering change (``config_irq_imbalance``)
    is recorded on the host whose core receives every host's network processing, but that
    host's own configuration is unchanged when its processing was on that core already; the
    hosts whose configuration differs from a fault-free run are those whose steering masks in
    the run's manifest (``hosts[h]["steering"]``, hexadecimal CPU masks) no longer name their
    own core. Those hosts get the label; when the manifest does not say (older manifests, no
    steering), the recorded host keeps it.

    >>> man = {"hosts": {"a": {"core": 0, "steering": {"rx": "1"}},
    ...                  "b": {"core": 1, "steering": {"rx": "1", "tx": "1"}}}}
    >>> label_hosts(man, {"host": "a", "fault_type": "config_irq_imbalance"})
    ['b']
    >>> label_hosts(man, {"host": "a", "fault_type": "packet_loss"})
    ['a']
    """
    if label["fault_type"] != "config_irq_imbalance":
        return [label["host"]]
    moved = []
    for hn, h in manifest.get("hosts", {}).items():
        masks, core = h.get("steering") or {}, h.get("core")
        if core in (None, "") or not masks:
            continue
        own = 1 << int(core)
        if any(int(str(v).replace(",", "") or "0", 16) != own for v in masks.values()):
            moved.append(hn)
    return moved or [label["host"]]


def build_dataset(
    raw_root: str | Path, out: str | Path, *, drop_all_nan: bool = True, runs: Sequence[str] | None = None
) -> tuple[list[dict], list[dict]]:
    """Turn recorded raw runs (``*.run.json`` + collector dirs) into the dataset layout.

    Writes ``{train,infer}_separated/*.parquet`` (canonical frames, ``view="dataset"``),
    ``meta_lab.csv`` and ``labels.csv`` into ``out``; returns ``(meta_rows, label_rows)``.
    Columns that are entirely missing in a run are dropped when ``drop_all_nan`` (the
    count is kept in the meta column ``n_dropped_nan_columns``).
    """
    import polars as pl

    from reveal_lab.io import read_collector_run

    raw_root, out = Path(raw_root), Path(out)
    manifests = sorted(raw_root.glob("*.run.json"))
    if runs is not None:
        manifests = [m for m in manifests if m.name[: -len(".run.json")] in set(runs)]
    if not manifests:
        raise LabError(f"no recorded runs (*.run.json) in {raw_root}")
    meta_rows: list[dict] = []
    label_rows: list[dict] = []
    skipped = []
    for mpath in manifests:
        man = json.loads(mpath.read_text())
        bad = {
            hn: h.get("collector_rc")
            for hn, h in man["hosts"].items()
            if h.get("collector_rc") not in (0, None)
        }
        if bad:  # a collector died during the run: its telemetry is incomplete
            log.warning("%s left out: collector exit status %s", man["stem"], bad)
            skipped.append(man["stem"])
            continue
        plan = man["plan"]
        spec = workload_spec(plan["model"])
        stem, phase, model_name = man["stem"], plan["phase"], man["model_name"]
        sub = out / split_dir(phase)
        sub.mkdir(parents=True, exist_ok=True)
        for hn, h in man["hosts"].items():
            run = read_collector_run(raw_root / h["collector_dir"], view="dataset")
            frame = run.frame
            dropped = 0
            if drop_all_nan:
                keep = [
                    c
                    for c in frame.columns
                    if c == "timestamp"
                    or frame.select(pl.col(c).fill_nan(None).null_count()).item() < frame.height
                ]
                dropped = frame.width - len(keep)
                frame = frame.select(keep)
            fn = file_name(stem, hn)
            summ = h.get("workload") or {}
            quota = h.get("cpu_quota")  # while the workload ran (older manifests: when it ended)
            for lab in man["labels"]:
                if lab["fault_type"] == "config_cpu_quota" and lab["host"] == hn:
                    quota = lab["magnitude"]
            rmeta = RunMeta(
                run_id=f"{stem}_{hn}",
                hosts=(hn,),
                workload=f"{model_name}__{spec.task}__{spec.dataset}",
                model=model_name,
                task=spec.task,
                dataset=spec.dataset,
                phase=phase,
                mode="nonllm",
                platform="lab",
                source_path=f"./{split_dir(phase)}/{fn}",
                start_time=run.meta.start_time,
                interval_ms=run.meta.interval_ms,
                extra={
                    "run_group": stem,
                    "fault": man["fault"],
                    "world_size": len(man["hosts"]),
                    "cpu_quota": quota,
                    "case": plan.get("case", ""),
                    "dropped_all_missing_columns": dropped,
                    "collector": {
                        k: run.meta.extra.get(k)
                        for k in ("probes_used", "probes_skipped")
                        if k in run.meta.extra
                    },
                },
            )
            _write_run(Run(rmeta, frame), sub / fn)
            meta_rows.append(
                {
                    "source_file": f"./{split_dir(phase)}/{fn}",
                    "n_rows": frame.height,
                    "n_cols": frame.width - 1,
                    "phase": phase,
                    "mode": "nonllm",
                    "model": model_name,
                    "task": spec.task,
                    "dataset": spec.dataset,
                    "model_task": f"{model_name}for{spec.task}",
                    "workload": f"{model_name}__{spec.task}__{spec.dataset}",
                    "run": stem,
                    "host": hn,
                    "core": h.get("core", ""),
                    "run_group": stem,
                    "world_size": len(man["hosts"]),
                    "fault": man["fault"],
                    "repeat": plan["repeat"],
                    "seed": plan["seed"] * 10 + plan["repeat"],
                    "start": str(frame["timestamp"][0]) if frame.height else "",
                    "end": str(frame["timestamp"][-1]) if frame.height else "",
                    "steps": summ.get("steps", ""),
                    "samples_per_s": round(summ["samples_per_s"], 2) if "samples_per_s" in summ else "",
                    **_workload_span(raw_root, stem, man),
                    "cpu_quota": "" if quota is None else quota,
                    "threads": h.get("threads", 1),
                    "case": plan.get("case", ""),
                    "n_dropped_nan_columns": dropped,
                }
            )
            for w in run.warnings[:3]:
                log.info("%s: reader warning: %s", fn, w)
        for lab, hn in ((lab, hn) for lab in man["labels"] for hn in label_hosts(man, lab)):
            label_rows.append(
                {
                    "run": stem,
                    "host": hn,
                    "fault_type": lab["fault_type"],
                    "start": ms_to_stamp(lab["start_ms"]),
                    "end": ms_to_stamp(lab["end_ms"]),
                    "expected_subsystem": lab["expected_subsystem"],
                    "magnitude": lab["magnitude"],
                    "unit": lab["unit"],
                    "scope": lab["scope"],
                    "source_file": f"./{split_dir(phase)}/{file_name(stem, hn)}",
                }
            )
    write_csv(out / "meta_lab.csv", meta_rows, [*META_COLUMNS, *EXTRA_META_COLUMNS])
    write_csv(out / "labels.csv", label_rows, LABEL_COLUMNS)
    if (raw_root / "recording.json").exists():
        shutil.copy2(raw_root / "recording.json", out / "recording.json")
    from reveal_lab.lab._provenance import provenance_readme

    (out / "README.md").write_text(provenance_readme(raw_root, out))
    return meta_rows, label_rows


def _workload_span(raw_root: Path, stem: str, man: dict) -> dict[str, str]:
    """When the workload computed: its first step (all ranks started) to the last progress line."""
    start = man.get("workload_start_ms")
    end = None
    for hn in man["hosts"]:
        logf = raw_root / f"{stem}_{hn}.progress.jsonl"
        if not logf.exists():
            continue
        for line in logf.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("event") == "start":
                start = max(start or 0, rec["time_ms"]) if man.get("workload_start_ms") is None else start
            elif "time_ms" in rec:
                end = max(end or 0, rec["time_ms"])
    return {
        "workload_start": ms_to_stamp(start) if start else "",
        "workload_end": ms_to_stamp(end) if end else "",
    }


def _write_run(run: Run, path: Path) -> None:
    """A canonical Parquet run (frame + :class:`RunMeta` under the loader's metadata key), kept small.

    zstd level 10, no column statistics, no dictionary pages and no serialized Arrow schema
    (Parquet's own logical types keep ``timestamp`` as ``Datetime("ms")``): about half the
    size of the defaults for these ~600-column frames.
    """
    import pyarrow.parquet as pq

    from reveal_lab.io import PARQUET_META_KEY
    from reveal_lab.telemetry import validate_frame

    validate_frame(run.frame, source=str(path))
    table = run.frame.to_arrow()
    with pq.ParquetWriter(
        path,
        table.schema,
        compression="zstd",
        compression_level=10,
        write_statistics=False,
        store_schema=False,
        use_dictionary=False,
    ) as w:
        w.write_table(table)
        w.add_key_value_metadata({PARQUET_META_KEY: json.dumps(run.meta.to_dict(), default=str)})


def _warm_up(hosts: dict[str, LabHost], plans: list[RunPlan], raw: Path, **kw) -> dict | None:
    """Record the warm-up ``plans`` (one slot) into ``raw``; what ran, or why it failed."""
    if not plans:
        return None
    t = time.time()
    try:
        recs = _record_slot_retry(hosts, plans, raw, **kw)
    except LabError as exc:
        log.warning("warm-up %s failed (the slot is recorded all the same): %s", plans[0].model_name, exc)
        return {"error": str(exc), "wall_s": round(time.time() - t, 1)}
    log.info("warm-up done in %.0fs: %s", time.time() - t, ", ".join(r.stem for r in recs))
    return {"runs": [r.stem for r in recs], "wall_s": round(time.time() - t, 1)}


def _record_slot_retry(*args, retries: int = 1, **kw) -> list[RecordedRun]:
    """:func:`record_slot`, once more (a new time stamp, so new names) when a collector failed."""
    for attempt in range(retries + 1):
        try:
            return record_slot(*args, **kw)
        except LabError as exc:
            if attempt == retries or "collector failed" not in str(exc):
                raise
            log.warning("retrying the slot: %s", str(exc)[:500])
            time.sleep(1.5)  # the next attempt gets another start second
    raise AssertionError("unreachable")


def machine_provenance() -> dict:
    """What the recording ran on: kernel, CPU, cores, memory, package versions, load."""
    import numpy
    import polars

    info: dict = {
        "kernel": " ".join(os.uname()[2:4]),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError):
        info["mem_total_kb"] = int(open("/proc/meminfo").readline().split()[1])
    with contextlib.suppress(OSError):
        info["loadavg"] = open("/proc/loadavg").read().strip()
    versions = {"numpy": numpy.__version__, "polars": polars.__version__}
    for mod in ("torch", "pyarrow"):
        with contextlib.suppress(ImportError):
            versions[mod] = __import__(mod).__version__
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


def supersede_runs(raw_root: str | Path, stems: Sequence[str]) -> list[str]:
    """Move every raw file of ``stems`` (``<stem>.run.json``, ``<stem>_<host>`` collector
    folders and logs) into ``raw_root/superseded/``: kept, no longer built into the dataset.
    Returns the names moved."""
    raw_root = Path(raw_root)
    dest = raw_root / SUPERSEDED_DIR
    moved = []
    for stem in stems:
        for f in sorted(raw_root.glob(f"{stem}[._]*")):
            dest.mkdir(exist_ok=True)
            shutil.move(str(f), str(dest / f.name))
            moved.append(f.name)
    return moved


def _count_tasks(gate: LoadGate, stop: threading.Event, every_s: float = 1.0) -> None:
    """Sample the lab's runnable + uninterruptible tasks for the gate until ``stop`` is set."""
    while not stop.wait(every_s):
        with contextlib.suppress(Exception):  # a sampling hiccup must not end the recording
            gate.sample_tasks()


def record_plans(
    slots: Sequence[Sequence[RunPlan]],
    raw_dir: str | Path,
    *,
    host_names: Sequence[str] = ("labA", "labB"),
    subnet: str = "10.77.0",
    interval: str = "100ms",
    probes: str | None = None,
    read_file: str = "/var/tmp/reveal_lab/readburst.bin",
    read_file_mib: int = 512,
    calm_before_s: float = 3.0,
    calm_after_s: float = 2.0,
    on_slot: Callable[[int, list[RecordedRun]], None] | None = None,
    gate: LoadGate | None = None,
    numbers: Sequence[int] | None = None,
    warmup_s: float = 0.0,
    note: str | None = None,
) -> dict:
    """Record every slot on one set of lab hosts into ``raw_dir`` (see :func:`build_dataset`).

    Before each slot ``gate`` (:class:`~reveal_lab.lab._gate.LoadGate`) measures the
    1-minute load average less the lab's own share and waits while it is above its
    threshold; it raises :class:`~reveal_lab.lab._gate.GateRefused` (after logging the
    reading) when the machine stays busy. Default: measure and log, never wait. Each
    slot's reading (load, the lab's share, the busiest other processes) goes into the
    slot's entry of ``recording.json``. ``numbers``: the slots' numbers in the full plan
    (for the log; default 0, 1, ...). ``warmup_s`` > 0: before the first slot of each
    workload (:func:`workload_key`) in this session, a fault-free run of that many seconds
    on the same hosts (:func:`warmup_plans`), kept in ``raw_dir/warmup/`` and left out of
    the dataset; the slot's entry says which (``warmup``). A warm-up that fails is logged
    and the slot is recorded all the same. With ``gate.settle_s`` > 0, the session's first
    slot also waits until the page cache has stopped moving (:meth:`LoadGate.settle`); the
    reading is the session's ``settle``. A slot recorded before (an earlier session of the
    same ``raw_dir``) is replaced once it records again: the earlier runs' raw files move to
    ``raw_dir/superseded/`` (:func:`supersede_runs`) and the slot's entry names them
    (``supersedes``). ``note``: why this session was recorded (kept in its provenance and
    the dataset README).

    Appends this session's provenance to ``raw_dir/recording.json`` and returns it.
    """
    gate = gate if gate is not None else LoadGate(gate=None)
    numbers = list(range(len(slots))) if numbers is None else list(numbers)
    if len(numbers) != len(slots):
        raise ValueError(f"{len(numbers)} slot numbers for {len(slots)} slots")
    raw_root = Path(raw_dir)
    raw_root.mkdir(parents=True, exist_ok=True)
    if any(fp.fault_type == "storage_read" for s in slots for p in s for fp in p.faults):
        prepare_read_file(read_file, read_file_mib)
    slot_log: list[dict] = []
    prov = {
        "started": ms_to_stamp(now_ms()),
        "machine": machine_provenance(),
        "interval": interval,
        "probes": probes or "all",
        "calm_before_s": calm_before_s,
        "calm_after_s": calm_after_s,
        "warmup_s": warmup_s,
        "load_gate": gate.gate,
        "gate_max_wait_s": gate.max_wait_s,
        "settle_s": gate.settle_s,
        "settle_mb_s": gate.settle_mb_s if gate.settle_s > 0 else None,
        "argv": sys.argv,
        **({"note": note} if note else {}),
        "slots": slot_log,
    }
    rec_path = raw_root / "recording.json"
    sessions = json.loads(rec_path.read_text())["sessions"] if rec_path.exists() else []

    def save() -> None:
        rec_path.write_text(json.dumps({"sessions": [*sessions, prov]}, indent=1, default=str))

    with lab_hosts(host_names, subnet=subnet) as hs:
        hosts = {h.name: h for h in hs}
        prov["hosts"] = [
            {
                "name": h.name,
                "address": h.address,
                "core": h.core,
                "cgroups": {k: str(v) for k, v in h.cgroups.items()},
                "bridge_namespace": h.bridge_ns,
                "steering": h.steering(),
            }
            for h in hs
        ]
        if gate.own_cpu is lab_cpu_seconds:  # the lab = these hosts' cgroups + the recorder
            gate.own_cpu = functools.partial(lab_cpu_seconds, [h.cgroup_path for h in hs])
        if gate.own_tasks is None:
            gate.own_tasks = functools.partial(lab_active_tasks, [h.cgroup_path for h in hs])
        gate.note()
        warmed: set = set()
        for k, (i, slot) in enumerate(zip(numbers, slots, strict=True)):
            try:
                if k == 0 and gate.settle_s > 0:
                    prov["settle"] = gate.settle()
                    log.info("page cache settled: %s", prov["settle"])
                reading = gate.wait()
            except GateRefused as exc:
                log.error("slot %d not recorded: %s", i, exc)
                slot_log.append({"slot": i, "refused": str(exc), "gate_reading": exc.reading})
                prov["finished"] = ms_to_stamp(now_ms())
                save()
                raise
            collect_kw = {"interval": interval, "probes": probes, "read_file": read_file}
            warm_log = _warm_up(
                hosts,
                warmup_plans(slot, warmup_s, warmed),
                raw_root / WARMUP_DIR,
                calm_before_s=WARMUP_CALM_S,
                calm_after_s=WARMUP_CALM_S,
                master_port=29505 + 10 * (k % 50),
                **collect_kw,
            )
            load_before = open("/proc/loadavg").read().split()[:3]
            t = time.time()
            counting = threading.Event()
            counter = threading.Thread(target=_count_tasks, args=(gate, counting), daemon=True)
            counter.start()
            try:
                recs = _record_slot_retry(
                    hosts,
                    slot,
                    raw_root,
                    calm_before_s=calm_before_s,
                    calm_after_s=calm_after_s,
                    master_port=29500 + 10 * (k % 50),
                    **collect_kw,
                )
            except LabError as exc:
                counting.set()
                counter.join(timeout=10)
                gate.note()
                log.error("slot %d failed: %s", i, exc)
                slot_log.append(
                    {
                        "slot": i,
                        "error": str(exc),
                        "gate_reading": reading,
                        "plans": [asdict(p) for p in slot],
                        **({"warmup": warm_log} if warm_log else {}),
                    }
                )
                save()
                continue
            finally:
                counting.set()
                counter.join(timeout=10)
            gate.note()
            earlier = [st for st in recorded_slots(sessions).get(i, []) if st not in {r.stem for r in recs}]
            if earlier:
                log.info("slot %d recorded again: %s moved to %s/", i, earlier, SUPERSEDED_DIR)
                supersede_runs(raw_root, earlier)
            slot_log.append(
                {
                    "slot": i,
                    "runs": [r.stem for r in recs],
                    **({"supersedes": earlier} if earlier else {}),
                    "wall_s": round(time.time() - t, 1),
                    "loadavg_before": load_before,
                    "loadavg_after": open("/proc/loadavg").read().split()[:3],
                    "gate_reading": reading,
                    "top_processes_before": [
                        f"{p['cores'] * 100:.0f}% {p['comm']} ({p['pid']})"
                        for p in reading["top_other_processes"]
                    ],
                    **({"warmup": warm_log} if warm_log else {}),
                }
            )
            log.info(
                "slot %d (%d/%d) done in %.0fs: %s",
                i,
                k + 1,
                len(slots),
                time.time() - t,
                ", ".join(f"{r.stem} [{r.plan.fault_name}]" for r in recs),
            )
            prov["finished"] = ms_to_stamp(now_ms())
            save()
            if on_slot:
                on_slot(i, recs)
    return prov
