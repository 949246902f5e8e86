"""The probe interface.

A probe reads one family of sources (``/proc/stat``, ``perf stat``, NVML, ...).
It is opened once (files opened, children started, channels discovered), then
sampled on every tick, then closed. Sampling writes one value per integer channel
into ``ints`` and one per float channel into ``floats`` (numpy views of the
sample row, exactly as long as the probe's channel lists); a value the probe
could not read this tick is :data:`MISSING_INT` or ``nan``.

Adding a probe is a subclass, listed in :data:`reveal_lab.collect.probes.ALL_PROBES`::

    class Uptime(Probe):
        name, group = "uptime", "procfs"

        def open(self, ctx):
            self.fd = ctx.open_ro("/proc/uptime")
            self.channels = [Channel("System", "uptime", None, "s", counter=False, dtype="f")]

        def sample(self, ints, floats):
            floats[0] = float(os.pread(self.fd, 64, 0).split()[0])
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from reveal_lab.telemetry import MetricName, format_metric_name

__all__ = [
    "MISSING_INT",
    "Channel",
    "Probe",
    "TableProbe",
    "ProbeContext",
    "ProbeUnavailable",
    "GROUPS",
    "sanitize_instance",
    "OP_COPY",
    "OP_ZERO",
    "OP_ADD",
    "OP_FIXED",
    "OP_DIV",
    "OP_MUL",
    "OP_MISSING",
    "OP_SUM",
    "OP_COLSUM",
    "apply_ops_py",
    "fixed_point",
]

log = logging.getLogger("reveal_lab.collect")

#: sentinel for "no value this tick" in integer channels (stored as null)
MISSING_INT = -(2**63)

#: probe groups a user can name in ``--probes`` (besides single probe names)
GROUPS: dict[str, str] = {
    "procfs": "/proc and /sys readers (no privileges needed)",
    "cgroup": "per-container cpu, throttling, memory, I/O (cgroup v2, or the v1 controllers)",
    "perf": "per-core perf counters (perf_event_open, or one long-lived `perf stat -I` child)",
    "turbostat": "one long-lived `turbostat` child",
    "gpu": "NVML (nvidia-ml-py) or a long-lived `nvidia-smi -lms` child",
    "self": "the collector's own timing (lag, missed ticks, CPU time)",
}


class ProbeUnavailable(RuntimeError):
    """A probe cannot run here (missing file, tool, device or permission)."""


def sanitize_instance(name: str) -> str:
    """Instance names may not contain dots, brackets, colons, slashes or spaces.

    >>> sanitize_instance("eth0.100"), sanitize_instance("system.slice/docker-1.scope")
    ('eth0-100', 'system-slice-docker-1-scope')
    """
    out = "".join("-" if c in ".[]:/ \t" else c for c in name.strip()).strip("-")
    return out or "_"


@dataclass(frozen=True, slots=True)
class Channel:
    """One column a probe produces.

    ``counter`` marks a cumulative counter: stored raw, turned into first
    differences (``<Source>_diff``) in the dataset view. ``dataset_source``
    overrides the source used in the dataset view (``""`` keeps the channel out
    of the dataset view); ``perf`` counts, for instance, keep ``Perf`` without
    ``_diff`` to match the public dataset.
    """

    source: str
    field: str
    instance: str | None
    unit: str | None
    counter: bool = False
    dtype: Literal["i", "f"] = "i"
    dataset_source: str | None = None

    def name(self, host: str) -> str:
        return format_metric_name(MetricName(self.source, self.field, host, self.instance, self.unit))

    def dataset_name(self, host: str) -> str | None:
        src = self.dataset_source
        if src == "":
            return None
        if src is None:
            src = self.source + ("_diff" if self.counter else "")
        diff = src.endswith("_diff")
        base = src[:-5] if diff else src
        return format_metric_name(MetricName(base, self.field, host, self.instance, self.unit, diff=diff))

    def to_dict(self, host: str, probe: str) -> dict[str, Any]:
        """The ``channels.json`` entry (source, field, instance and unit are in ``name``)."""
        d = asdict(self)
        return {
            "name": self.name(host),
            "dataset": self.dataset_name(host),
            "probe": probe,
            "counter": d["counter"],
            "dtype": d["dtype"],
            "unit": d["unit"],
            "field": d["field"],
            "instance": d["instance"],
        }


@dataclass
class ProbeContext:
    """What a probe may use while opening: options and the host name.

    ``proc_root`` and ``sys_root`` are where the procfs probes find ``/proc`` and
    ``/sys`` (:meth:`proc`, :meth:`sys`): another tree in the kernel's formats, such as a
    synthetic one of many cores (``benchmarks/collector_cores.py``), is read exactly as
    the host's.

    >>> ctx = ProbeContext("h", 0.1, proc_root="/tmp/tree/proc")
    >>> ctx.proc("/proc/self/net/dev"), ctx.sys("/sys/block")
    ('/tmp/tree/proc/self/net/dev', '/sys/block')
    """

    host: str
    interval_s: float
    cgroup_root: str | None = None
    max_cgroups: int = 16
    perf_events: tuple[str, ...] | None = None
    gpu_backend: str = "auto"  # auto | nvml | nvidia-smi
    options: dict[str, Any] = field(default_factory=dict)
    proc_root: str = "/proc"
    sys_root: str = "/sys"

    def proc(self, path: str) -> str:
        """``/proc/...`` under :attr:`proc_root`."""
        return self.proc_root.rstrip("/") + path[len("/proc") :] if path.startswith("/proc/") else path

    def sys(self, path: str) -> str:
        """``/sys/...`` under :attr:`sys_root`."""
        return self.sys_root.rstrip("/") + path[len("/sys") :] if path.startswith("/sys/") else path

    def open_ro(self, path: str) -> int:
        try:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise ProbeUnavailable(f"{path} does not exist") from None
        except PermissionError:
            raise ProbeUnavailable(f"no permission to read {path} (uid {os.getuid()})") from None


def read_all(fd: int, hint: int = 4096) -> bytes:
    """Read a whole (proc) file from offset 0 with ``pread`` until end of file.

    One read is not enough: proc files built record by record (``/proc/interrupts``,
    ``vmstat``, ``diskstats``, ``net/dev``, ``net/unix``) return at most one page
    per read, whatever the buffer size; the next ``pread`` at the offset reached
    continues where the last one stopped (seq_file keeps its position)."""
    parts = [os.pread(fd, max(hint, 4096), 0)]
    got = len(parts[0])
    while parts[-1]:
        parts.append(os.pread(fd, max(hint, 4096), got))
        got += len(parts[-1])
    return b"".join(parts)


#: kinds of :meth:`Probe.compiled_ops`
OP_COPY, OP_ZERO, OP_ADD, OP_FIXED = 0, 1, 2, 3
#: more kinds, each keeping a missing value missing: ``a // scale`` (ns to us), ``a * scale``
#: (ticks to us), the missing value itself (no source for the channel), ``dst + a``
OP_DIV, OP_MUL, OP_MISSING, OP_SUM = 4, 5, 6, 7
#: ``dst = a[0] + a[scale] + ... + a[(b - 1) * scale]``: a column of a table of ``b`` rows of
#: ``scale`` values summed in one op, a missing value counting as zero (per-core sums of
#: ``/proc/interrupts``' device rows, an IRQ freed since start adding nothing)
OP_COLSUM = 8


def apply_ops_py(
    ops: list[tuple[int, int, int, int, int, int]], values: list[np.ndarray], ints: np.ndarray, floats: np.ndarray
) -> None:
    """What the compiled loop's ``apply_ops`` does, in Python: each op of
    :meth:`Probe.compiled_ops` on ``values[table]`` into the probe's ``ints``/``floats``
    (a probe whose :meth:`Probe.sample` is this gives exactly the compiled result).

    >>> ints = np.zeros(5, dtype=np.int64)
    >>> ops = [(0, OP_DIV, 0, 0, 0, 1000), (0, OP_MUL, 1, 0, 1, 10), (0, OP_MISSING, 0, 0, 2, 1),
    ...        (0, OP_ZERO, 0, 0, 3, 1), (0, OP_SUM, 0, 0, 3, 1), (0, OP_SUM, 1, 0, 3, 1),
    ...        (0, OP_COLSUM, 1, 2, 4, 1)]
    >>> apply_ops_py(ops, [np.array([2500000, 7, 3])], ints, np.zeros(0))
    >>> ints.tolist() == [2500, 70, MISSING_INT, 2500007, 10]
    True
    >>> apply_ops_py([(0, OP_COLSUM, 0, 3, 0, 1)], [np.array([4, MISSING_INT, 5])], ints, np.zeros(0))
    >>> int(ints[0])
    9
    """
    miss = MISSING_INT
    for t, kind, a, b, dst, scale in ops:
        v = values[t]
        if kind == OP_COPY:
            ints[dst] = v[a]
        elif kind == OP_ZERO:
            ints[dst] = 0
        elif kind == OP_ADD:
            ints[dst] += v[a]
        elif kind == OP_FIXED:
            floats[dst] = fixed_point(v[a], v[b], scale)
        elif kind == OP_DIV:
            ints[dst] = miss if v[a] == miss else v[a] // scale
        elif kind == OP_MUL:
            ints[dst] = miss if v[a] == miss else v[a] * scale
        elif kind == OP_MISSING:
            ints[dst] = miss
        elif kind == OP_SUM:
            ints[dst] = miss if v[a] == miss or ints[dst] == miss else ints[dst] + v[a]
        elif kind == OP_COLSUM:
            col = v[a : a + b * scale : scale] if b > 0 else v[:0]
            ints[dst] = int(col[col != miss].sum())
        else:
            raise ValueError(f"unknown op kind {kind}")


def fixed_point(whole: np.ndarray | int, frac: np.ndarray | int, scale: int) -> Any:
    """``whole.frac`` with ``frac`` in units of ``1 / scale``, correctly rounded (one
    division of exact integers: equal to ``float("whole.frac")``)."""
    return (np.asarray(whole, dtype=np.int64) * scale + frac) / scale


class Probe:
    """Base class. Subclasses set ``name`` and ``group`` and implement :meth:`open`
    and :meth:`sample`; :meth:`close` releases files and children."""

    name: ClassVar[str] = ""
    group: ClassVar[str] = "procfs"
    #: shown in ``--help`` and meta.json
    description: ClassVar[str] = ""
    #: True when :meth:`sample` does nothing but read its ``table`` (or ``tables``, in
    #: order) into consecutive slices of ``ints``: the loop's batched read then writes
    #: straight into the row and skips the call
    direct_tables: ClassVar[bool] = False

    def compiled_ops(self) -> list[tuple[int, int, int, int, int, int]] | None:
        """How the compiled hot loop computes this probe's row slice from its tables'
        values, or ``None`` (the probe samples in Python). Each op is ``(table, kind, a,
        b, dst, scale)``: ``table`` indexes :attr:`tables` (or 0 for :attr:`table`),
        ``a``/``b`` index that table's values, ``dst`` the probe's int slice (kinds
        :data:`OP_COPY`, :data:`OP_ZERO`, :data:`OP_ADD`) or float slice
        (:data:`OP_FIXED`: ``(a * scale + b) / scale``, a ``%lu.%02lu`` value split at
        its point). The ops must write every channel and give exactly what
        :meth:`sample` gives from the same file contents."""
        return None

    def compiled_counters(self) -> list[tuple[int, int, list[tuple[int, float]]]] | None:
        """Counter groups the compiled hot loop reads itself, or ``None`` (the probe samples
        in Python). Each group is ``(fd, n, [(dst, mult)] * n)``: one ``read`` of ``fd``
        gives ``nr, time_enabled, time_running, value[n]`` (``perf_event_open`` with
        ``PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING``); value ``i``
        scaled by ``enabled / running`` and ``mult`` goes to float column ``dst`` of the
        probe's slice. Must give exactly what :meth:`sample` gives."""
        return None

    def __init__(self) -> None:
        self.channels: list[Channel] = []
        self.info: dict[str, Any] = {}

    # -- lifecycle ---------------------------------------------------------------------
    def open(self, ctx: ProbeContext) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        for fd in getattr(self, "_fds", ()):
            try:
                os.close(fd)
            except OSError:
                pass
        for t in self.own_tables():
            t.close()

    def own_tables(self) -> list[Any]:
        """The probe's proc-file readers (:class:`~reveal_lab.collect.probes._table.Table`):
        its ``table``, or its ``tables`` in row order; ``[]`` without any."""
        t = getattr(self, "table", None)
        return [t] if t is not None else list(getattr(self, "tables", []))

    # -- helpers -----------------------------------------------------------------------
    @property
    def n_int(self) -> int:
        return sum(1 for c in self.channels if c.dtype == "i")

    @property
    def n_float(self) -> int:
        return sum(1 for c in self.channels if c.dtype == "f")

    @staticmethod
    def fill_missing(ints: np.ndarray, floats: np.ndarray) -> None:
        ints[:] = MISSING_INT
        floats[:] = np.nan


class TableProbe(Probe):
    """A probe whose :meth:`sample` only reads its tables (:meth:`own_tables`) into
    consecutive slices of ``ints``: the batched read writes them straight into the row
    and the loop skips the call (:attr:`direct_tables`)."""

    direct_tables: ClassVar[bool] = True

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        a = 0
        for t in self.own_tables():
            t.read_into(ints[a : a + t.n])
            a += t.n


ProbeFactory = Callable[[], Probe]
