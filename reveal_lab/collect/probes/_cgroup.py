"""cgroup v2 per-container ``cpu.stat``, ``memory.current`` and ``io.stat``.

Child cgroups are discovered once at start under a root (``--cgroup-root``;
default: ``/sys/fs/cgroup`` on a pure v2 host, ``/sys/fs/cgroup/unified`` on a
hybrid one), breadth-first, keeping cgroups that have processes or children
with processes, up to ``max_cgroups``. Containers started after the collector
are not followed (the channel set is fixed for a run; see FORMAT.md).
"""

from __future__ import annotations

import os
from collections import deque

import numpy as np

from reveal_lab.collect._probe import (
    MISSING_INT,
    Channel,
    Probe,
    ProbeContext,
    ProbeUnavailable,
    read_all,
    register_probe,
    sanitize_instance,
)

CPU_KEYS = (
    ("usage_usec", "cpu_usage_usec"),
    ("user_usec", "cpu_user_usec"),
    ("system_usec", "cpu_system_usec"),
    ("nr_periods", "cpu_nr_periods"),
    ("nr_throttled", "cpu_nr_throttled"),
    ("throttled_usec", "cpu_throttled_usec"),
)
IO_KEYS = ("rbytes", "wbytes", "rios", "wios")


def default_root() -> str | None:
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(root, "cgroup.controllers")):
            return root
    return None


def discover(root: str, limit: int, max_depth: int = 4) -> list[str]:
    """Relative paths of child cgroups (breadth first, those with a ``cpu.stat``)."""
    found: list[str] = []
    queue = deque([("", 0)])
    while queue and len(found) < limit:
        rel, depth = queue.popleft()
        base = os.path.join(root, rel)
        try:
            entries = sorted(e.name for e in os.scandir(base) if e.is_dir(follow_symlinks=False))
        except OSError:
            continue
        for name in entries:
            child = os.path.join(rel, name) if rel else name
            if os.path.exists(os.path.join(root, child, "cpu.stat")):
                found.append(child)
                if len(found) >= limit:
                    break
            if depth + 1 < max_depth:
                queue.append((child, depth + 1))
    return found


def _kv(data: bytes) -> dict[bytes, int]:
    toks = data.split()
    return {toks[i]: int(toks[i + 1]) for i in range(0, len(toks) - 1, 2)}


@register_probe
class Cgroups(Probe):
    """Per child cgroup: CPU usage and throttling, memory in use, I/O bytes and ops."""

    name, group = "cgroup", "cgroup"
    description = "cgroup v2 children: cpu.stat, memory.current, io.stat"

    def open(self, ctx: ProbeContext) -> None:
        root = ctx.cgroup_root or default_root()
        if root is None or not os.path.exists(os.path.join(root, "cgroup.controllers")):
            raise ProbeUnavailable(f"no cgroup v2 hierarchy at {root or '/sys/fs/cgroup(/unified)'}")
        groups = discover(root, ctx.max_cgroups)
        if not groups:
            raise ProbeUnavailable(f"no child cgroups under {root}")
        self.groups: list[tuple[int | None, int | None, int | None]] = []
        self.channels = []
        names = []
        for rel in groups:
            inst = sanitize_instance(rel)
            fds = []
            for f in ("cpu.stat", "memory.current", "io.stat"):
                try:
                    fds.append(os.open(os.path.join(root, rel, f), os.O_RDONLY | os.O_CLOEXEC))
                except OSError:
                    fds.append(None)
            self.groups.append(tuple(fds))  # type: ignore[arg-type]
            names.append(rel)
            self.channels += [
                Channel("Cgroup", ch, inst, "us" if ch.endswith("usec") else "count", counter=True)
                for _, ch in CPU_KEYS
            ]
            self.channels.append(Channel("Cgroup", "memory_current", inst, "Bytes"))
            self.channels += [
                Channel("Cgroup", f"io_{k}", inst, "Bytes" if k.endswith("bytes") else "count", counter=True)
                for k in IO_KEYS
            ]
        self.info.update(root=root, cgroups=names)

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        ints[:] = self._collect()

    def _collect(self) -> list[int]:
        ints: list[int] = []
        for cpu_fd, mem_fd, io_fd in self.groups:
            try:
                kv = _kv(os.pread(cpu_fd, 1024, 0)) if cpu_fd is not None else {}
                ints.extend(kv.get(k.encode(), MISSING_INT) for k, _ in CPU_KEYS)
            except OSError:  # cgroup removed since start
                ints.extend([MISSING_INT] * len(CPU_KEYS))
            try:
                ints.append(int(os.pread(mem_fd, 64, 0)) if mem_fd is not None else MISSING_INT)
            except (OSError, ValueError):
                ints.append(MISSING_INT)
            if io_fd is None:
                ints.extend([MISSING_INT] * len(IO_KEYS))
                continue
            try:
                tot = dict.fromkeys(IO_KEYS, 0)
                for tok in read_all(io_fd).split():
                    k, eq, v = tok.partition(b"=")
                    if eq and k.decode() in tot:
                        tot[k.decode()] += int(v)
                ints.extend(tot[k] for k in IO_KEYS)
            except OSError:
                ints.extend([MISSING_INT] * len(IO_KEYS))
        return ints

    def close(self) -> None:
        for fds in self.groups:
            for fd in fds:
                if fd is not None:
                    os.close(fd)
