"""Per-core perf counters: ``perf_event_open`` in the collector itself, or a ``perf stat`` child.

The ``perf`` probe opens the counters itself with ``perf_event_open(2)``
(:mod:`~reveal_lab.collect.probes._perfevent`: one group per CPU and kind, read with one
``read`` per group on each tick, scaled for multiplexing), which costs a few syscalls per
tick instead of a child formatting text. When the kernel refuses (``perf_event_paranoid``,
no ``CAP_PERFMON``) or an event is not one of the kernel's generic events, it falls back to
one long-lived ``perf stat`` child, and when that cannot run either, the probe is skipped
with one log line. ``meta.json``'s ``probe_info.perf.backend`` says which path ran
(``perf_event_open`` or ``perf stat``); ``REVEAL_LAB_PERF_BACKEND`` (``auto``, ``events``,
``child``) or the ``perf_backend`` option forces one. Both paths give the same channels.

The child: at open, one short ``perf stat -x,`` run finds which events this host counts
(hardware counters are often unsupported in VMs); the long-lived child then runs
``perf stat -I <interval> -x, -a -A -e <supported events>`` and the hot loop reads
its pipe without blocking. Counts are accumulated per core and event, so they are
stored as cumulative counters; the dataset view turns them back into counts per
sample (``Perf:Cycles.<core>`` and the all-core ``Perf:Cycles``).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np

from reveal_lab.collect._probe import Channel, Probe, ProbeContext, ProbeUnavailable, log
from reveal_lab.collect.probes._child import ChildLines
from reveal_lab.collect.probes._perfevent import (
    EVENTS,
    NS_EVENTS,
    PerfEventError,
    open_counters,
    perf_event_open,
)

BACKENDS = ("auto", "events", "child")

HARDWARE_EVENTS = (
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branches",
    "branch-misses",
    "stalled-cycles-frontend",
    "stalled-cycles-backend",
)
SOFTWARE_EVENTS = ("task-clock", "context-switches", "cpu-migrations", "page-faults")
DEFAULT_EVENTS = HARDWARE_EVENTS + SOFTWARE_EVENTS


def perf_field(event: str) -> str:
    """``branch-misses`` → ``Branch_Misses`` (the public dataset's spelling).

    >>> perf_field("cache-references"), perf_field("ls_dc_accesses"), perf_field("task-clock")
    ('Cache_References', 'Ls_dc_accesses', 'Task_Clock')
    """
    return "_".join(p[:1].upper() + p[1:] for p in event.split("-"))


def parse_perf_csv_line(line: bytes, interval: bool = True) -> tuple[str, str, float | None] | None:
    """``(cpu, event, value)`` from one ``perf stat -x,`` line (``None`` for other lines;
    value ``None`` when the event is not supported or not counted).

    >>> parse_perf_csv_line(b"  0.200300726,CPU1,200.60,msec,task-clock,200596622,100.00,1.003,CPUs utilized")
    ('1', 'task-clock', 200.6)
    >>> parse_perf_csv_line(b"0.2,CPU0,<not supported>,,cycles,0,100.00,,")
    ('0', 'cycles', None)
    """
    parts = line.strip().split(b",")
    if interval:
        parts = parts[1:]
    if len(parts) < 4 or not parts[0].startswith(b"CPU"):
        return None
    cpu = parts[0][3:].decode()
    event = parts[3].decode()
    try:
        value = float(parts[1])
    except ValueError:
        value = None
    return cpu, event, value


def probe_events(
    events: tuple[str, ...], timeout: float = 10.0
) -> tuple[list[str], list[str], dict[str, str]]:
    """Run ``perf stat`` once for ~50 ms; return (cores, supported events, unsupported → reason)."""
    cmd = ["perf", "stat", "-x,", "-a", "-A", "-e", ",".join(events), "--", "sleep", "0.05"]
    try:
        res = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProbeUnavailable(f"`perf stat` failed to run: {exc}") from None
    seen: dict[str, set[str]] = {}
    bad: dict[str, str] = {}
    cores: dict[str, None] = {}
    for line in res.stderr.splitlines():
        p = parse_perf_csv_line(line, interval=False)
        if p is None:
            continue
        cpu, ev, val = p
        cores.setdefault(cpu, None)
        if val is None:
            bad[ev] = line.split(b",")[1].decode().strip("<>")
        else:
            seen.setdefault(ev, set()).add(cpu)
    if not seen:
        msg = [m.strip() for m in res.stderr.decode(errors="replace").splitlines() if m.strip()]
        why = " ".join(m for m in msg if m.rstrip(":") != "Error")[:240] or f"exit status {res.returncode}"
        raise ProbeUnavailable(
            f"`perf stat -a` counted nothing (uid {os.getuid()}, perf_event_paranoid={_paranoid()}): {why}"
        )
    return list(cores), [e for e in events if e in seen and e not in bad], bad


def _paranoid() -> str:
    try:
        return open("/proc/sys/kernel/perf_event_paranoid").read().strip()  # noqa: SIM115
    except OSError:
        return "?"


def perf_channel(event: str, core: str) -> Channel:
    """The channel of ``event`` on ``core``, the same for both back-ends."""
    unit = "ms" if event in NS_EVENTS else "count"
    return Channel("Perf", perf_field(event), core, unit, counter=True, dtype="f", dataset_source="Perf")


def online_cpus(path: str = "/sys/devices/system/cpu/online") -> list[int]:
    """CPU numbers from a kernel CPU list such as ``0-3,6`` (``os.cpu_count()`` without the file).

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "online"; _ = f.write_text("0-2,5\\n")
    >>> online_cpus(str(f))
    [0, 1, 2, 5]
    """
    try:
        text = open(path).read().strip()  # noqa: SIM115
    except OSError:
        return list(range(os.cpu_count() or 1))
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


class PerfEvents(Probe):
    """Per-core counts from ``perf_event_open`` groups read on every tick."""

    name, group = "perf", "perf"

    def open(self, ctx: ProbeContext) -> None:
        events = tuple(ctx.perf_events or DEFAULT_EVENTS)
        opener = ctx.options.get("perf_opener", perf_event_open)
        cpus = online_cpus()
        self.groups, ok, bad = open_counters(events, cpus, opener)
        self.info.update(
            backend="perf_event_open", events=ok, unsupported=bad, perf_event_paranoid=_paranoid(),
            groups=[g.events for g in self.groups if g.cpu == cpus[0]],
        )  # fmt: skip
        slot: dict[tuple[int, str], int] = {}
        self.channels = []
        for ev in ok:
            for c in cpus:
                slot[(c, ev)] = len(self.channels)
                self.channels.append(perf_channel(ev, str(c)))
        # one uint64 row per group, filled in place by readv (no per-group objects per tick);
        # then one vectorised pass: value * enabled / running (multiplexing) * unit factor
        width = 3 + max(len(g.events) for g in self.groups)
        self.mat = np.zeros((len(self.groups), width), dtype=np.uint64)
        self.views = [
            memoryview(self.mat[r]).cast("B")[: 8 * (3 + len(g.events))] for r, g in enumerate(self.groups)
        ]
        self.fds = [g.fds[0] for g in self.groups]
        self.sizes = [8 * (3 + len(g.events)) for g in self.groups]
        src, dst, mult = [], [], []
        for r, g in enumerate(self.groups):
            for i, e in enumerate(g.events):
                src.append(r * width + 3 + i)
                dst.append(slot[(g.cpu, e)])
                mult.append(1e-6 if e in NS_EVENTS else 1.0)
        self.src = np.array(src, dtype=np.int64)
        self.dst = np.array(dst, dtype=np.int64)
        self.mult = np.array(mult)
        self.row_of = self.src // width

    def compiled_counters(self) -> list[tuple[int, int, list[tuple[int, float]]]]:
        out = []
        for r, g in enumerate(self.groups):
            pick = self.row_of == r
            dsts = list(zip(self.dst[pick].tolist(), self.mult[pick].tolist(), strict=True))
            out.append((g.fds[0], len(g.events), dsts))
        return out

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        readv, views, sizes = os.readv, self.views, self.sizes
        for r, fd in enumerate(self.fds):
            if readv(fd, [views[r]]) != sizes[r]:
                self.mat[r, 1:3] = (1, 0)  # unreadable this tick: missing
        m = self.mat
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = m[:, 1].astype(np.float64) / m[:, 2]  # enabled / running; inf when never run
        scale[~np.isfinite(scale)] = np.nan
        scale[(m[:, 1] == 0) & (m[:, 2] == 0)] = 1.0  # not yet enabled: the (zero) counts as they are
        floats[self.dst] = m.ravel()[self.src] * (scale[self.row_of] * self.mult)

    def close(self) -> None:
        for g in getattr(self, "groups", ()):
            g.close()


class Perf(Probe):
    """``perf_event_open`` counters, else a ``perf stat`` child, else skipped."""

    name, group = "perf", "perf"
    description = "per-core perf counters via perf_event_open (fallback: a perf stat -I child)"

    def open(self, ctx: ProbeContext) -> None:
        backend = ctx.options.get("perf_backend") or os.environ.get("REVEAL_LAB_PERF_BACKEND", "auto")
        if backend not in BACKENDS:
            raise ValueError(f"perf back-end {backend!r}: expected one of {', '.join(BACKENDS)}")
        events = tuple(ctx.perf_events or DEFAULT_EVENTS)
        why_not = None
        if backend == "events" or (backend == "auto" and all(e in EVENTS for e in events)):
            impl: Probe = PerfEvents()
            try:
                impl.open(ctx)
            except PerfEventError as exc:
                impl.close()
                why_not = (
                    f"perf_event_open: {exc.strerror or exc} "
                    f"(uid {os.getuid()}, perf_event_paranoid={_paranoid()})"
                )
                if backend == "events":
                    raise ProbeUnavailable(why_not) from None
                log.info("perf: %s; using a perf stat child instead", why_not)
            else:
                self._take(impl)
                return
        impl = PerfStat()
        try:
            impl.open(ctx)
        except ProbeUnavailable as exc:
            impl.close()
            raise ProbeUnavailable(f"{why_not}; perf stat: {exc}" if why_not else str(exc)) from None
        impl.info["backend"] = "perf stat"
        if why_not:
            impl.info["perf_event_open_error"] = why_not
        self._take(impl)

    def _take(self, impl: Probe) -> None:
        self.impl = impl
        self.channels = impl.channels
        self.info = impl.info

    def compiled_counters(self) -> list[tuple[int, int, list[tuple[int, float]]]] | None:
        return self.impl.compiled_counters()

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        self.impl.sample(ints, floats)

    def close(self) -> None:
        if getattr(self, "impl", None) is not None:
            self.impl.close()


class PerfStat(Probe):
    """Per-core event counts from one ``perf stat -I`` child."""

    name, group = "perf", "perf"

    def open(self, ctx: ProbeContext) -> None:
        if shutil.which("perf") is None:
            raise ProbeUnavailable("`perf` is not installed (linux-perf / linux-tools)")
        events = tuple(ctx.perf_events or DEFAULT_EVENTS)
        cores, ok, bad = probe_events(events)
        if not ok:
            raise ProbeUnavailable(f"no perf event is supported here: {bad}")
        self.info.update(events=ok, unsupported=bad, perf_event_paranoid=_paranoid())
        ms = max(10, round(ctx.interval_s * 1000))
        self.cmd = ["perf", "stat", "-I", str(ms), "-x,", "-a", "-A", "-e", ",".join(ok)]
        self.info["command"] = " ".join(self.cmd)
        self.slot: dict[tuple[str, str], int] = {}
        self.channels = []
        for ev in ok:
            for c in cores:
                self.slot[(c, ev)] = len(self.channels)
                self.channels.append(perf_channel(ev, c))
        self.cum = [0.0] * len(self.channels)
        self.child = ChildLines(self.cmd, stream="stderr")  # perf stat writes its counts to stderr
        self.dead = False

    def _drain(self) -> None:
        slot, cum = self.slot, self.cum
        for line in self.child.lines():
            parts = line.split(b",", 6)
            if len(parts) < 6:
                continue
            i = slot.get((parts[1][3:].decode(), parts[4].decode()))
            if i is None:
                continue
            try:
                cum[i] += float(parts[2])
            except ValueError:
                pass
        self.dead = self.child.eof

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        if self.dead:
            floats[:] = np.nan
            return
        self._drain()
        floats[:] = self.cum

    def close(self) -> None:
        if getattr(self, "child", None) is not None:
            self.child.stop()
