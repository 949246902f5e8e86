"""Recording hygiene: wait (bounded) or refuse to record a slot while the machine is busy.

The 1-minute load average counts everything runnable, the lab's own work included: right
after a DDP slot it is near 2 on a 2-core machine although nothing else runs. The gate
therefore subtracts the lab's *own* contribution before comparing with the threshold:

* the lab's cumulative CPU seconds (the lab hosts' cgroups, which keep the time of exited
  workloads, stressors and collectors, plus the recorder and its reaped children) are
  sampled before and after every slot and at every check;
* between two samples the lab ran at ``delta_cpu / delta_t`` cores; the kernel's load
  average is an exponentially weighted average with a 60 s time constant, so the lab's
  share of it now is ``sum_i rate_i * (exp(-(now - t1_i)/60) - exp(-(now - t0_i)/60))``
  (:func:`own_load`), the same weighting applied to the lab's own history;
* CPU time misses what the load average also counts: tasks waiting for a core (two busy
  loops beside a workload on one core: load 3, CPU 1 core) and tasks in uninterruptible
  sleep (``O_DIRECT`` reads, ``fsync``). So while a slot runs, the lab's runnable and
  uninterruptible tasks are also counted about once a second (:func:`lab_active_tasks`,
  :meth:`LoadGate.sample_tasks`) and weighted the same way (:func:`own_load_from_counts`);
  the lab's share is the larger of the two estimates;
* ``other = loadavg1 - own``; the gate passes when ``other <= gate``.

A machine can be idle by its load and still be changing under the workload: the kernel's
proactive reclaim (DAMON ``pageout`` in this VM, ``kdamond``) frees cold page cache in steps
of 60-120 MB every few seconds for minutes after boot. The first slot of the v3 recording
(started 4 minutes after boot) ran while 1.7 GB of page cache was freed (``Memory:Cached``
-20 MB/s over the run; every later fault-free slot -2.3 to +0.9 MB/s), and 40 of its 88
windows were flagged, all by page-cache features. So before a session's first slot the gate
also waits (:meth:`LoadGate.settle`, ``reveal-lab record --settle``) until the page cache
(:func:`read_page_cache_kb`) has drifted by at most ``settle_mb_s`` over ``settle_s``.

What else was busy is recorded too: the busiest processes outside the lab, by CPU time
over a short sample (:func:`busiest_others`). Every reading is a plain function of its
inputs (a load figure, process tables, a history of CPU samples), so the gate is tested
by handing it readings, not by timing a live machine.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "GATE_EXIT_CODE",
    "LOAD_TAU_S",
    "GateRefused",
    "LoadGate",
    "ProcInfo",
    "busiest_others",
    "lab_active_tasks",
    "lab_cpu_seconds",
    "own_load",
    "own_load_from_counts",
    "read_loadavg1",
    "read_page_cache_kb",
    "read_process_table",
]

#: the time constant of the kernel's 1-minute load average (seconds)
LOAD_TAU_S = 60.0
#: exit status of ``reveal-lab record`` when the gate refused (BSD ``EX_TEMPFAIL``: try again later)
GATE_EXIT_CODE = 75


class GateRefused(RuntimeError):
    """The machine stayed busier than the gate for longer than the allowed wait."""

    exit_code = GATE_EXIT_CODE

    def __init__(self, message: str, reading: dict) -> None:
        super().__init__(message)
        self.reading = reading


@dataclass(frozen=True)
class ProcInfo:
    """One process: its command name, cumulative CPU seconds, and whether it is the lab's own."""

    comm: str
    cpu_s: float
    own: bool = False


def read_loadavg1(path: str = "/proc/loadavg") -> float:
    """The kernel's 1-minute load average."""
    with open(path) as fh:
        return float(fh.read().split()[0])


def read_page_cache_kb(path: str = "/proc/meminfo") -> float:
    """The page cache (``Cached`` of ``/proc/meminfo``, kB)."""
    with open(path) as fh:
        for line in fh:
            if line.startswith("Cached:"):
                return float(line.split()[1])
    raise ValueError(f"{path}: no 'Cached:' line (expected the kernel's meminfo)")


def read_process_table(
    own_root: int | None = None, own_cgroup_marker: str = "/reveal_lab"
) -> dict[int, ProcInfo]:
    """Every process's name and CPU seconds (``utime + stime`` of ``/proc/PID/stat``).

    A process is the lab's own when it runs in a cgroup whose path contains
    ``own_cgroup_marker`` (the lab hosts) or descends from ``own_root`` (default: this
    process). Processes that vanish while being read are skipped.
    """
    own_root = os.getpid() if own_root is None else own_root
    tick = os.sysconf("SC_CLK_TCK")
    raw: dict[int, tuple[str, int, float, bool]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cg = (d / "cgroup").read_text()
        except OSError:
            continue
        lp, rp = stat.find("("), stat.rfind(")")
        fields = stat[rp + 2 :].split()
        # fields[0] is state (field 3); ppid is field 4, utime 14, stime 15
        ppid, utime, stime = int(fields[1]), int(fields[11]), int(fields[12])
        raw[int(d.name)] = (stat[lp + 1 : rp], ppid, (utime + stime) / tick, own_cgroup_marker in cg)
    own: set[int] = {p for p, r in raw.items() if r[3]} | {own_root}
    changed = True
    while changed:  # descendants of the recorder (ip, nsenter, iptables, ...)
        changed = False
        for p, r in raw.items():
            if p not in own and r[1] in own and r[1] != 0 and p != 1:
                own.add(p)
                changed = True
    return {p: ProcInfo(r[0], r[2], p in own) for p, r in raw.items()}


def busiest_others(
    before: dict[int, ProcInfo], after: dict[int, ProcInfo], dt_s: float, n: int = 5
) -> list[dict]:
    """The ``n`` busiest processes outside the lab between two tables, in cores (CPU s / s).

    >>> a = {1: ProcInfo("make", 10.0), 2: ProcInfo("python", 5.0, own=True), 3: ProcInfo("sh", 1.0)}
    >>> b = {1: ProcInfo("make", 11.5), 2: ProcInfo("python", 7.0, own=True), 3: ProcInfo("sh", 1.0)}
    >>> busiest_others(a, b, 2.0)
    [{'pid': 1, 'comm': 'make', 'cores': 0.75}]
    """
    if dt_s <= 0:
        raise ValueError(f"dt_s must be positive, got {dt_s}")
    rows = []
    for pid, p in after.items():
        if p.own:
            continue
        q = before.get(pid)
        if q is None or q.comm != p.comm:  # started during the sample: all its time is new
            q = ProcInfo(p.comm, 0.0)
        cores = (p.cpu_s - q.cpu_s) / dt_s
        if cores > 0:
            rows.append({"pid": pid, "comm": p.comm, "cores": round(cores, 3)})
    rows.sort(key=lambda r: (-r["cores"], r["pid"]))
    return rows[:n]


def lab_cpu_seconds(cgroup_dirs: Sequence[Path] = ()) -> float:
    """Cumulative CPU seconds of the lab: its cgroups plus this process and its reaped children.

    ``cgroup_dirs`` are the hosts' cgroup directories (v1 ``cpuacct``: ``cpuacct.usage``
    in ns; v2: ``usage_usec`` of ``cpu.stat``); an unreadable one counts 0.
    """
    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    for d in cgroup_dirs:
        d = Path(d)
        with contextlib.suppress(OSError, ValueError):
            if (d / "cpuacct.usage").exists():
                total += int((d / "cpuacct.usage").read_text()) / 1e9
            elif (d / "cpu.stat").exists():
                for line in (d / "cpu.stat").read_text().splitlines():
                    k, v = line.split()
                    if k == "usage_usec":
                        total += int(v) / 1e6
                        break
    return total


def lab_active_tasks(cgroup_dirs: Sequence[Path] = ()) -> int:
    """Tasks (threads) of the lab's cgroups that are runnable (``R``) or in uninterruptible
    sleep (``D``) right now: what the kernel's load average counts."""
    n = 0
    for d in cgroup_dirs:
        d = Path(d)
        f = d / "tasks" if (d / "tasks").exists() else d / "cgroup.threads"
        try:
            tids = f.read_text().split()
        except OSError:
            continue
        for tid in tids:
            try:
                stat = Path(f"/proc/{tid}/stat").read_text()
            except OSError:
                continue
            if stat[stat.rfind(")") + 2 : stat.rfind(")") + 3] in ("R", "D"):
                n += 1
    return n


def own_load_from_counts(
    samples: Sequence[tuple[float, float]], now: float, tau_s: float = LOAD_TAU_S
) -> float:
    """The lab's share of the load average from ``(time, active tasks)`` samples: each count
    holds until the next sample (the last until ``now``), weighted as the kernel weights it.

    >>> round(own_load_from_counts([(0.0, 3), (600.0, 3)], 600.0), 3)  # 3 tasks for 10 min
    3.0
    >>> round(own_load_from_counts([(0.0, 3), (60.0, 0)], 120.0), 3)  # ... until a minute ago
    0.698
    """
    total = 0.0
    pts = list(samples)
    for k, (t0, c) in enumerate(pts):
        t1 = pts[k + 1][0] if k + 1 < len(pts) else now
        if t1 <= t0:
            continue
        total += c * (math.exp(-(now - t1) / tau_s) - math.exp(-(now - t0) / tau_s))
    return total


def own_load(history: Sequence[tuple[float, float]], now: float, tau_s: float = LOAD_TAU_S) -> float:
    """The lab's share of the load average at ``now`` from ``(time, cumulative CPU s)`` samples.

    Each interval between samples contributes its mean rate weighted the way the kernel's
    load average weights that stretch of the past. Before the first sample: nothing known, 0.

    >>> round(own_load([(0.0, 0.0), (600.0, 1200.0)], 600.0), 3)  # 2 cores for 10 min
    2.0
    >>> round(own_load([(0.0, 0.0), (60.0, 120.0)], 120.0), 3)  # ... ended 60 s ago: e^-1 of it
    0.465
    """
    total = 0.0
    for (t0, c0), (t1, c1) in zip(history, history[1:], strict=False):
        if t1 <= t0:
            continue
        rate = max(c1 - c0, 0.0) / (t1 - t0)
        total += rate * (math.exp(-(now - t1) / tau_s) - math.exp(-(now - t0) / tau_s))
    return total


@dataclass
class LoadGate:
    """Check the machine before a slot: ``loadavg1`` less the lab's own share against ``gate``.

    ``wait()`` polls every ``poll_s`` until the other load is at most ``gate`` and returns
    the reading; after ``max_wait_s`` it raises :class:`GateRefused`. ``gate=None``
    disables the check (the reading is still taken and logged). Every input is a callable
    so tests can hand in readings: ``read_load`` (the 1-minute load average),
    ``read_processes`` (a process table, :func:`read_process_table`), ``own_cpu`` (the
    lab's cumulative CPU seconds), ``clock`` and ``sleep``.
    """

    gate: float | None = 0.5
    max_wait_s: float = 600.0
    poll_s: float = 10.0
    sample_s: float = 2.0
    top_n: int = 5
    read_load: Callable[[], float] = read_loadavg1
    read_processes: Callable[[], dict[int, ProcInfo]] = read_process_table
    own_cpu: Callable[[], float] = lab_cpu_seconds
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    own_tasks: Callable[[], int] | None = None  #: the lab's R+D task count (:func:`lab_active_tasks`)
    #: :meth:`settle`: the page cache may drift by at most ``settle_mb_s`` over ``settle_s`` (0: off)
    settle_s: float = 0.0
    settle_mb_s: float = 2.0
    read_cache_kb: Callable[[], float] = read_page_cache_kb
    history: list[tuple[float, float]] = field(default_factory=list)
    task_samples: list[tuple[float, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.gate is not None and self.gate < 0:
            raise ValueError(f"the load gate must be >= 0 (or None to disable), got {self.gate}")
        if self.max_wait_s < 0 or self.poll_s <= 0 or self.sample_s <= 0:
            raise ValueError("max_wait_s must be >= 0, poll_s and sample_s > 0")
        if self.settle_s < 0 or self.settle_mb_s <= 0:
            raise ValueError(
                f"settle_s must be >= 0 and settle_mb_s > 0, got {self.settle_s} and {self.settle_mb_s}"
            )

    def note(self) -> None:
        """Add a sample of the lab's CPU time (call before and after every slot)."""
        self.history.append((self.clock(), self.own_cpu()))
        self.sample_tasks()

    def sample_tasks(self) -> None:
        """Add a count of the lab's runnable + uninterruptible tasks (about once a second while
        a slot runs; a no-op without ``own_tasks``)."""
        if self.own_tasks is not None:
            self.task_samples.append((self.clock(), float(self.own_tasks())))

    def own_share(self, now: float) -> float:
        """The lab's share of the load average now: the larger of the CPU-time and the task-count
        estimates."""
        return max(own_load(self.history, now), own_load_from_counts(self.task_samples, now))

    def measure(self) -> dict:
        """One reading: load average, the lab's share, the rest, and the busiest others."""
        before, t0 = self.read_processes(), self.clock()
        self.note()
        self.sleep(self.sample_s)
        after, t1 = self.read_processes(), self.clock()
        self.note()
        load = self.read_load()
        own = self.own_share(t1)
        return {
            "loadavg1": round(load, 3),
            "own_load": round(own, 3),
            "other_load": round(load - own, 3),
            "top_other_processes": busiest_others(before, after, max(t1 - t0, 1e-9), self.top_n),
        }

    def wait(self) -> dict:
        """Block until the other load is at most the gate; the reading, with ``waited_s``."""
        start = self.clock()
        while True:
            r = self.measure()
            waited = self.clock() - start
            r["gate"] = self.gate
            r["waited_s"] = round(waited, 1)
            if self.gate is None or r["other_load"] <= self.gate:
                r["passed"] = True
                return r
            if waited >= self.max_wait_s:
                r["passed"] = False
                top = ", ".join(
                    f"{p['comm']} ({p['pid']}): {p['cores']:.2f}" for p in r["top_other_processes"]
                )
                raise GateRefused(
                    f"the machine is busy: 1-minute load average {r['loadavg1']:.2f}, of which the lab's "
                    f"own {r['own_load']:.2f}, leaves {r['other_load']:.2f} > --load-gate {self.gate:g} "
                    f"after waiting {waited:.0f}s (--gate-wait {self.max_wait_s:g}s); busiest other "
                    f"processes: {top or 'none measurable'}. Stop them and run again (or record with "
                    "--slots to resume).",
                    r,
                )
            self.sleep(min(self.poll_s, max(self.max_wait_s - waited, 0.0)) or self.poll_s)

    def settle(self) -> dict:
        """Block until the page cache has drifted by at most ``settle_mb_s`` MB/s over the last
        ``settle_s`` seconds (read every ``poll_s``); the reading (``drift_mb_s``, ``waited_s``).

        The window starts at the newest reading at least ``settle_s`` old, so readings that
        come a little late (a real clock) still fill it. After ``max_wait_s`` it raises
        :class:`GateRefused`. ``settle_s == 0``: off, nothing read.
        """
        if self.settle_s <= 0:
            return {"settle_s": 0.0, "passed": True}
        start = self.clock()
        pts = [(start, self.read_cache_kb())]
        r: dict = {"settle_s": self.settle_s, "settle_mb_s": self.settle_mb_s}
        while True:
            self.sleep(min(self.poll_s, self.settle_s))
            now = self.clock()
            pts.append((now, self.read_cache_kb()))
            r["waited_s"] = round(now - start, 1)
            old = [p for p in pts if now - p[0] >= self.settle_s - 1e-6]
            if old:  # the window is full
                t0, kb0 = old[-1]
                drift = (pts[-1][1] - kb0) / 1024 / (now - t0)
                r.update(drift_mb_s=round(drift, 3), page_cache_mb=round(pts[-1][1] / 1024, 1))
                if abs(drift) <= self.settle_mb_s:
                    return {**r, "passed": True}
            if now - start >= self.max_wait_s:
                moved = f"{r['drift_mb_s']:+.1f} MB/s" if "drift_mb_s" in r else "not measured"
                raise GateRefused(
                    f"the page cache is still changing: {moved} over the last {self.settle_s:g}s "
                    f"(--settle allows {self.settle_mb_s:g} MB/s) after waiting {now - start:.0f}s "
                    f"(--gate-wait {self.max_wait_s:g}s); the kernel is still reclaiming or filling the "
                    "cache (e.g. after boot). Wait and run again, or pass --settle 0 to record anyway.",
                    {**r, "passed": False},
                )
