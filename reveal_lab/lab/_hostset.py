"""A labelled set of host recordings: the collector on this machine, no workload span, while
0-2 intermittent jobs run at known times.

Each recording is ``reveal-lab collect`` (100 ms) in the machine's own namespace for
``duration_s`` seconds. A job is one of :data:`HOST_JOBS`, a stressor of
:mod:`reveal_lab.lab._stress` started ``start_s`` seconds after the collector's first
sample and stopped ``length_s`` seconds after it reported ``ready``; its label runs from
``ready`` to the moment the stressor had exited. The network job sends over a veth pair
between the machine and a namespace of its own (:func:`net_pair`), so nothing leaves the
machine and the machine's ``/proc/net`` sees the traffic.

:func:`host_set_plan` draws the plan (seeded): a third of the recordings without a job,
the others with one or two, every kind in turn, lengths in ``[min_len_s, max_len_s]``,
calm at the start (``lead_s``), between jobs (``gap_s``) and at the end (``tail_s``).
:func:`record_host_set` waits for a quiet machine before each recording
(:class:`~reveal_lab.lab.LoadGate`), records, and :func:`build_host_set` writes the lab
layout: ``recordings/*.parquet`` (the public grammar, prefix ``host``), ``meta_lab.csv``
without ``workload_start``/``workload_end`` (a host recording has no workload span, so
detection scores all of it), ``labels.csv`` and a ``README.md`` with the load average
before and after every recording.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from reveal_lab.io import EXTRA_META_COLUMNS, LABEL_COLUMNS, META_COLUMNS, ms_to_stamp
from reveal_lab.lab._faults import STRESS_SCRIPT, now_ms, prepare_read_file
from reveal_lab.lab._gate import LoadGate
from reveal_lab.lab._hosts import LabError, require_root
from reveal_lab.lab._labels import write_csv

__all__ = [
    "HOST_JOBS",
    "HostJob",
    "HostRecordingPlan",
    "host_set_plan",
    "net_pair",
    "record_host_recording",
    "record_host_set",
    "build_host_set",
    "HOST_SET_MAX_BYTES",
]

log = logging.getLogger(__name__)

#: the largest host set :func:`build_host_set` writes (bytes of Parquet)
HOST_SET_MAX_BYTES = 10 * 1024 * 1024
#: the namespace and addresses of the network job's pair (machine end, namespace end)
NET_NS, NET_ADDRS, NET_PORT = "rlhsink", ("10.78.0.1", "10.78.0.2"), 5201


@dataclass(frozen=True)
class JobKind:
    """One kind of job: its stressor arguments, expected subsystem, magnitude and unit."""

    args: tuple[str, ...]
    subsystem: str
    magnitude: float
    unit: str
    procs: int = 1


#: job kinds (``fault_type`` in ``labels.csv``): CPU-bound on 1 and 2 cores, memory-hungry
#: (allocate, touch, free 1 GiB in a loop), disk read (``O_DIRECT``), disk write (64 MiB
#: files, ``fsync``), network send over the veth pair at 50 MiB/s
HOST_JOBS: dict[str, JobKind] = {
    "cpu_1core": JobKind(("cpu", "--procs", "1"), "cpu", 1.0, "cores"),
    "cpu_2cores": JobKind(("cpu", "--procs", "1"), "cpu", 2.0, "cores", procs=2),
    "memory_hog": JobKind(("hog", "--mib", "1024"), "memory", 1024.0, "MiB"),
    "disk_read": JobKind(("read", "--path", "{read_file}"), "storage", 1.0, "duty cycle"),
    "disk_write": JobKind(("write", "--mib", "64", "--dir", "{work_dir}"), "storage", 64.0, "MiB per fsync"),
    "net_send": JobKind(
        ("send", "--to", "{net_addr}", "--port", str(NET_PORT), "--mib-s", "50"), "network", 50.0, "MiB/s"
    ),
}


@dataclass(frozen=True)
class HostJob:
    kind: str
    start_s: float
    length_s: float


@dataclass(frozen=True)
class HostRecordingPlan:
    index: int
    duration_s: float
    jobs: tuple[HostJob, ...] = ()

    @property
    def fault(self) -> str:
        """``meta_lab.csv``'s ``fault``: ``none`` or the job kinds joined by ``+``."""
        return "+".join(j.kind for j in self.jobs) or "none"


def host_set_plan(
    n: int,
    *,
    duration_s: float = 90.0,
    min_len_s: float = 10.0,
    max_len_s: float = 30.0,
    lead_s: float = 15.0,
    gap_s: float = 10.0,
    tail_s: float = 5.0,
    seed: int = 0,
    kinds: Sequence[str] = tuple(HOST_JOBS),
) -> list[HostRecordingPlan]:
    """``n`` recordings: a third (rounded) without a job, the others with one or two jobs
    (alternating), kinds taken in turn from ``kinds``, lengths drawn uniformly from
    ``[min_len_s, max_len_s]`` and start times uniformly where they fit.

    >>> plans = host_set_plan(6, seed=1)
    >>> [len(p.jobs) for p in plans].count(0), all(p.duration_s == 90 for p in plans)
    (2, True)
    >>> all(j.start_s >= 15 and j.start_s + j.length_s <= 85 for p in plans for j in p.jobs)
    True
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not 0 < min_len_s <= max_len_s:
        raise ValueError(f"job lengths: need 0 < min_len_s <= max_len_s, got {min_len_s}, {max_len_s}")
    unknown = [k for k in kinds if k not in HOST_JOBS]
    if unknown or not kinds:
        raise ValueError(f"job kinds {unknown or '(none)'}: expected some of {sorted(HOST_JOBS)}")
    room = duration_s - lead_s - tail_s
    if 2 * max_len_s + gap_s > room and n - round(n / 3) > 1:
        raise ValueError(
            f"two jobs of up to {max_len_s:g} s with {gap_s:g} s between them do not fit in "
            f"{duration_s:g} s less {lead_s:g} s lead and {tail_s:g} s tail"
        )
    rng = np.random.default_rng(seed)
    n_none = round(n / 3)
    slots = [0] * n_none + [1 + i % 2 for i in range(n - n_none)]
    order = rng.permutation(n)
    k = 0
    plans = []
    for idx, pos in enumerate(order):
        n_jobs = slots[pos]
        lengths = [float(np.round(rng.uniform(min_len_s, max_len_s), 1)) for _ in range(n_jobs)]
        free = room - sum(lengths) - gap_s * max(n_jobs - 1, 0)
        cuts = np.sort(rng.uniform(0, max(free, 0.0), size=n_jobs))
        jobs, t = [], lead_s
        for j, length in enumerate(lengths):
            start = t + (cuts[j] - (cuts[j - 1] if j else 0.0))
            jobs.append(HostJob(kinds[k % len(kinds)], float(np.round(start, 1)), length))
            k += 1
            t = start + length + gap_s
        plans.append(HostRecordingPlan(idx, float(duration_s), tuple(jobs)))
    return plans


@contextlib.contextmanager
def net_pair(
    ns: str = NET_NS, addrs: tuple[str, str] = NET_ADDRS, python: str = sys.executable
) -> Iterator[subprocess.Popen]:
    """A veth pair ``<ns>0``/``<ns>1`` between the machine (``addrs[0]``, default
    ``10.78.0.1``) and the namespace ``ns`` (``addrs[1]``) with a ``sink`` stressor listening
    there; torn down on exit."""
    require_root()
    if len(ns) > 13:
        raise ValueError(f"namespace name {ns!r}: at most 13 characters (its veth names add one)")
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    cmds = [
        ["ip", "netns", "add", ns],
        ["ip", "link", "add", f"{ns}0", "type", "veth", "peer", "name", f"{ns}1"],
        ["ip", "link", "set", f"{ns}1", "netns", ns],
        ["ip", "addr", "add", f"{addrs[0]}/30", "dev", f"{ns}0"],
        ["ip", "link", "set", f"{ns}0", "up"],
        ["ip", "-n", ns, "addr", "add", f"{addrs[1]}/30", "dev", f"{ns}1"],
        ["ip", "-n", ns, "link", "set", f"{ns}1", "up"],
        ["ip", "-n", ns, "link", "set", "lo", "up"],
    ]
    sink = None
    try:
        for c in cmds:
            r = subprocess.run(c, capture_output=True, text=True)
            if r.returncode:
                raise LabError(f"{' '.join(c)}: {r.stderr.strip()}")
        sink = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{ns}", python, STRESS_SCRIPT, "sink", "--port", str(NET_PORT)],
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        if sink.stdout.readline().strip() != b"ready":
            raise LabError("the network sink did not start")
        yield sink
    finally:
        if sink is not None:
            _stop_group(sink)
        subprocess.run(["ip", "link", "del", f"{ns}0"], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _stop_group(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    for fh in (proc.stdout, proc.stderr):
        if fh:
            fh.close()


def _start_job(kind: JobKind, fmt: dict[str, str], python: str) -> list[subprocess.Popen]:
    procs = []
    for _ in range(kind.procs):
        args = [a.format(**fmt) for a in kind.args]
        p = subprocess.Popen(
            [python, STRESS_SCRIPT, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        procs.append(p)
    for p in procs:
        if p.stdout.readline().strip() != b"ready":
            err = p.stderr.read().decode(errors="replace") if p.poll() is not None else ""
            for q in procs:
                _stop_group(q)
            raise LabError(f"job {' '.join(kind.args)} did not start: {err.strip()[-500:]}")
    return procs


def _collector_cmd(
    out_dir: Path, duration_s: float, interval: str, host: str, python: str, probes: str | None = None
) -> list[str]:
    args = ["collect", "--host", host, "--out", str(out_dir), "--interval", interval, "--duration", f"{duration_s:g}s"]
    if probes:
        args += ["--probes", probes]
    script = Path(python).with_name("reveal-lab")
    if script.exists():
        return [str(script), *args]
    return [python, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main(sys.argv[1:]))", *args]


def _first_sample_ms(out_dir: Path, proc: subprocess.Popen, timeout: float = 60.0) -> int:
    """When the collector has started writing (its ``meta.json`` or first journal chunk)."""
    end = time.time() + timeout
    while time.time() < end:
        if (out_dir / "meta.json").exists() or any(out_dir.glob("journal-*.bin")):
            return now_ms()
        if proc.poll() is not None:
            raise LabError(f"collector exited ({proc.returncode}) before writing {out_dir}")
        time.sleep(0.05)
    raise LabError(f"collector did not start writing {out_dir} within {timeout}s")


def record_host_recording(
    plan: HostRecordingPlan,
    raw: str | Path,
    *,
    host: str = "vm",
    interval: str = "100ms",
    work_dir: str | Path = "/var/tmp/reveal_lab",
    net_addr: str = NET_ADDRS[1],
    probes: str | None = None,
    python: str = sys.executable,
) -> dict:
    """Record one plan into ``raw`` (a collector folder and a ``<stem>.run.json`` manifest
    with the job labels in epoch ms); the manifest. ``net_addr``: where the network job
    sends (a sink of :func:`net_pair`); ``probes``: the collector's ``--probes`` (default all)."""
    raw = Path(raw)
    raw.mkdir(parents=True, exist_ok=True)
    start_ms = now_ms()
    stem = "host_JobsforHost_vm_" + time.strftime("%Y-%m-%dT%H-%M-%S", time.gmtime(start_ms / 1000))
    out_dir = raw / f"{stem}_{host}"
    if out_dir.exists():
        raise LabError(f"{out_dir} exists already: record into an empty --raw folder")
    fmt = {"read_file": str(Path(work_dir) / "readburst.bin"), "work_dir": str(work_dir), "net_addr": net_addr}
    if any(j.kind == "disk_read" for j in plan.jobs):
        prepare_read_file(fmt["read_file"])
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    with open(raw / f"{stem}.collector.log", "wb") as logf:
        coll = subprocess.Popen(
            _collector_cmd(out_dir, plan.duration_s, interval, host, python, probes),
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        labels = []
        try:
            t0 = _first_sample_ms(out_dir, coll) / 1000
            for job in plan.jobs:
                time.sleep(max(0.0, t0 + job.start_s - time.time()))
                procs = _start_job(HOST_JOBS[job.kind], fmt, python)
                a = now_ms()
                time.sleep(job.length_s)
                for p in procs:
                    _stop_group(p)
                labels.append({"kind": job.kind, "start_ms": a, "end_ms": now_ms()})
            rc = coll.wait(timeout=plan.duration_s + 120)
        except BaseException:
            _stop_group(coll, signal.SIGINT)
            raise
    man = {
        "stem": stem,
        "host": host,
        "collector_dir": out_dir.name,
        "collector_rc": rc,
        "plan": asdict(plan),
        "fault": plan.fault,
        "labels": labels,
        "loadavg_before": load_before,
        "loadavg_after": Path("/proc/loadavg").read_text().split()[:3],
    }
    (raw / f"{stem}.run.json").write_text(json.dumps(man, indent=1))
    return man


@dataclass
class HostSetLog:
    """What :func:`record_host_set` did, written to ``<raw>/recording.json``."""

    argv: list[str]
    gate: float | None
    readings: list[dict] = field(default_factory=list)


def record_host_set(
    plans: Sequence[HostRecordingPlan],
    raw: str | Path,
    *,
    load_gate: float | None = 0.5,
    gate_wait_s: float = 600.0,
    host: str = "vm",
    interval: str = "100ms",
    net_ns: str = NET_NS,
    net_addrs: tuple[str, str] = NET_ADDRS,
    probes: str | None = None,
    python: str = sys.executable,
    gate: LoadGate | None = None,
) -> list[dict]:
    """Record every plan (:func:`record_host_recording`) into ``raw``, each after the load
    gate has passed (the 1-minute load average less this process's and its jobs' own share
    at most ``load_gate``; :class:`~reveal_lab.lab.LoadGate`); the manifests. The gate's
    readings go into ``<raw>/recording.json``. The network job sends over
    :func:`net_pair` (``net_ns``, ``net_addrs``), set up once for all recordings. ``gate``:
    a :class:`~reveal_lab.lab.LoadGate` to use instead of one of ``load_gate`` and ``gate_wait_s``."""
    require_root(("ip", "nsenter"))
    raw = Path(raw)
    raw.mkdir(parents=True, exist_ok=True)
    gate = gate if gate is not None else LoadGate(gate=load_gate, max_wait_s=gate_wait_s)
    book = HostSetLog(list(sys.argv), load_gate)
    mans = []
    needs_net = any(j.kind == "net_send" for p in plans for j in p.jobs)
    with net_pair(net_ns, net_addrs, python) if needs_net else contextlib.nullcontext():
        for plan in plans:
            reading = gate.wait()
            gate.note()
            man = record_host_recording(
                plan, raw, host=host, interval=interval, net_addr=net_addrs[1], probes=probes, python=python
            )
            gate.note()
            reading["recording"] = man["stem"]
            book.readings.append(reading)
            mans.append(man)
            log.info("%s: %s, collector exit %s", man["stem"], man["fault"], man["collector_rc"])
            (raw / "recording.json").write_text(json.dumps(asdict(book), indent=1, default=str))
    return mans


def build_host_set(raw: str | Path, out: str | Path, *, command: str = "") -> tuple[list[dict], list[dict]]:
    """The lab layout of the recordings in ``raw`` (see the module doc) into ``out``;
    ``(meta_rows, label_rows)``. Raises :class:`~reveal_lab.lab.LabError` when the Parquet
    files would exceed :data:`HOST_SET_MAX_BYTES` or a collector failed."""
    from reveal_lab.lab._provenance import machine_provenance

    raw, out = Path(raw), Path(out)
    manifests = sorted(raw.glob("*.run.json"))
    if not manifests:
        raise LabError(f"no recordings (*.run.json) in {raw}")
    sub = out / "recordings"
    sub.mkdir(parents=True, exist_ok=True)
    meta_rows, label_rows, lines = [], [], []
    for mpath in manifests:
        meta_row, labels, line = _host_recording(raw, mpath, sub)
        meta_rows.append(meta_row)
        label_rows += labels
        lines.append(line)
    size = sum(p.stat().st_size for p in sub.glob("*.parquet"))
    if size > HOST_SET_MAX_BYTES:
        raise LabError(f"{sub}: {size / 2**20:.1f} MiB of Parquet, more than {HOST_SET_MAX_BYTES / 2**20:.0f} MiB")
    write_csv(out / "meta_lab.csv", meta_rows, [*META_COLUMNS, *EXTRA_META_COLUMNS])
    write_csv(out / "labels.csv", label_rows, LABEL_COLUMNS)
    if (raw / "recording.json").exists():
        shutil.copy2(raw / "recording.json", out / "recording.json")
    mach = machine_provenance()
    n_none = sum(r["fault"] == "none" for r in meta_rows)
    readme = [
        "# reveal-lab host recordings: intermittent jobs on this machine, no workload span",
        "",
        "Written by `scripts/record_host_set.py` (`reveal_lab.lab.build_host_set`); do not edit by hand.",
        "",
        f"* {len(meta_rows)} recordings by `reveal-lab collect` (100 ms) of the whole machine, "
        f"{n_none} without a job; {len(label_rows)} labelled jobs in `labels.csv` (lab format, "
        "`scope=episode`, start = the job reported ready, end = the job had exited).",
        f"* `recordings/*.parquet`: {size / 2**20:.1f} MiB (`view=\"dataset\"` frames); "
        "`meta_lab.csv` has no `workload_start`/`workload_end`: detection scores the whole recording.",
        "* Jobs (`reveal_lab/lab/_stress.py`): " + "; ".join(
            f"`{k}` ({v.subsystem}: `{' '.join(v.args)}`" + (f" x{v.procs}" if v.procs > 1 else "") + ")"
            for k, v in HOST_JOBS.items()
        ) + ". `net_send` sends over a veth pair to a sink in the namespace `rlhsink`.",
        f"* Machine: {mach.get('cpu_model')}, {mach.get('cores')} cores, kernel {mach.get('kernel')}; "
        f"reveal-lab commit {str(mach.get('git_commit'))[:12]}.",
        *([f"* Command: `{command}`"] if command else []),
        "",
        "## Load average before and after each recording (1, 5, 15 min)",
        "",
        "| recording | seconds | jobs (offset from the collector's start) | before | after |",
        "|---|---|---|---|---|",
        *lines,
        "",
    ]
    (out / "README.md").write_text("\n".join(readme))
    return meta_rows, label_rows


def _host_recording(raw: Path, mpath: Path, sub: Path) -> tuple[dict, list[dict], str]:
    """One recording of ``raw`` (its manifest ``mpath``) written to ``sub`` in the public
    grammar, columns missing throughout dropped: ``(meta row, label rows, README line)``."""
    from reveal_lab.io import read_collector_run
    from reveal_lab.lab._dataset import drop_missing_columns, write_run
    from reveal_lab.telemetry import Run, RunMeta

    man = json.loads(mpath.read_text())
    if man.get("collector_rc") not in (0, None):
        raise LabError(f"{mpath}: the collector exited with {man['collector_rc']}; record it again")
    run = read_collector_run(raw / man["collector_dir"], view="dataset")
    frame, dropped = drop_missing_columns(run.frame)
    stem, hn = man["stem"], man["host"]
    fn = f"{stem}_{hn}.parquet"
    source = f"./recordings/{fn}"
    rmeta = RunMeta(
        run_id=f"{stem}_{hn}",
        hosts=(hn,),
        workload="Jobs__Host__vm",
        model="Jobs",
        task="Host",
        dataset="vm",
        phase="host",
        mode="host",
        platform="collector",
        source_path=source,
        start_time=run.meta.start_time,
        interval_ms=run.meta.interval_ms,
        extra={"fault": man["fault"], "world_size": 1, "dropped_all_missing_columns": dropped},
    )
    write_run(Run(rmeta, frame), sub / fn)
    meta_row = (
        {
            "source_file": source,
            "n_rows": frame.height,
            "n_cols": frame.width - 1,
            "phase": "host",
            "mode": "host",
            "model": "Jobs",
            "task": "Host",
            "dataset": "vm",
            "model_task": "JobsforHost",
            "workload": "Jobs__Host__vm",
            "run": stem,
            "host": hn,
            "run_group": stem,
            "world_size": 1,
            "fault": man["fault"],
            "repeat": man["plan"]["index"],
            "seed": "",
            "start": str(frame["timestamp"][0]) if frame.height else "",
            "end": str(frame["timestamp"][-1]) if frame.height else "",
            "n_dropped_nan_columns": dropped,
        }
    )
    labels = []
    for lab in man["labels"]:
        kind = HOST_JOBS[lab["kind"]]
        labels.append(
            {
                "run": stem,
                "host": hn,
                "fault_type": lab["kind"],
                "start": ms_to_stamp(lab["start_ms"]),
                "end": ms_to_stamp(lab["end_ms"]),
                "expected_subsystem": kind.subsystem,
                "magnitude": kind.magnitude,
                "unit": kind.unit,
                "scope": "episode",
                "source_file": source,
            }
        )
    jobs = ", ".join(
        f"{j['kind']} at {j['start_s']:g} s for {j['length_s']:g} s" for j in man["plan"]["jobs"]
    )
    line = (
        f"| {stem} | {frame.height / 10:.0f} | {jobs or 'none'} | {' '.join(man['loadavg_before'])} "
        f"| {' '.join(man['loadavg_after'])} |"
    )
    return meta_row, labels, line
