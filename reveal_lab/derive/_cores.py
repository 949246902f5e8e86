"""Per-core families folded into host-level metrics, so that what a run alone can flag does
not grow with the number of cores.

A 16-core host writes 16 copies of every per-core counter (``Softirqs_diff:SCHED.0`` …
``SCHED.15``, per-CPU interrupts, per-core CPU times and perf counts); a 192-core host 192.
Each quiet copy can twitch on its own, so a rule judged per channel fires more often the more
cores there are. :func:`fold_cores` replaces each family (one source, field, unit and host,
its instances the core numbers) by three host-level metrics: the total over the cores (the
mean for a percentage), the busiest core (``max``) and the spread across cores (the standard
deviation, ``spread``). Their number is the same on 2 cores and on 192. The per-core
channels stay in the run (:func:`core_families` says which columns each folded metric
stands for), for the evidence to name the core.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import polars as pl

from reveal_lab.telemetry import TIMESTAMP, MetricName, format_metric_name, parse_metric_name

__all__ = ["PER_CORE_SOURCES", "FOLDS", "CoreFamily", "core_families", "fold_cores", "folded_family", "with_cores"]

#: sources with one channel per core (the instance is the core's number)
PER_CORE_SOURCES: frozenset[str] = frozenset({"CPU", "Softirqs", "Interrupts", "Perf"})
#: the folded metrics of a family, by the instance they take: the total (mean for a
#: percentage), the busiest core, the standard deviation across cores
FOLDS = ("cores", "max", "spread")
#: a family is folded only with at least this many cores (one core is its own total)
_MIN_CORES = 2


@dataclass(frozen=True)
class CoreFamily:
    """One per-core family: the name its folds share (instance left open) and its columns
    in core order."""

    template: MetricName
    columns: tuple[str, ...]

    def folded(self, fold: str) -> str:
        """The column name of fold ``fold`` (one of :data:`FOLDS`)."""
        m = self.template
        return format_metric_name(MetricName(m.source, m.field, m.host, fold, m.unit, m.diff))


def core_families(columns: list[str]) -> list[CoreFamily]:
    """The per-core families among ``columns``: metrics of :data:`PER_CORE_SOURCES` whose
    instance is a core number, grouped by source, field, unit and host (at least
    ``2`` cores each), in the order of their first column.

    >>> fams = core_families(["timestamp", "Softirqs_diff:SCHED.0.h[count]",
    ...                       "Softirqs_diff:SCHED.1.h[count]", "CPU:Busy%.-.h[%]"])
    >>> [(f.folded("max"), f.columns) for f in fams]
    [('Softirqs_diff:SCHED.max.h[count]', ('Softirqs_diff:SCHED.0.h[count]', 'Softirqs_diff:SCHED.1.h[count]'))]
    """
    groups: dict[tuple, list[tuple[int, str]]] = defaultdict(list)
    first: dict[tuple, MetricName] = {}
    for c in columns:
        if c == TIMESTAMP:
            continue
        m = parse_metric_name(c)
        if m is None or m.source not in PER_CORE_SOURCES or not (m.instance or "").isdigit():
            continue
        key = (m.source, m.diff, m.field, m.unit, m.host)
        groups[key].append((int(m.instance), c))
        first.setdefault(key, m)
    return [
        CoreFamily(first[k], tuple(c for _, c in sorted(v)))
        for k, v in groups.items()
        if len(v) >= _MIN_CORES
    ]


def _folds(X: np.ndarray, percent: bool) -> dict[str, np.ndarray]:
    """The folds of a samples x cores block (NaN where no core has a value)."""
    ok = np.isfinite(X)
    n = ok.sum(axis=1)
    Z = np.where(ok, X, 0.0)
    total = Z.sum(axis=1)
    mean = np.divide(total, n, out=np.full(X.shape[0], np.nan), where=n > 0)
    sq = np.where(ok, (X - mean[:, None]) ** 2, 0.0).sum(axis=1)
    spread = np.sqrt(np.divide(sq, n, out=np.full(X.shape[0], np.nan), where=n > 0))
    busiest = np.where(n > 0, np.where(ok, X, -np.inf).max(axis=1), np.nan)
    return {"cores": mean if percent else np.where(n > 0, total, np.nan), "max": busiest, "spread": spread}


def fold_cores(frame: pl.DataFrame, *, keep_cores: bool = False) -> pl.DataFrame:
    """``frame`` with each per-core family (:func:`core_families`) replaced by its folds
    (:data:`FOLDS`: total or mean for ``%``, busiest core, spread), placed where the family's
    first column was; ``keep_cores`` keeps the per-core columns too.

    >>> f = pl.DataFrame({"timestamp": [0, 1], "Softirqs_diff:SCHED.0.h[count]": [1.0, 4.0],
    ...                   "Softirqs_diff:SCHED.1.h[count]": [3.0, 0.0], "Memory:Dirty.h[kB]": [5.0, 5.0]})
    >>> fold_cores(f).rows()
    [(0, 4.0, 3.0, 1.0, 5.0), (1, 4.0, 4.0, 2.0, 5.0)]
    >>> fold_cores(f).columns[1:3]
    ['Softirqs_diff:SCHED.cores.h[count]', 'Softirqs_diff:SCHED.max.h[count]']
    """
    fams = core_families(frame.columns)
    if not fams:
        return frame
    first = {f.columns[0]: f for f in fams}
    member = {c for f in fams for c in f.columns}
    out: list[pl.Series] = []
    for c in frame.columns:
        fam = first.get(c)
        if fam is not None:
            X = frame.select(fam.columns).cast(pl.Float64).to_numpy()
            for fold, v in _folds(X, fam.template.unit == "%").items():
                out.append(pl.Series(fam.folded(fold), v, dtype=pl.Float64))
        if c not in member or keep_cores:
            out.append(frame.get_column(c))
    return pl.DataFrame(out)


def folded_family(metric: str, columns: list[str]) -> tuple[str, ...]:
    """The per-core columns of ``columns`` that the folded metric ``metric`` stands for
    (empty when ``metric`` is not a fold).

    >>> folded_family("Softirqs_diff:SCHED.max.h[count]", ["Softirqs_diff:SCHED.0.h[count]",
    ...               "Softirqs_diff:SCHED.1.h[count]", "Softirqs_diff:TIMER.0.h[count]"])
    ('Softirqs_diff:SCHED.0.h[count]', 'Softirqs_diff:SCHED.1.h[count]')
    """
    m = parse_metric_name(metric)
    if m is None or m.instance not in FOLDS or m.source not in PER_CORE_SOURCES:
        return ()
    for fam in core_families(columns):
        if fam.folded(m.instance) == metric:
            return fam.columns
    return ()


def with_cores(frame: pl.DataFrame, n: int, *, seed: int = 0, max_shift: int = 5) -> pl.DataFrame:
    """A synthetic copy of ``frame`` as if its host had ``n`` cores, for testing what grows with
    the core count: each per-core family keeps its first ``min(n, cores)`` columns as they
    are and gets copies of them for the rest (core ``i`` copies core ``i mod cores``), each
    shifted in time by up to ``max_shift`` samples (seeded), so that the copies' twitches fall
    at their own times while their level, and every fault's, stays where it was. Other columns
    are kept.

    >>> f = pl.DataFrame({"timestamp": [0, 1, 2], "Softirqs_diff:SCHED.0.h[count]": [1.0, 2.0, 3.0],
    ...                   "Softirqs_diff:SCHED.1.h[count]": [4.0, 5.0, 6.0]})
    >>> with_cores(f, 4, max_shift=0).columns[1:]
    ['Softirqs_diff:SCHED.0.h[count]', 'Softirqs_diff:SCHED.1.h[count]', 'Softirqs_diff:SCHED.2.h[count]', 'Softirqs_diff:SCHED.3.h[count]']
    >>> with_cores(f, 1).columns
    ['timestamp', 'Softirqs_diff:SCHED.0.h[count]']
    """
    if n < 1:
        raise ValueError(f"n must be a whole number >= 1, got {n!r}")
    rng = np.random.default_rng(seed)
    fams = {f.columns[0]: f for f in core_families(frame.columns)}
    member = {c for f in fams.values() for c in f.columns}
    out: list[pl.Series] = []
    for c in frame.columns:
        fam = fams.get(c)
        if fam is not None:
            m = fam.template
            for i in range(n):
                src = frame.get_column(fam.columns[i % len(fam.columns)]).cast(pl.Float64).to_numpy()
                if i >= len(fam.columns) and max_shift:
                    src = np.roll(src, int(rng.integers(-max_shift, max_shift + 1)))
                name = format_metric_name(MetricName(m.source, m.field, m.host, str(i), m.unit, m.diff))
                out.append(pl.Series(name, src, dtype=pl.Float64))
        elif c not in member:
            out.append(frame.get_column(c))
    return pl.DataFrame(out)
