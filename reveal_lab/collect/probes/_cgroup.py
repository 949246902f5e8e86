"""Per-container CPU (usage, throttling), memory and I/O from cgroup v2, or from the v1
controllers where v2 lacks them (v1 and hybrid hosts), under the same channel names.

Child cgroups are discovered once at start, breadth-first, up to ``max_cgroups``: in
the v2 tree (``/sys/fs/cgroup`` on a pure v2 host, ``/sys/fs/cgroup/unified`` on a hybrid
one; those with a ``cpu.stat``) and in the v1 ``cpu`` / ``cpuacct`` hierarchies (those
with a ``cpu.stat`` / ``cpuacct.usage``), the union by relative path (container
managers give a container the same path in every hierarchy). ``--cgroup-root`` narrows
this to one subtree, given in any hierarchy (``/sys/fs/cgroup/cpu/docker`` follows
``docker/*`` in every hierarchy). Containers started after the collector are not
followed (the channel set is fixed for a run; see FORMAT.md).

Per cgroup and metric the v2 file is used where it has the values, else the v1 one:

| channels | v2 | v1 |
|---|---|---|
| ``cpu_usage_usec``, ``cpu_user_usec``, ``cpu_system_usec`` | ``cpu.stat`` | ``cpuacct.usage`` (ns), ``cpuacct.stat`` (USER_HZ ticks) |
| ``cpu_nr_periods``, ``cpu_nr_throttled``, ``cpu_throttled_usec`` | ``cpu.stat`` | ``cpu.stat`` of the ``cpu`` controller (``throttled_time`` in ns) |
| ``memory_current`` | ``memory.current`` | ``memory.usage_in_bytes`` |
| ``io_rbytes``, ``io_wbytes``, ``io_rios``, ``io_wios`` | ``io.stat`` | ``blkio.throttle.io_service_bytes`` / ``io_serviced`` (Read, Write summed over devices) |

``probe_info.cgroup.sources`` records, per cgroup, which version each metric came from.
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


V1_CONTROLLERS = ("cpu", "cpuacct", "memory", "blkio")
USER_HZ = os.sysconf("SC_CLK_TCK")


def default_root() -> str | None:
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(root, "cgroup.controllers")):
            return root
    return None


def cgroup_mounts(mounts: str = "/proc/self/mounts") -> tuple[str | None, dict[str, str]]:
    """(the v2 mount point or ``None``, ``{v1 controller: its mount point}``) from a
    ``/proc/mounts``-format file; only the controllers of :data:`V1_CONTROLLERS`."""
    v2: str | None = None
    v1: dict[str, str] = {}
    try:
        lines = open(mounts).read().splitlines()  # noqa: SIM115
    except OSError:
        return None, {}
    for line in lines:
        parts = line.split()
        if len(parts) < 4:
            continue
        point = parts[1].replace("\\040", " ")
        if parts[2] == "cgroup2" and v2 is None:
            v2 = point
        elif parts[2] == "cgroup":
            for opt in parts[3].split(","):
                if opt in V1_CONTROLLERS:
                    v1.setdefault(opt, point)
    return v2, v1


def discover(root: str, limit: int, max_depth: int = 4, marker: str = "cpu.stat") -> list[str]:
    """Relative paths of child cgroups (breadth first, those with a ``marker`` file)."""
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
            if os.path.exists(os.path.join(root, child, marker)):
                found.append(child)
                if len(found) >= limit:
                    break
            if depth + 1 < max_depth:
                queue.append((child, depth + 1))
    return found


def _kv(data: bytes) -> dict[bytes, int]:
    toks = data.split()
    return {toks[i]: int(toks[i + 1]) for i in range(0, len(toks) - 1, 2)}


def parse_blkio(data: bytes) -> tuple[int, int]:
    """(Read, Write) summed over devices from a v1 ``blkio.*io_service_bytes`` /
    ``io_serviced`` file (``Total`` lines and the file's last ``Total`` left out).

    >>> parse_blkio(b"8:0 Read 4096\\n8:0 Write 512\\n8:0 Total 4608\\n8:16 Read 1\\nTotal 4609\\n")
    (4097, 512)
    """
    r = w = 0
    for line in data.split(b"\n"):
        t = line.split()
        if len(t) == 3:
            if t[1] == b"Read":
                r += int(t[2])
            elif t[1] == b"Write":
                w += int(t[2])
    return r, w


class _Scope:
    """Where one cgroup's files are: its v2 directory and its v1 directories by controller."""

    def __init__(self, v2: str | None, v1: dict[str, str], prefix: str) -> None:
        self.v2 = os.path.normpath(os.path.join(v2, prefix)) if v2 else None
        self.v1 = {c: os.path.normpath(os.path.join(m, prefix)) for c, m in v1.items()}
        if self.v2 is not None and not os.path.isdir(self.v2):
            self.v2 = None
        self.v1 = {c: d for c, d in self.v1.items() if os.path.isdir(d)}


def _scope(ctx_root: str | None, mounts: str = "/proc/self/mounts") -> _Scope:
    """The hierarchies to follow, narrowed to ``ctx_root``'s subtree when given."""
    v2, v1 = cgroup_mounts(mounts)
    if v2 is not None and not os.path.exists(os.path.join(v2, "cgroup.controllers")):
        v2 = None
    if ctx_root is None:
        return _Scope(v2 or default_root(), v1, "")
    root = os.path.abspath(ctx_root)
    for point in ([v2] if v2 else []) + sorted(set(v1.values()), key=len, reverse=True):
        if root == point or root.startswith(point.rstrip("/") + "/"):
            rel = os.path.relpath(root, point)
            return _Scope(v2, v1, "" if rel == "." else rel)
    if os.path.exists(os.path.join(root, "cgroup.controllers")):  # a v2 tree mounted elsewhere
        return _Scope(root, {}, "")
    raise ProbeUnavailable(f"no cgroup v2 hierarchy or v1 controller at {ctx_root}")


def _open(path: str | None) -> int | None:
    if path is None:
        return None
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


class _Group:
    """One cgroup's open files and which version each metric reads."""

    def __init__(self, scope: _Scope, rel: str) -> None:
        def v2(f: str) -> str | None:
            return os.path.join(scope.v2, rel, f) if scope.v2 else None

        def v1(c: str, f: str) -> str | None:
            return os.path.join(scope.v1[c], rel, f) if c in scope.v1 else None

        self.fds: list[int] = []
        self.src: dict[str, str] = {}
        cpu2 = self._fd(v2("cpu.stat"))
        keys2 = _kv(os.pread(cpu2, 4096, 0)) if cpu2 is not None else {}
        self.cpu2 = cpu2 if b"usage_usec" in keys2 else None
        self.thr2 = cpu2 if b"nr_periods" in keys2 else None
        self.acct_usage = self.acct_stat = self.thr1 = None
        if self.cpu2 is None:
            self.acct_usage = self._fd(v1("cpuacct", "cpuacct.usage"))
            self.acct_stat = self._fd(v1("cpuacct", "cpuacct.stat"))
        if self.thr2 is None:
            self.thr1 = self._fd(v1("cpu", "cpu.stat"))
        self.src["cpu"] = "v2" if self.cpu2 is not None else ("v1" if self.acct_usage is not None else "-")
        self.src["throttling"] = "v2" if self.thr2 is not None else ("v1" if self.thr1 is not None else "-")
        self.mem2 = self._fd(v2("memory.current"))
        self.mem1 = self._fd(v1("memory", "memory.usage_in_bytes")) if self.mem2 is None else None
        self.src["memory"] = "v2" if self.mem2 is not None else ("v1" if self.mem1 is not None else "-")
        self.io2 = self._fd(v2("io.stat"))
        self.io1_bytes = self.io1_ops = None
        if self.io2 is None:
            self.io1_bytes = self._fd(v1("blkio", "blkio.throttle.io_service_bytes"))
            self.io1_ops = self._fd(v1("blkio", "blkio.throttle.io_serviced"))
        self.src["io"] = "v2" if self.io2 is not None else ("v1" if self.io1_bytes is not None else "-")

    def _fd(self, path: str | None) -> int | None:
        fd = _open(path)
        if fd is not None:
            self.fds.append(fd)
        return fd

    def found(self) -> bool:
        return any(v != "-" for v in self.src.values())

    def read(self, out: list[int]) -> None:
        """Append the 11 values (``CPU_KEYS``, memory, ``IO_KEYS``) to ``out``."""
        miss = MISSING_INT
        kv: dict[bytes, int] = {}
        if self.cpu2 is not None or self.thr2 is not None:
            try:
                kv = _kv(os.pread(self.cpu2 if self.cpu2 is not None else self.thr2, 4096, 0))
            except OSError:  # cgroup removed since start
                kv = {}
        if self.cpu2 is not None:
            out += [kv.get(b"usage_usec", miss), kv.get(b"user_usec", miss), kv.get(b"system_usec", miss)]
        else:
            try:
                usage = int(os.pread(self.acct_usage, 64, 0)) // 1000 if self.acct_usage is not None else miss
            except (OSError, ValueError):
                usage = miss
            try:
                st = _kv(os.pread(self.acct_stat, 256, 0)) if self.acct_stat is not None else {}
            except OSError:
                st = {}
            us = 1_000_000 // USER_HZ
            user, system = st.get(b"user"), st.get(b"system")
            out += [usage, miss if user is None else user * us, miss if system is None else system * us]
        if self.thr2 is not None:
            out += [kv.get(k, miss) for k in (b"nr_periods", b"nr_throttled", b"throttled_usec")]
        else:
            try:
                t = _kv(os.pread(self.thr1, 1024, 0)) if self.thr1 is not None else {}
            except OSError:
                t = {}
            ns = t.get(b"throttled_time")
            out += [t.get(b"nr_periods", miss), t.get(b"nr_throttled", miss)]
            out.append(miss if ns is None else ns // 1000)
        mem = self.mem2 if self.mem2 is not None else self.mem1
        try:
            out.append(int(os.pread(mem, 64, 0)) if mem is not None else miss)
        except (OSError, ValueError):
            out.append(miss)
        if self.io2 is not None:
            try:
                tot = dict.fromkeys(IO_KEYS, 0)
                for tok in read_all(self.io2).split():
                    k, eq, v = tok.partition(b"=")
                    if eq and k.decode() in tot:
                        tot[k.decode()] += int(v)
                out += [tot[k] for k in IO_KEYS]
            except OSError:
                out += [miss] * len(IO_KEYS)
        elif self.io1_bytes is not None:
            try:
                rb, wb = parse_blkio(read_all(self.io1_bytes))
                ro, wo = parse_blkio(read_all(self.io1_ops)) if self.io1_ops is not None else (miss, miss)
                out += [rb, wb, ro, wo]
            except (OSError, ValueError):
                out += [miss] * len(IO_KEYS)
        else:
            out += [miss] * len(IO_KEYS)

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


@register_probe
class Cgroups(Probe):
    """Per child cgroup: CPU usage and throttling, memory in use, I/O bytes and ops."""

    name, group = "cgroup", "cgroup"
    description = "cgroup children: cpu usage and throttling, memory, I/O (v2, or v1 controllers)"

    def open(self, ctx: ProbeContext) -> None:
        scope = _scope(ctx.cgroup_root, ctx.options.get("cgroup_mounts", "/proc/self/mounts"))
        if scope.v2 is None and not scope.v1:
            where = ctx.cgroup_root or "/sys/fs/cgroup"
            raise ProbeUnavailable(f"no cgroup v2 hierarchy or v1 controller at {where}")
        rels: dict[str, None] = {}
        if scope.v2 is not None:
            rels.update(dict.fromkeys(discover(scope.v2, ctx.max_cgroups)))
        markers = (("cpu", "cpu.stat"), ("cpuacct", "cpuacct.usage"), ("memory", "memory.usage_in_bytes"))
        for ctrl, marker in markers:
            if ctrl in scope.v1 and len(rels) < ctx.max_cgroups:
                rels.update(dict.fromkeys(discover(scope.v1[ctrl], ctx.max_cgroups, marker=marker)))
        self.groups: list[_Group] = []
        names = []
        for rel in list(rels)[: ctx.max_cgroups]:
            g = _Group(scope, rel)
            if not g.found():
                g.close()
                continue
            self.groups.append(g)
            names.append(rel)
        if not self.groups:
            v1_roots = ", ".join(sorted(set(scope.v1.values()))) or "-"
            raise ProbeUnavailable(f"no child cgroups under {scope.v2 or '-'} (v2) or {v1_roots} (v1)")
        self.channels = []
        for rel in names:
            inst = sanitize_instance(rel)
            self.channels += [
                Channel("Cgroup", ch, inst, "us" if ch.endswith("usec") else "count", counter=True)
                for _, ch in CPU_KEYS
            ]
            self.channels.append(Channel("Cgroup", "memory_current", inst, "Bytes"))
            self.channels += [
                Channel("Cgroup", f"io_{k}", inst, "Bytes" if k.endswith("bytes") else "count", counter=True)
                for k in IO_KEYS
            ]
        sources = {n: g.src for n, g in zip(names, self.groups, strict=True)}
        self.info.update(root=scope.v2, v1_roots=scope.v1, cgroups=names, sources=sources)

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        ints[:] = self._collect()

    def _collect(self) -> list[int]:
        out: list[int] = []
        for g in self.groups:
            g.read(out)
        return out

    def close(self) -> None:
        for g in getattr(self, "groups", ()):
            g.close()
