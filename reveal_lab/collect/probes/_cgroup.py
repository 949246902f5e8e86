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

Each file is a :class:`~reveal_lab.collect.probes._table.Table` and the channels are
:meth:`Cgroups.compiled_ops` on their values (copies, ``ns``/ticks to ``us``, sums over the
devices of an I/O file), so the compiled hot loop samples cgroups itself, without a
Python call per tick; :meth:`Cgroups.sample` applies the same ops in Python. A file
whose layout changes (a device's first I/O adds a line to ``io.stat``) sends the probe back
to Python, which sums over the devices listed now; the files of a removed cgroup (their reads
fail) are read as empty files from then on, its channels missing, in the compiled ops too.
"""

from __future__ import annotations

import os
from collections import deque

import numpy as np

from reveal_lab.collect._probe import (
    MISSING_INT,
    OP_COPY,
    OP_DIV,
    OP_MISSING,
    OP_MUL,
    OP_SUM,
    OP_ZERO,
    Channel,
    Probe,
    ProbeContext,
    ProbeUnavailable,
    apply_ops_py,
    read_all,
    sanitize_instance,
)
from reveal_lab.collect.probes._scan import DECIMALS, split_blanks
from reveal_lab.collect.probes._table import Layout, Table

CPU_KEYS = (
    ("usage_usec", "cpu_usage_usec"),
    ("user_usec", "cpu_user_usec"),
    ("system_usec", "cpu_system_usec"),
    ("nr_periods", "cpu_nr_periods"),
    ("nr_throttled", "cpu_nr_throttled"),
    ("throttled_usec", "cpu_throttled_usec"),
)
IO_KEYS = ("rbytes", "wbytes", "rios", "wios")
#: channels per cgroup: ``CPU_KEYS``, ``memory_current``, ``IO_KEYS``
N_PER_GROUP = len(CPU_KEYS) + 1 + len(IO_KEYS)


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


def _single_index(lines: list[bytes]) -> Layout:
    """A one-value file (``memory.current``, ``cpuacct.usage``)."""
    return ({"value": (0, 0)} if lines and lines[0].split() else {}), {}


def _kv_index(lines: list[bytes]) -> Layout:
    """``key value`` lines (``cpu.stat``, ``cpuacct.stat``)."""
    mapping: dict = {}
    for ln, line in enumerate(lines):
        t = line.split()
        if len(t) == 2:
            mapping[t[0].decode()] = (ln, 1)
    return mapping, {}


def _io_index(lines: list[bytes]) -> Layout:
    """v2 ``io.stat``: ``MAJ:MIN rbytes=1 wbytes=2 rios=3 ...`` per device, split at ``:`` and
    ``=`` (:data:`DECIMALS` mode): keys ``(device, name)``."""
    mapping: dict = {}
    for ln, line in enumerate(lines):
        t = split_blanks(line, DECIMALS).split()
        if len(t) < 2:
            continue
        dev = t[0].decode() + ":" + t[1].decode()
        for i in range(2, len(t) - 1, 2):
            name = t[i].decode()
            if name in IO_KEYS:
                mapping[(dev, name)] = (ln, i + 1)
    return mapping, {}


def _blkio_index(lines: list[bytes]) -> Layout:
    """v1 ``blkio.throttle.io_service_bytes`` / ``io_serviced``: ``MAJ:MIN Read N`` lines
    (split at ``:``): keys ``(device, "Read" | "Write")``."""
    mapping: dict = {}
    for ln, line in enumerate(lines):
        t = line.replace(b":", b" ").split()
        if len(t) == 4 and t[2] in (b"Read", b"Write"):
            mapping[(t[0].decode() + ":" + t[1].decode(), t[2].decode())] = (ln, 3)
    return mapping, {}


def _io_sums(data: bytes, v2: bool) -> list[int]:
    """``IO_KEYS`` summed over every device the file lists now (v1: bytes file only gives
    ``rbytes, wbytes``)."""
    if v2:
        tot = dict.fromkeys(IO_KEYS, 0)
        for tok in data.split():
            k, eq, v = tok.partition(b"=")
            if eq and k.decode() in tot:
                tot[k.decode()] += int(v)
        return [tot[k] for k in IO_KEYS]
    return list(parse_blkio(data))


class _Group:
    """One cgroup: a :class:`Table` per file it reads and the ops that turn their values
    into the group's 11 channels (``CPU_KEYS``, memory, ``IO_KEYS``), v2 where it has the
    values, else v1 (``ns`` and ``USER_HZ`` ticks converted to ``us``)."""

    def __init__(self, ctx: ProbeContext, scope: _Scope, rel: str) -> None:
        def v2(f: str) -> str | None:
            return os.path.join(scope.v2, rel, f) if scope.v2 else None

        def v1(c: str, f: str) -> str | None:
            return os.path.join(scope.v1[c], rel, f) if c in scope.v1 else None

        self.ctx = ctx
        self.tables: list[Table] = []
        #: ``(table, kind, a, b, channel, scale)``: ``table`` indexes :attr:`tables`
        self.ops: list[tuple[int, int, int, int, int, int]] = []
        self.src: dict[str, str] = {}
        #: ``(table, v2?, first channel)`` of the I/O files
        self.io_tables: list[tuple[int, bool, int]] = []
        cpu2 = self._table(v2("cpu.stat"), _kv_index)
        has = set(self.tables[cpu2].keys) if cpu2 is not None else set()
        # cpu usage: v2 cpu.stat, else cpuacct.usage (ns) and cpuacct.stat (ticks)
        if "usage_usec" in has:
            self.src["cpu"] = "v2"
            for ch, key in enumerate(("usage_usec", "user_usec", "system_usec")):
                self._copy(cpu2, key, ch)
        else:
            usage = self._table(v1("cpuacct", "cpuacct.usage"), _single_index)
            stat = self._table(v1("cpuacct", "cpuacct.stat"), _kv_index)
            self.src["cpu"] = "v1" if usage is not None else "-"
            self._copy(usage, "value", 0, OP_DIV, 1000)
            us = 1_000_000 // USER_HZ
            self._copy(stat, "user", 1, OP_MUL, us)
            self._copy(stat, "system", 2, OP_MUL, us)
        # throttling: v2 cpu.stat (cpu controller on v2), else the v1 cpu controller's cpu.stat
        if "nr_periods" in has:
            self.src["throttling"] = "v2"
            for ch, key in enumerate(("nr_periods", "nr_throttled", "throttled_usec"), start=3):
                self._copy(cpu2, key, ch)
        else:
            thr = self._table(v1("cpu", "cpu.stat"), _kv_index)
            self.src["throttling"] = "v1" if thr is not None else "-"
            self._copy(thr, "nr_periods", 3)
            self._copy(thr, "nr_throttled", 4)
            self._copy(thr, "throttled_time", 5, OP_DIV, 1000)
        mem = self._table(v2("memory.current"), _single_index)
        self.src["memory"] = "v2" if mem is not None else "-"
        if mem is None:
            mem = self._table(v1("memory", "memory.usage_in_bytes"), _single_index)
            self.src["memory"] = "v1" if mem is not None else "-"
        self._copy(mem, "value", 6)
        io2 = self._table(v2("io.stat"), _io_index, mode=DECIMALS)
        if io2 is not None:
            self.src["io"] = "v2"
            self.io_tables = [(io2, True, 7)]
            for ch, name in enumerate(IO_KEYS, start=7):
                self._sum(io2, name, ch)
        else:
            nbytes = self._table(v1("blkio", "blkio.throttle.io_service_bytes"), _blkio_index, mode=1)
            nops = self._table(v1("blkio", "blkio.throttle.io_serviced"), _blkio_index, mode=1)
            self.src["io"] = "v1" if nbytes is not None else "-"
            if nbytes is None:
                nops = None
            for t, start in ((nbytes, 7), (nops, 9)):
                if t is not None:
                    self.io_tables.append((t, False, start))
                for ch, name in enumerate(("Read", "Write"), start=start):
                    self._sum(t, name, ch)

    def _table(self, path: str | None, index, mode: int = 0) -> int | None:  # noqa: ANN001
        if path is None or not os.path.exists(path):
            return None
        try:
            t = Table(self.ctx, path, index, colons=mode)
        except (ProbeUnavailable, OSError, ValueError):
            return None
        self.tables.append(t)
        return len(self.tables) - 1

    def _copy(self, t: int | None, key: str, ch: int, kind: int = OP_COPY, scale: int = 1) -> None:
        keys = self.tables[t].keys if t is not None else []
        if key in keys:
            self.ops.append((t, kind, keys.index(key), 0, ch, scale))
        else:
            self.ops.append((max(t or 0, 0), OP_MISSING, 0, 0, ch, 1))

    def _sum(self, t: int | None, name: str, ch: int) -> None:
        """Channel ``ch`` = the sum of ``name`` over the devices the file listed at start (a
        device appearing later changes the file's layout: the Python path then sums afresh)."""
        if t is None:
            self.ops.append((0, OP_MISSING, 0, 0, ch, 1))
            return
        self.ops.append((t, OP_ZERO, 0, 0, ch, 1))
        for i, key in enumerate(self.tables[t].keys):
            if key[1] == name:
                self.ops.append((t, OP_SUM, i, 0, ch, 1))

    def found(self) -> bool:
        return any(v != "-" for v in self.src.values())

    def close(self) -> None:
        for t in self.tables:
            t.close()
        self.tables = []


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
            g = _Group(ctx, scope, rel)
            if not g.found():
                g.close()
                continue
            self.groups.append(g)
            names.append(rel)
        if not self.groups:
            v1_roots = ", ".join(sorted(set(scope.v1.values()))) or "-"
            raise ProbeUnavailable(f"no child cgroups under {scope.v2 or '-'} (v2) or {v1_roots} (v1)")
        # every group's tables in row order, and its ops made probe-wide
        self.tables: list[Table] = []
        self._ops: list[tuple[int, int, int, int, int, int]] = []
        self._io: list[tuple[int, bool, int]] = []  # (table, v2?, first channel) of the I/O files
        for gi, g in enumerate(self.groups):
            t0, c0 = len(self.tables), gi * N_PER_GROUP
            self.tables += g.tables
            self._ops += [(t0 + t, k, a, b, c0 + ch, sc) for t, k, a, b, ch, sc in g.ops]
            self._io += [(t0 + t, v2, c0 + ch) for t, v2, ch in g.io_tables]
        self._vals = [np.full(t.n, MISSING_INT, dtype=np.int64) for t in self.tables]
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

    def compiled_ops(self) -> list[tuple[int, int, int, int, int, int]] | None:
        """The ops :meth:`sample` applies, those of a removed cgroup's files (:meth:`Table.vanish`)
        writing their channels missing; none once a file changed its layout (a device appeared
        in an I/O file): the Python path then sums afresh."""
        if any(t.relayouts for t in self.tables):
            return None
        gone = {i for i, t in enumerate(self.tables) if t.gone}
        return [
            (t, OP_MISSING, 0, 0, ch, 1) if t in gone else (t, k, a, b, ch, sc) for t, k, a, b, ch, sc in self._ops
        ]

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        for t, v in zip(self.tables, self._vals, strict=True):
            try:
                t.read_into(v)
            except OSError:  # the cgroup was removed since start: its files read as empty from now on
                t.vanish()
                v[:] = MISSING_INT
        apply_ops_py(self._ops, self._vals, ints, floats)
        for t, v2, ch in self._io:  # a device listed since start: sum over the devices listed now
            table = self.tables[t]
            if table.relayouts:
                try:
                    sums = _io_sums(read_all(table.fd), v2)
                except (OSError, ValueError):
                    sums = [MISSING_INT] * (4 if v2 else 2)
                ints[ch : ch + len(sums)] = sums

    def close(self) -> None:
        for g in getattr(self, "groups", ()):
            g.close()
