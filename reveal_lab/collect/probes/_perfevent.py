"""Hardware and software counters straight from ``perf_event_open(2)``, no child process.

One group of counters per CPU and kind (software events in one group; hardware events
in small groups that fit the PMU: cycles with instructions, cache references with
misses, branches with misses, the stalled-cycle pair), opened system-wide (``pid=-1``)
once at start with ``read_format = PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED |
TOTAL_TIME_RUNNING``. A sample is one ``read`` per group: ``nr, time_enabled,
time_running, value[nr]``; the values are scaled by ``enabled / running`` when the
kernel multiplexed the group (what ``perf stat`` prints as a percentage), so the
stored cumulative counts estimate what a dedicated counter would have counted.

The syscall goes through ``libc.syscall`` (ctypes); the opener is a plain function
``opener(attr: bytes, pid, cpu, group_fd, flags) -> fd`` raising ``OSError``, so tests
can inject a failing one.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import struct
from collections.abc import Callable

import numpy as np

__all__ = [
    "EVENTS",
    "GROUPS_OF",
    "PerfEventError",
    "perf_event_open",
    "attr_bytes",
    "CounterGroup",
    "open_counters",
]

# perf_event_attr.type
PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE = 0, 1
# read_format bits
PERF_FORMAT_TOTAL_TIME_ENABLED, PERF_FORMAT_TOTAL_TIME_RUNNING, PERF_FORMAT_GROUP = 1, 2, 8
READ_FORMAT = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING
PERF_FLAG_FD_CLOEXEC = 1 << 3
PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP = 0x2400, 1

#: ``perf`` event name -> (type, config), the kernel's generic events
EVENTS: dict[str, tuple[int, int]] = {
    "cycles": (PERF_TYPE_HARDWARE, 0),
    "cpu-cycles": (PERF_TYPE_HARDWARE, 0),
    "instructions": (PERF_TYPE_HARDWARE, 1),
    "cache-references": (PERF_TYPE_HARDWARE, 2),
    "cache-misses": (PERF_TYPE_HARDWARE, 3),
    "branches": (PERF_TYPE_HARDWARE, 4),
    "branch-instructions": (PERF_TYPE_HARDWARE, 4),
    "branch-misses": (PERF_TYPE_HARDWARE, 5),
    "bus-cycles": (PERF_TYPE_HARDWARE, 6),
    "stalled-cycles-frontend": (PERF_TYPE_HARDWARE, 7),
    "stalled-cycles-backend": (PERF_TYPE_HARDWARE, 8),
    "ref-cycles": (PERF_TYPE_HARDWARE, 9),
    "cpu-clock": (PERF_TYPE_SOFTWARE, 0),
    "task-clock": (PERF_TYPE_SOFTWARE, 1),
    "page-faults": (PERF_TYPE_SOFTWARE, 2),
    "faults": (PERF_TYPE_SOFTWARE, 2),
    "context-switches": (PERF_TYPE_SOFTWARE, 3),
    "cs": (PERF_TYPE_SOFTWARE, 3),
    "cpu-migrations": (PERF_TYPE_SOFTWARE, 4),
    "migrations": (PERF_TYPE_SOFTWARE, 4),
    "minor-faults": (PERF_TYPE_SOFTWARE, 5),
    "major-faults": (PERF_TYPE_SOFTWARE, 6),
}

#: hardware events counted together (their ratio is then taken over the same time)
GROUPS_OF: tuple[tuple[str, ...], ...] = (
    ("cycles", "cpu-cycles", "instructions", "ref-cycles", "bus-cycles"),
    ("cache-references", "cache-misses"),
    ("branches", "branch-instructions", "branch-misses"),
    ("stalled-cycles-frontend", "stalled-cycles-backend"),
)

#: clocks the kernel counts in ns and ``perf stat`` prints in ms
NS_EVENTS = ("cpu-clock", "task-clock")

_SYSCALL_NR = {"x86_64": 298, "amd64": 298, "aarch64": 241, "arm64": 241, "i686": 336, "i386": 336,
               "ppc64le": 319, "ppc64": 319, "s390x": 331, "riscv64": 241}  # fmt: skip


class PerfEventError(OSError):
    """``perf_event_open`` refused (permission, no such event, no PMU)."""


def attr_bytes(type_: int, config: int, read_format: int = READ_FORMAT, disabled: bool = False) -> bytes:
    """A ``struct perf_event_attr`` of the first published size (64 bytes, every kernel
    takes it): counting mode, kernel and user counted, ``disabled`` or counting at once.

    >>> len(attr_bytes(1, 0)), struct.unpack_from("<IIQ", attr_bytes(1, 3))
    (64, (1, 64, 3))
    """
    # type, size, config, sample_period, sample_type, read_format, flags, wakeup_events,
    # bp_type, config1
    return struct.pack("<IIQQQQQIIQ", type_, 64, config, 0, 0, read_format, int(disabled), 0, 0, 0)


_libc: ctypes.CDLL | None = None


def perf_event_open(attr: bytes, pid: int, cpu: int, group_fd: int, flags: int) -> int:
    """The raw syscall; a new fd or :class:`PerfEventError` with the kernel's errno."""
    global _libc  # noqa: PLW0603
    nr = _SYSCALL_NR.get(platform.machine())
    if nr is None:
        raise PerfEventError(errno.ENOSYS, f"perf_event_open: unknown syscall number on {platform.machine()}")
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = _libc.syscall(ctypes.c_long(nr), buf, ctypes.c_int(pid), ctypes.c_int(cpu),
                       ctypes.c_int(group_fd), ctypes.c_ulong(flags))  # fmt: skip
    if fd < 0:
        e = ctypes.get_errno()
        raise PerfEventError(e, f"perf_event_open: {os.strerror(e)}")
    return int(fd)


Opener = Callable[[bytes, int, int, int, int], int]


class CounterGroup:
    """One group on one CPU: a leader fd, member fds, one ``read`` gives them all."""

    def __init__(self, cpu: int, events: list[str], fds: list[int]) -> None:
        self.cpu = cpu
        self.events = events
        self.fds = fds
        self.size = 8 * (3 + len(events))

    def read(self) -> np.ndarray:
        """Counts since open, scaled for multiplexing (``nan`` while never scheduled)."""
        raw = np.frombuffer(os.read(self.fds[0], self.size), dtype=np.uint64)
        vals = raw[3 : 3 + len(self.events)].astype(np.float64)
        enabled, running = raw[1], raw[2]
        if running == 0:
            return np.full(len(self.events), np.nan) if enabled else vals
        if running != enabled:
            vals *= float(enabled) / float(running)
        return vals

    def close(self) -> None:
        for fd in reversed(self.fds):
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


def _group_events(events: list[str]) -> list[list[str]]:
    """Software events in one group, hardware events in the groups of :data:`GROUPS_OF`
    (events outside them alone)."""
    sw = [e for e in events if EVENTS[e][0] == PERF_TYPE_SOFTWARE]
    hw = [e for e in events if EVENTS[e][0] != PERF_TYPE_SOFTWARE]
    out = [sw] if sw else []
    placed: set[str] = set()
    for g in GROUPS_OF:
        members = [e for e in hw if e in g]
        if members:
            out.append(members)
            placed.update(members)
    out += [[e] for e in hw if e not in placed]
    return out


def open_counters(
    events: tuple[str, ...] | list[str],
    cpus: list[int],
    opener: Opener = perf_event_open,
    pid: int = -1,
) -> tuple[list[CounterGroup], list[str], dict[str, str]]:
    """Open ``events`` on every CPU of ``cpus`` (``pid=-1``: everything running there;
    ``pid=0, cpus=[-1]``: this process on any CPU): (groups, events counted, unsupported →
    reason). An event the host lacks (``ENOENT``, ``EOPNOTSUPP``, ``EINVAL``) is left out;
    a refusal (``EACCES``, ``EPERM``) of every event raises :class:`PerfEventError`.
    Unknown event names (not a generic ``perf`` event) are reported as unsupported."""
    bad: dict[str, str] = {}
    known = []
    for e in events:
        if e in EVENTS:
            known.append(e)
        else:
            bad[e] = "not a generic perf event (use the perf stat child for raw events)"
    # which events this host has: try each alone on the first CPU
    ok: list[str] = []
    denied: OSError | None = None
    for e in known:
        try:
            fd = opener(attr_bytes(*EVENTS[e], read_format=0), pid, cpus[0], -1, PERF_FLAG_FD_CLOEXEC)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                denied = exc
            bad[e] = os.strerror(exc.errno) if exc.errno else str(exc)
            continue
        os.close(fd)
        ok.append(e)
    if not ok:
        if denied is not None:
            raise PerfEventError(denied.errno, f"perf_event_open denied: {denied.strerror or denied}")
        raise PerfEventError(errno.ENOENT, f"no event could be opened: {bad}")
    groups: list[CounterGroup] = []
    try:
        for members in _group_events(ok):
            for c in cpus:
                fds: list[int] = []
                try:
                    # the leader opens disabled and the whole group is enabled at once:
                    # members joining a running CPU-wide leader would only be scheduled
                    # at its next reschedule (and read 0 until then)
                    for e in members:
                        fds.append(opener(attr_bytes(*EVENTS[e], disabled=not fds), pid, c,
                                          fds[0] if fds else -1, PERF_FLAG_FD_CLOEXEC))  # fmt: skip
                    fcntl.ioctl(fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP)
                except OSError:
                    for fd in fds:
                        os.close(fd)
                    raise
                groups.append(CounterGroup(c, list(members), fds))
    except OSError:
        for g in groups:
            g.close()
        raise
    return groups, ok, bad
