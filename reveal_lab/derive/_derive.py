"""Derived metrics (paper Appendix B) and the single-host detection view (§4.2)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from reveal_lab.telemetry import (
    TIMESTAMP,
    UNSCORED_KINDS,
    Frame,
    MetricName,
    TelemetryError,
    format_metric_name,
    metric_columns,
    parse_metric_name,
)
from reveal_lab.telemetry import (
    catalogue as make_catalogue,
)

__all__ = [
    "DERIVED_SOURCE",
    "CUMULATIVE_SOURCES",
    "add_derived",
    "DerivedPlan",
    "plan_derived",
    "derive_plan",
    "detection_view",
    "is_cumulative",
]

DERIVED_SOURCE = "Derived"

#: sources whose non-``_diff`` count-like columns may hold cumulative counters
#: (raw procfs/perf readings); a column is treated as cumulative only if it also
#: never decreases over the run (see :func:`is_cumulative`)
CUMULATIVE_SOURCES: frozenset[str] = frozenset(
    {
        "CPU",
        "NetworkInterStat",
        "Storage",
        "Disk",
        "Vmstat",
        "Nstat",
        "Interrupts",
        "Softirqs",
        "Perf",
        "NetworkTCPRetrans",
        "Cgroup",
        "PSI",
    }
)
_CUMULATIVE_UNITS = frozenset(
    {None, "count", "Bytes", "bytes", "sectors", "ms", "us", "jiffies", "pages", "ns"}
)
_LEVEL_FIELD = re.compile(r"(?i)(^nr_|%|util|ratio|ipc|avg|total$|_kB$|^(some|full)_avg)")


def is_cumulative(name: str, values: np.ndarray) -> bool:
    """Is this column a cumulative counter to difference?

    It must come from a counter source (:data:`CUMULATIVE_SOURCES`), not already be
    a ``_diff`` column, carry a count-like unit, not name a level (``nr_*``, a
    percentage, a ratio) and never decrease over the run (a counter that did not
    move, e.g. idle time on a saturated machine, counts). Per-interval counts (the
    public dataset's ``Perf:`` columns) go up and down, so they are left alone.
    """
    return _counter_like(parse_metric_name(name)) and _never_decreases(values)


def _counter_like(m: MetricName | None) -> bool:
    """The name part of :func:`is_cumulative`: a counter source, a count-like unit, no level."""
    if m is None or m.diff or m.source not in CUMULATIVE_SOURCES or m.unit not in _CUMULATIVE_UNITS:
        return False
    return not _LEVEL_FIELD.search(m.field)


def _never_decreases(values: np.ndarray) -> bool:
    """The data part of :func:`is_cumulative`: 3 or more values, none below the one before."""
    v = values[~np.isnan(values)]
    if v.size < 3:
        return False
    return bool((np.diff(v) >= 0).all())


@dataclass(frozen=True)
class _Rule:
    name: str  # output field
    unit: str
    num: str  # source field regexes (case-insensitive), matched on Perf/CPU columns
    den: str
    subsystem: str


_PERF_RATIOS: tuple[_Rule, ...] = (
    _Rule("IPC", "-", r"^instructions$", r"^cycles$", "cpu"),
    _Rule("BranchMissRate", "-", r"^branch[-_]misses$", r"^branches$", "cpu"),
    _Rule("CacheMissRatio", "-", r"^cache[-_]misses$", r"^cache[-_]references$", "memory"),
    _Rule("L3StallRatio", "-", r"^cycle[-_]activity[-_.]stalls[-_]l3[-_]miss$", r"^cycles$", "memory"),
)
_CPU_IDLE = ("idle", "iowait")
_CPU_ALL = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _fmt(
    source: str, field: str, host: str, instance: str | None, unit: str | None, diff: bool = False
) -> str:
    return format_metric_name(MetricName(source, field, host, instance, unit, diff))


def derive_plan(frame: pl.DataFrame, *, link_speed_mbps: Mapping[str, float] | None = None) -> pl.DataFrame:
    """What :func:`add_derived` does to ``frame``, one row per output column:
    ``column, kind (diff|ratio|utilization), inputs, formula``."""
    return _plan(frame, link_speed_mbps)[0]


def _plan(frame: pl.DataFrame, link_speed_mbps: Mapping[str, float] | None):  # noqa: ANN202
    """``(plan table, difference expressions, derived expressions, columns replaced)`` for
    ``frame``: the steps of :class:`_Planner`, every host in turn."""
    p = _Planner(frame)
    for h in p.hosts:
        p.perf_ratios(h)
        p.cpu_utilization(h)
        p.memory_utilization(h)
        p.network_utilization(h, link_speed_mbps)
    plan = pl.DataFrame(
        p.rows, schema={"column": pl.String, "kind": pl.String, "inputs": pl.String, "formula": pl.String}
    )
    return plan, p.diff_exprs, p.exprs, p.drop


class _Planner:
    """The derived columns of one frame, planned step by step: (1) cumulative counters
    become per-interval differences (the dataset's ``_diff`` convention) on construction;
    then per host (2) perf ratios, (3) CPU utilization from ``/proc/stat`` times, (4) memory
    utilization from MemTotal / MemAvailable, (5) network utilization from bytes per
    interval and the link speed. A column the frame already has is never planned again."""

    def __init__(self, frame: pl.DataFrame) -> None:
        cols = metric_columns(frame)
        self.parsed = {c: parse_metric_name(c) for c in cols}
        self.existing = set(cols)
        self.rows: list[dict[str, str]] = []
        self.diff_exprs: list[pl.Expr] = []
        self.exprs: list[pl.Expr] = []
        self.drop: list[str] = []
        self.diffed: dict[str, str] = {}  # original → per-interval column
        schema = frame.schema
        for c in cols:
            m = self.parsed[c]
            if m is None or schema[c] != pl.Float64:
                continue
            # is_cumulative's test, the name first: only counters' values are read
            if _counter_like(m) and _never_decreases(frame.get_column(c).to_numpy()):
                out = m.as_diff().format()
                if out in self.existing:
                    continue
                self.diffed[c] = out
                self.diff_exprs.append(pl.col(c).diff().alias(out))
                self.drop.append(c)
                self._add(out, "diff", c, "first difference of a cumulative counter (replaces it)")
        # per-interval columns by (source, field lower, instance, host)
        self.index: dict[tuple[str, str, str | None, str], str] = {}
        for c in cols:
            m = self.parsed[c]
            if m is not None:
                self.index.setdefault((m.source, m.field.lower(), m.instance, m.host), self.diffed.get(c, c))
        self.hosts = sorted({m.host for m in self.parsed.values() if m is not None})

    def _add(self, column: str, kind: str, inputs: str, formula: str) -> None:
        self.rows.append({"column": column, "kind": kind, "inputs": inputs, "formula": formula})

    def find(self, source: str, pattern: str, host: str, instance: str | None = None) -> str | None:
        rx = re.compile(pattern, re.IGNORECASE)
        for (src, field, inst, h), col in self.index.items():
            if src == source and h == host and inst == instance and rx.search(field):
                return col
        return None

    def perf_ratios(self, h: str) -> None:
        """(2) package-wide perf counts have no instance; null where the denominator is 0."""
        for r in _PERF_RATIOS:
            num, den = self.find("Perf", r.num, h), self.find("Perf", r.den, h)
            out = _fmt(DERIVED_SOURCE, r.name, h, None, r.unit)
            if num and den and out not in self.existing:
                d = pl.col(den)
                self.exprs.append(pl.when(d > 0).then(pl.col(num) / d).otherwise(None).alias(out))
                formula = f"{r.name} = {num} / {den} (per interval; null where {den} is 0)"
                self._add(out, "ratio", f"{num}, {den}", formula)

    def cpu_utilization(self, h: str) -> None:
        """(3) per instance, from the per-interval ``/proc/stat`` times."""
        index, parsed = self.index, self.parsed
        instances = sorted(
            {inst for (src, f, inst, hh) in index if src == "CPU" and hh == h and f in _CPU_ALL},
            key=lambda s: (s != "-", s or ""),
        )
        for inst in instances:
            parts = {f: index[("CPU", f, inst, h)] for f in _CPU_ALL if ("CPU", f, inst, h) in index}
            if "idle" not in parts or len(parts) < 3:
                continue
            # levels (jiffies since boot that were not differenced) cannot be used
            if any(
                parsed.get(c) is not None and not parsed[c].diff and c not in self.diffed
                for c in parts.values()
                if c in parsed
            ):
                continue
            out = _fmt(DERIVED_SOURCE, "CPUUtilization", h, inst, "%")
            if out in self.existing:
                continue
            total = pl.sum_horizontal([pl.col(c) for c in parts.values()])
            idle = pl.sum_horizontal([pl.col(parts[f]) for f in _CPU_IDLE if f in parts])
            util = pl.when(total > 0).then(100.0 * (1.0 - idle / total)).otherwise(None)
            self.exprs.append(util.alias(out))
            self._add(
                out,
                "utilization",
                ", ".join(parts.values()),
                "100 * (1 - (idle + iowait) / total CPU time) per interval",
            )

    def _level(self, field: str, h: str) -> str | None:
        return next(
            (
                self.index[k]
                for k in self.index
                if k[0] in ("Memory", "Meminfo")
                and k[1] == field
                and k[3] == h
                and not parsed_is_diff(self.index[k], self.parsed)
            ),
            None,
        )

    def memory_utilization(self, h: str) -> None:
        """(4) from the MemTotal and MemAvailable levels."""
        tot, ava = self._level("memtotal", h), self._level("memavailable", h)
        mem_out = _fmt("Memory", "MemoryUtilization", h, None, "%")
        if tot and ava and mem_out not in self.existing:
            self.exprs.append(
                pl.when(pl.col(tot) > 0)
                .then(100.0 * (pl.col(tot) - pl.col(ava)) / pl.col(tot))
                .otherwise(None)
                .alias(mem_out)
            )
            self._add(mem_out, "utilization", f"{tot}, {ava}", "100 * (MemTotal - MemAvailable) / MemTotal")

    def network_utilization(self, h: str, link_speed_mbps: Mapping[str, float] | None) -> None:
        """(5) per interface, from rx + tx bytes per interval and the link speed (its
        ``speed`` column, else ``link_speed_mbps``); none without a speed."""
        index = self.index
        ifaces = sorted(
            {
                inst
                for (src, f, inst, hh) in index
                if src == "NetworkInterStat" and hh == h and f in ("rx_bytes", "tx_bytes") and inst
            }
        )
        for iface in ifaces:
            rx = index.get(("NetworkInterStat", "rx_bytes", iface, h))
            tx = index.get(("NetworkInterStat", "tx_bytes", iface, h))
            if not (rx and tx) or not (parsed_is_diff(rx, self.parsed) or rx in self.diffed.values()):
                continue
            speed_col = self.find("NetworkInterStat", r"^speed$", h, iface)
            speed: pl.Expr | None = None
            if speed_col is not None:
                speed = pl.col(speed_col)
            elif link_speed_mbps and link_speed_mbps.get(iface):
                speed = pl.lit(float(link_speed_mbps[iface]))
            out = _fmt("NetworkInterStat", "NetworkUtilization", h, iface, "%", diff=True)
            if speed is None or out in self.existing:
                continue
            dt_s = pl.col(TIMESTAMP).diff().dt.total_milliseconds().cast(pl.Float64) / 1000.0
            bits = 8.0 * (pl.col(rx) + pl.col(tx))
            cap = speed * 1e6 * dt_s
            self.exprs.append(pl.when(cap > 0).then(100.0 * bits / cap).otherwise(None).alias(out))
            self._add(
                out,
                "utilization",
                f"{rx}, {tx}, {speed_col or f'link speed {link_speed_mbps[iface]} Mb/s'}",
                "100 * 8 (rx + tx bytes) / (link Mb/s * 1e6 * interval s)",
            )


def parsed_is_diff(col: str, parsed: Mapping[str, MetricName | None]) -> bool:
    m = parsed.get(col)
    if m is None:
        m = parse_metric_name(col)
    return bool(m is not None and m.diff)


def add_derived(frame: Frame, *, link_speed_mbps: Mapping[str, float] | None = None) -> pl.DataFrame:
    """Add the paper's derived metrics (Appendix B) to a telemetry frame.

    * cumulative counters (:func:`is_cumulative`) are replaced by their per-interval
      differences, named with the ``_diff`` source suffix like the public dataset;
    * ``Derived:IPC`` (instructions / cycles), ``Derived:BranchMissRate`` (branch
      misses / branches), ``Derived:CacheMissRatio`` (cache misses / references),
      ``Derived:L3StallRatio`` (L3-miss stall cycles / cycles) where the perf
      counters exist (per interval, null where the denominator is 0);
    * ``Derived:CPUUtilization.<cpu>`` from ``/proc/stat`` times;
      ``Memory:MemoryUtilization`` from MemTotal/MemAvailable and
      ``NetworkInterStat_diff:NetworkUtilization.<if>`` from bytes and link speed
      (a ``speed`` column or ``link_speed_mbps``), under the dataset's own names,
      only where the frame lacks them.

    Existing columns are never overwritten. :func:`derive_plan` lists what is
    added and from what.

    Examples
    --------
    >>> import datetime as dt
    >>> ts = [dt.datetime(2025, 1, 1, 0, 0, i) for i in range(3)]
    >>> df = pl.DataFrame({"timestamp": ts, "Perf:Instructions.h1[count]": [10.0, 30.0, 5.0],
    ...                    "Perf:Cycles.h1[count]": [20.0, 20.0, 0.0]},
    ...                   schema_overrides={"timestamp": pl.Datetime("ms")})
    >>> add_derived(df)["Derived:IPC.h1[-]"].to_list()
    [0.5, 1.5, None]
    """
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    if TIMESTAMP not in frame.columns:
        raise TelemetryError(f"frame has no {TIMESTAMP!r} column", column=TIMESTAMP)
    return plan_derived(frame, link_speed_mbps=link_speed_mbps).apply(frame)


@dataclass(frozen=True)
class DerivedPlan:
    """What :func:`add_derived` does, decided once on a frame (which columns are cumulative
    counters is read from the data) and applied to other frames with the same columns: a
    live stream decides on its first stretch and applies the plan to each new chunk with
    :attr:`lookback` rows before it (the expressions are first differences and row-wise ratios).

    Examples
    --------
    >>> import datetime as dt
    >>> ts = [dt.datetime(2025, 1, 1, 0, 0, i) for i in range(4)]
    >>> df = pl.DataFrame({"timestamp": ts, "Vmstat:pgfault.h1[count]": [1.0, 3.0, 6.0, 10.0]},
    ...                   schema_overrides={"timestamp": pl.Datetime("ms")})
    >>> plan = plan_derived(df.head(3))  # decided on the first three rows
    >>> out = plan.apply(df.tail(2))  # applied to the last two: the first of them has no look-back
    >>> out.columns, out["Vmstat_diff:pgfault.h1[count]"].to_list()
    (['timestamp', 'Vmstat_diff:pgfault.h1[count]'], [None, 4.0])
    """

    #: one row per output column: ``column, kind, inputs, formula`` (:func:`derive_plan`)
    table: pl.DataFrame
    diff_exprs: tuple[pl.Expr, ...]
    exprs: tuple[pl.Expr, ...]
    drop: tuple[str, ...]
    #: rows before a chunk that :meth:`apply` needs to give the chunk's first row its value
    lookback: int = 1

    def apply(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame`` with the plan's columns added and the cumulative originals dropped."""
        out = frame
        if self.diff_exprs:  # first the per-interval columns, which the ratios may read
            out = out.with_columns([e.cast(pl.Float64) for e in self.diff_exprs])
        if self.exprs:
            out = out.with_columns([e.cast(pl.Float64) for e in self.exprs])
        # one expression, not one per column
        return out.select(pl.exclude(list(self.drop))) if self.drop else out


def plan_derived(frame: pl.DataFrame, *, link_speed_mbps: Mapping[str, float] | None = None) -> DerivedPlan:
    """The :class:`DerivedPlan` of ``frame`` (what :func:`add_derived` would do to it)."""
    table, diff_exprs, exprs, drop = _plan(frame, link_speed_mbps)
    return DerivedPlan(table, tuple(diff_exprs), tuple(exprs), tuple(drop))


#: why :func:`detection_view` leaves out a column whose values never change (the pipeline keeps
#: such columns of baseline runs; a live stream alone keeps those constant over its warm-up)
CONSTANT_REASON = "constant over the run"
DETECTION_REASONS = (
    "static metric", "instrument metric", "smoothed metric", "all values missing", CONSTANT_REASON
)


def detection_view(frame: Frame, catalogue: pl.DataFrame | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The columns single-host detection should use, and why the others are left out.

    Drops static metrics (kept for cross-host comparison), the collector's own telemetry
    (``instrument``: data quality, not the host's state), columns with no value at all and
    columns constant over the run (ignoring missing values).

    Returns
    -------
    (frame, catalogue): ``frame`` without the dropped columns; ``catalogue`` has one
    row per metric column of the input (:func:`reveal_lab.telemetry.catalogue`)
    plus ``used`` (bool) and ``reason`` (null when used).

    Examples
    --------
    >>> import datetime as dt
    >>> ts = [dt.datetime(2025, 1, 1, 0, 0, i) for i in range(3)]
    >>> df = pl.DataFrame({"timestamp": ts, "CPU:Busy%.-.h[%]": [1.0, 5.0, 2.0],
    ...                    "Memory:MemTotal.h[kB]": [8.0, 8.0, 8.0], "GPU: power.draw.0.h[W]": [None] * 3},
    ...                   schema_overrides={"timestamp": pl.Datetime("ms"),
    ...                                     "GPU: power.draw.0.h[W]": pl.Float64})
    >>> view, cat = detection_view(df)
    >>> view.columns
    ['timestamp', 'CPU:Busy%.-.h[%]']
    >>> cat.select("column", "reason").rows()[1:]
    [('Memory:MemTotal.h[kB]', 'static metric'), ('GPU: power.draw.0.h[W]', 'all values missing')]
    """
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    cols = metric_columns(frame)
    cat = catalogue if catalogue is not None else make_catalogue(cols)
    cat = cat.filter(pl.col("column").is_in(cols))
    known = set(cat["column"])
    missing = [c for c in cols if c not in known]
    if missing:
        cat = pl.concat([cat, make_catalogue(missing)])
    reasons: dict[str, str | None] = {}
    count, lo, hi = _column_ranges(frame, cols)
    kinds = dict(zip(cat["column"], cat["kind"], strict=True))
    for i, c in enumerate(cols):
        if kinds.get(c) in UNSCORED_KINDS:
            reasons[c] = f"{kinds[c]} metric"
        elif count[i] == 0:
            reasons[c] = "all values missing"
        elif lo[i] == hi[i]:
            reasons[c] = CONSTANT_REASON
        else:
            reasons[c] = None
    cat = cat.with_columns(
        pl.col("column").replace_strict(reasons, return_dtype=pl.String, default=None).alias("reason")
    ).with_columns(used=pl.col("reason").is_null())
    keep = [c for c in cols if reasons[c] is None]
    return frame.select(TIMESTAMP, *keep), cat


def _column_ranges(frame: pl.DataFrame, cols: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column of ``cols`` (as floats, NaN as missing): values present, least and largest
    (NaN where none is), from one matrix rather than three expressions per column."""
    if not cols:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
    if not frame.height:  # no rows: nothing present, no least or largest
        nan = np.full(len(cols), np.nan)
        return np.zeros(len(cols), dtype=np.int64), nan, nan.copy()
    a = frame.select(cols).cast(pl.Float64).to_numpy()  # null -> NaN
    present = ~np.isnan(a)
    return present.sum(axis=0), np.fmin.reduce(a, axis=0), np.fmax.reduce(a, axis=0)
