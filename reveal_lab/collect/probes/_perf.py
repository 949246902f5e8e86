"""``perf stat`` as one long-lived child in interval mode.

At open, one short ``perf stat -x,`` run finds which events this host counts
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

from reveal_lab.collect._probe import Channel, Probe, ProbeContext, ProbeUnavailable, register_probe
from reveal_lab.collect.probes._child import ChildLines

HARDWARE_EVENTS = ("cycles", "instructions", "cache-references", "cache-misses", "branches", "branch-misses")
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


@register_probe
class PerfStat(Probe):
    """Per-core event counts from one ``perf stat -I`` child."""

    name, group = "perf", "perf"
    description = "perf stat -I (hardware events where supported, software otherwise), per core"

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
            unit = "ms" if ev in ("task-clock", "cpu-clock") else "count"
            for c in cores:
                self.slot[(c, ev)] = len(self.channels)
                self.channels.append(
                    Channel("Perf", perf_field(ev), c, unit, counter=True, dtype="f", dataset_source="Perf")
                )
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
