"""Correlation-based metric pruning (paper §4.1) and the Fig. 4 curves."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

import reveal_lab.derive  # noqa: F401  (registers the "Derived:" source with the registry)
from reveal_lab.telemetry import (
    UNSCORED_KINDS,
    Frame,
    TelemetryError,
    classify,
    metric_columns,
    metric_key,
    split_hosts,
)

__all__ = [
    "CLUSTER_METHODS",
    "MetricSpace",
    "PruneResult",
    "correlation_matrix",
    "correlation_variance",
    "pairwise_keep",
    "metric_space",
    "prune",
    "prune_spaces",
    "RunCorrelation",
    "run_correlation",
    "run_correlations",
    "SpaceAccumulator",
    "pruning_curve",
]

#: how metrics over the threshold are grouped: ``complete`` (complete-linkage clusters: every
#: two members reach it), ``connected`` (connected components of the |r| graph), ``pairwise``
#: (the paper's §4.1: of each pair over the threshold one is kept, metrics taken by priority
#: and then by the variance of their correlations, :func:`pairwise_keep`)
CLUSTER_METHODS = ("complete", "connected", "pairwise")


def correlation_matrix(X: np.ndarray, min_periods: int = 3) -> np.ndarray:
    """Pearson correlation of the columns of ``X`` over pairwise-complete rows
    (NaN-safe, like ``pandas.DataFrame.corr``). NaN where a pair has fewer than
    ``min_periods`` common rows or one side is constant on them.

    The matrix products run on one BLAS thread, so the result does not depend on how
    many threads the process (a notebook kernel, a Dask worker) lets BLAS use.

    >>> X = np.array([[1.0, 2.0, 1.0], [2.0, 4.1, np.nan], [3.0, 6.0, 0.0], [4.0, 8.2, -1.0]])
    >>> np.round(correlation_matrix(X), 3).tolist()
    [[1.0, 1.0, -0.982], [1.0, 1.0, -0.986], [-0.982, -0.986, 1.0]]
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        return _correlation_matrix(X, min_periods)


def _correlation_matrix(X: np.ndarray, min_periods: int) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    M = ~np.isnan(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # correlation is scale-free: dividing each column by its largest magnitude keeps
        # sums of squares finite however extreme a value is (e.g. a 1e308 spike)
        scale = np.nanmax(np.abs(X), axis=0) if X.size else np.ones(X.shape[1])
        scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
        X = X / scale
        mu = np.nanmean(X, axis=0)
    Xc = np.where(M, X - np.where(np.isnan(mu), 0.0, mu), 0.0)
    if M.all():
        n = np.full((X.shape[1], X.shape[1]), float(X.shape[0]))
        s = Xc.sum(axis=0)
        sx = np.broadcast_to(s[:, None], n.shape)
        sxx = np.broadcast_to((Xc**2).sum(axis=0)[:, None], n.shape)
    else:
        Mf = M.astype(np.float64)
        n = Mf.T @ Mf
        sx = Xc.T @ Mf  # sx[i, j]: sum of x_i over rows where x_j is valid too
        sxx = (Xc**2).T @ Mf
    sxy = Xc.T @ Xc
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = sxy - sx * sx.T / n
        vx = sxx - sx**2 / n
        r = cov / np.sqrt(vx * vx.T)
    bad = (
        (n < min_periods)
        | ~(vx > 1e-12 * np.maximum(sxx, 1e-300))
        | ~(vx.T > 1e-12 * np.maximum(sxx.T, 1e-300))
    )
    r = np.where(bad, np.nan, np.clip(r, -1.0, 1.0))
    return r


@dataclass
class MetricSpace:
    """The metrics of one workload: host-free keys, their mean correlation across
    runs, registry priority and mean variance, plus what was left out and why."""

    keys: list[str]
    corr: np.ndarray
    priority: np.ndarray
    variance: np.ndarray
    subsystem: list[str]
    n_runs: int
    excluded: pl.DataFrame


def _runs(frames: Sequence[Frame]) -> list[pl.DataFrame]:
    out = []
    for f in frames:
        if isinstance(f, pl.LazyFrame):
            f = f.collect()
        keys = [metric_key(c) for c in metric_columns(f)]
        if len(set(keys)) < len(keys):  # several hosts in one frame: one run per host
            out.extend(split_hosts(f).values())
        else:
            out.append(f)
    return out


@dataclass
class RunCorrelation:
    """One run-host's piece of a :class:`MetricSpace`: its metric keys (host-free), their
    correlation matrix over the run (pairwise-complete rows), their variances, a column
    name per key and the keys it leaves out with the reason."""

    keys: list[str]
    corr: np.ndarray
    variance: np.ndarray
    sample: dict[str, str]
    excluded: dict[str, str]


def run_correlation(frame: pl.DataFrame, min_periods: int = 3) -> RunCorrelation:
    """The piece of one run on one host (its frame holds one host's columns)."""
    cols, keys = [], []
    sample: dict[str, str] = {}
    excluded: dict[str, str] = {}
    schema = frame.schema
    for c in metric_columns(frame):
        k = metric_key(c)
        info = classify(c)
        if info.kind in UNSCORED_KINDS:
            excluded.setdefault(k, f"{info.kind} metric")
            continue
        if schema[c] not in (pl.Float64, pl.Float32):
            raise TelemetryError(f"metric columns must be Float64, found {schema[c]}", column=c)
        cols.append(c)
        keys.append(k)
        sample.setdefault(k, c)
    X = frame.select(cols).to_numpy().astype(np.float64) if cols else np.empty((frame.height, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        v = np.nanvar(X, axis=0) if X.size else np.zeros(len(keys))
    return RunCorrelation(keys, correlation_matrix(X, min_periods), v, sample, excluded)


def run_correlations(frame: Frame, min_periods: int = 3) -> list[RunCorrelation]:
    """The pieces of one run: one per host when the frame holds several."""
    return [run_correlation(f, min_periods) for f in _runs([frame])]


class SpaceAccumulator:
    """Sums of run pieces (:class:`RunCorrelation`) into one workload's :class:`MetricSpace`:
    fixed-size arrays over the keys seen so far, whatever the number of runs. Adding the
    pieces in run order gives the same numbers as :func:`metric_space` on the frames."""

    def __init__(self) -> None:
        self.pos: dict[str, int] = {}
        self.total = np.zeros((0, 0))
        self.count = np.zeros((0, 0))
        self.var_sum = np.zeros(0)
        self.var_n = np.zeros(0)
        self.sample: dict[str, str] = {}
        self.excluded: dict[str, str] = {}
        self.n_runs = 0

    def _grow(self, keys: Sequence[str]) -> None:
        new = [k for k in dict.fromkeys(keys) if k not in self.pos]
        if not new:
            return
        for k in new:
            self.pos[k] = len(self.pos)
        p, q = len(self.pos), self.total.shape[0]
        for name in ("total", "count"):
            grown = np.zeros((p, p))
            grown[:q, :q] = getattr(self, name)
            setattr(self, name, grown)
        for name in ("var_sum", "var_n"):
            grown = np.zeros(p)
            grown[:q] = getattr(self, name)
            setattr(self, name, grown)

    def add(self, piece: RunCorrelation) -> None:
        for k, why in piece.excluded.items():
            self.excluded.setdefault(k, why)
        for k, c in piece.sample.items():
            self.sample.setdefault(k, c)
        self._grow(piece.keys)
        idx = np.array([self.pos[k] for k in piece.keys], dtype=np.int64)
        ok = ~np.isnan(piece.corr)
        sub = np.ix_(idx, idx)
        self.total[sub] += np.where(ok, piece.corr, 0.0)
        self.count[sub] += ok
        good = np.isfinite(piece.variance) & (piece.variance > 0)
        self.var_sum[idx[good]] += piece.variance[good]
        self.var_n[idx[good]] += 1
        self.n_runs += 1

    def space(self) -> MetricSpace:
        if not self.n_runs:
            raise TelemetryError("no runs to prune")
        all_keys = sorted(self.pos)
        order = np.array([self.pos[k] for k in all_keys], dtype=np.int64)
        total = self.total[np.ix_(order, order)]
        count = self.count[np.ix_(order, order)]
        with np.errstate(invalid="ignore", divide="ignore"):
            corr = total / count
        defined = np.diag(count) > 0  # the metric varies in at least one run
        excluded = dict(self.excluded)
        for i, k in enumerate(all_keys):
            if not defined[i]:
                excluded.setdefault(k, "constant or missing in every run")
        keep = np.flatnonzero(defined)
        keys = [all_keys[i] for i in keep]
        corr = corr[np.ix_(keep, keep)]
        np.fill_diagonal(corr, 1.0)
        infos = [classify(self.sample[k]) for k in keys]
        ex = pl.DataFrame(
            {"key": list(excluded), "reason": list(excluded.values())},
            schema={"key": pl.String, "reason": pl.String},
        )
        ex = ex.filter(~pl.col("key").is_in(keys))
        variance = self.var_sum[order] / np.maximum(self.var_n[order], 1)
        return MetricSpace(
            keys=keys,
            corr=corr,
            priority=np.array([i.priority for i in infos], dtype=np.int64),
            variance=variance[keep],
            subsystem=[i.subsystem for i in infos],
            n_runs=self.n_runs,
            excluded=ex,
        )


def metric_space(frames: Sequence[Frame], min_periods: int = 3) -> MetricSpace:
    """Mean Pearson correlation across the runs of one workload.

    Metrics are identified by :meth:`MetricName.key` (host-free), so runs on
    different hosts align. Static metrics (registry kind) and metrics constant or
    missing throughout a run are left out of that run; a pair's mean is taken over
    the runs where its correlation is defined. The sum of per-run pieces
    (:func:`run_correlation`, :class:`SpaceAccumulator`).
    """
    runs = _runs(frames)
    if not runs:
        raise TelemetryError("no runs to prune")
    acc = SpaceAccumulator()
    for f in runs:
        acc.add(run_correlation(f, min_periods))
    return acc.space()


def _clusters(corr: np.ndarray, threshold: float, method: str) -> np.ndarray:
    """Cluster labels (0..k-1) of metrics whose |r| reaches ``threshold``."""
    p = corr.shape[0]
    if p == 0:
        return np.zeros(0, dtype=np.int64)
    a = np.abs(np.nan_to_num(corr, nan=0.0))
    if method == "connected":
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import connected_components

        adj = csr_matrix(a >= threshold)
        _, labels = connected_components(adj, directed=False)
        return labels.astype(np.int64)
    if method != "complete":
        raise ValueError(f"unknown cluster method {method!r}; expected one of {CLUSTER_METHODS}")
    if p == 1:
        return np.zeros(1, dtype=np.int64)
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    d = 1.0 - a
    d = (d + d.T) / 2
    np.fill_diagonal(d, 0.0)
    Z = linkage(squareform(np.clip(d, 0.0, 1.0), checks=False), method="complete")
    # merge while the farthest pair of the merged cluster keeps |r| >= threshold
    labels = fcluster(Z, t=1.0 - threshold + 1e-12, criterion="distance")
    return (labels - 1).astype(np.int64)


def correlation_variance(corr: np.ndarray) -> np.ndarray:
    """Each metric's variance of its correlations with the other metrics (NaN pairs left out;
    0 with fewer than two): the paper's tie-break, "higher correlation variance" (§4.1), a
    metric correlated strongly with some and weakly with others carries more distinct
    information than one uniformly correlated.

    >>> r = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.5], [0.1, 0.5, 1.0]])
    >>> np.round(correlation_variance(r), 2).tolist()
    [0.16, 0.04, 0.04]
    """
    p = corr.shape[0]
    if p < 3:
        return np.zeros(p)
    r = np.array(corr, dtype=np.float64)
    np.fill_diagonal(r, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        v = np.nanvar(r, axis=1)
    return np.where(np.isfinite(v), v, 0.0)


def pairwise_keep(
    corr: np.ndarray, threshold: float, priority: np.ndarray, keys: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """The paper's pruning (§4.1) on one workload's mean correlation matrix: metrics taken in
    the order of the priority table (lowest first), then the larger variance of their
    correlations (:func:`correlation_variance`), then key; a metric whose |r| with one already
    kept exceeds ``threshold`` is redundant (it joins the kept metric it correlates with most),
    any other is kept. Returns ``(labels, reps)`` as the clusterings do: each metric's group
    and each group's kept metric.

    >>> r = np.array([[1.0, 0.9, 0.2], [0.9, 1.0, 0.6], [0.2, 0.6, 1.0]])
    >>> labels, reps = pairwise_keep(r, 0.5, np.array([1, 1, 1]), ["a", "b", "c"])
    >>> labels.tolist(), reps.tolist()
    ([0, 0, 1], [0, 2])
    """
    p = corr.shape[0]
    a = np.abs(np.nan_to_num(corr, nan=0.0))
    cvar = correlation_variance(corr)
    order = sorted(range(p), key=lambda i: (priority[i], -cvar[i], keys[i]))
    kept: list[int] = []
    owner = np.empty(p, dtype=np.int64)
    for i in order:
        if kept:
            r = a[i, kept]
            j = int(r.argmax())
            if r[j] > threshold:
                owner[i] = kept[j]
                continue
        kept.append(i)
        owner[i] = i
    reps = np.array(sorted(kept), dtype=np.int64)
    group = {k: g for g, k in enumerate(reps.tolist())}
    return np.array([group[int(o)] for o in owner], dtype=np.int64), reps


def _cut(sp: MetricSpace, threshold: float, method: str) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, reps)`` of one workload's space cut by ``method`` (:data:`CLUSTER_METHODS`)."""
    if method == "pairwise":
        return pairwise_keep(sp.corr, threshold, sp.priority, sp.keys)
    labels = _clusters(sp.corr, threshold, method)
    return labels, _representatives(labels, sp.priority, sp.variance, sp.keys)


def _representatives(
    labels: np.ndarray, priority: np.ndarray, variance: np.ndarray, keys: list[str]
) -> np.ndarray:
    """Index of each cluster's representative: lowest priority (most interpretable),
    then highest variance, then key (deterministic)."""
    reps = np.empty(labels.max() + 1 if labels.size else 0, dtype=np.int64)
    for c in range(reps.size):
        members = np.flatnonzero(labels == c)
        best = min(members, key=lambda i: (priority[i], -variance[i], keys[i]))
        reps[c] = best
    return reps


@dataclass
class PruneResult:
    """Pruned metric space (paper §4.1).

    Attributes
    ----------
    threshold, method : the |r| threshold and the clustering (``complete``: every two
        members of a cluster reach |r| >= threshold, so each pruned metric is
        correlated at least that much with its representative; ``connected``:
        connected components of the |r| >= threshold graph, single linkage; ``pairwise``:
        each pruned metric's |r| with its representative exceeds the threshold,
        :func:`pairwise_keep`).
    selected : workload → selected metric keys (one representative per cluster).
    union : the diagnostic space, the union of the selected keys over workloads.
    clusters : ``workload, cluster, key, representative, is_representative, priority,
        variance, subsystem``.
    excluded : ``workload, key, reason`` for metrics left out before clustering.
    spaces : workload → :class:`MetricSpace` (mean correlation matrices).
    """

    threshold: float
    method: str
    selected: dict[str, list[str]]
    union: list[str]
    clusters: pl.DataFrame
    excluded: pl.DataFrame
    spaces: dict[str, MetricSpace] = field(repr=False, default_factory=dict)

    def select_columns(self, columns: Iterable[str], workload: str | None = None) -> list[str]:
        """The columns of a frame whose metric key is in the diagnostic space (or in
        one workload's selection)."""
        keep = set(self.union if workload is None else self.selected[workload])
        return [c for c in columns if c != "timestamp" and metric_key(c) in keep]


def prune(
    frames_by_workload: Mapping[str, Sequence[Frame]],
    threshold: float = 0.5,
    *,
    method: str = "complete",
    min_periods: int = 3,
) -> PruneResult:
    """Prune correlated metrics per workload and take the union (paper §4.1).

    Per workload: the mean Pearson correlation matrix over its runs
    (:func:`metric_space`), clusters of metrics whose |r| reaches ``threshold``
    (complete linkage by default; ``method="connected"`` for connected components),
    one representative per cluster by the registry's priority table (utilization
    before throughput before ratios before raw counters) with the larger variance
    (mean over runs, in the metric's own unit) breaking ties. ``method="pairwise"`` is
    the paper's as written: of each pair over the threshold one metric is kept, ties in
    the priority table broken by the variance of the metrics' correlations
    (:func:`pairwise_keep`). The union of the selected metrics over workloads is the
    diagnostic space.

    Examples
    --------
    >>> import datetime as dt
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=200)
    >>> ts = [dt.datetime(2025, 1, 1) + dt.timedelta(milliseconds=100 * i) for i in range(200)]
    >>> run = pl.DataFrame({"timestamp": ts, "CPU:Busy%.-.h[%]": 50 + 10 * z,
    ...                     "Perf:Cycles.h[count]": 1e9 * (3 + z + 0.1 * rng.normal(size=200)),
    ...                     "Memory:Dirty.h[kB]": rng.normal(size=200)})
    >>> res = prune({"train": [run]}, threshold=0.5)
    >>> res.union
    ['CPU:Busy%.-', 'Memory:Dirty']
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must lie in (0, 1], got {threshold}")
    if not frames_by_workload:
        raise ValueError("frames_by_workload is empty")
    spaces = {wl: metric_space(frames, min_periods) for wl, frames in frames_by_workload.items()}
    return prune_spaces(spaces, threshold, method=method)


def prune_spaces(
    spaces: Mapping[str, MetricSpace], threshold: float = 0.5, *, method: str = "complete"
) -> PruneResult:
    """:func:`prune` on workloads' metric spaces already reduced (e.g. from per-run pieces
    with :class:`SpaceAccumulator`)."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must lie in (0, 1], got {threshold}")
    if not spaces:
        raise ValueError("no workload to prune")
    selected: dict[str, list[str]] = {}
    cl_rows: list[pl.DataFrame] = []
    ex_rows: list[pl.DataFrame] = []
    spaces = dict(spaces)
    for wl, sp in spaces.items():
        labels, reps = _cut(sp, threshold, method)
        selected[wl] = sorted(sp.keys[i] for i in reps)
        cl_rows.append(
            pl.DataFrame(
                {
                    "workload": [wl] * len(sp.keys),
                    "cluster": labels,
                    "key": sp.keys,
                    "representative": [sp.keys[reps[c]] for c in labels],
                    "is_representative": [reps[c] == i for i, c in enumerate(labels)],
                    "priority": sp.priority,
                    "variance": sp.variance,
                    "subsystem": sp.subsystem,
                },
                schema={
                    "workload": pl.String,
                    "cluster": pl.Int64,
                    "key": pl.String,
                    "representative": pl.String,
                    "is_representative": pl.Boolean,
                    "priority": pl.Int64,
                    "variance": pl.Float64,
                    "subsystem": pl.String,
                },
            )
        )
        ex_rows.append(sp.excluded.select(pl.lit(wl).alias("workload"), "key", "reason"))
    union = sorted({k for v in selected.values() for k in v})
    return PruneResult(threshold, method, selected, union, pl.concat(cl_rows), pl.concat(ex_rows), spaces)


def _curve_point(sp: MetricSpace, threshold: float, method: str) -> dict[str, float]:
    _, reps = _cut(sp, threshold, method)
    p = len(sp.keys)
    sel = np.zeros(p, dtype=bool)
    sel[reps] = True
    pruned = np.flatnonzero(~sel)
    S = np.flatnonzero(sel)
    R = np.nan_to_num(sp.corr, nan=0.0)
    if pruned.size:
        max_r = np.abs(R[np.ix_(pruned, S)]).max(axis=1)
        # R^2 of the least-squares fit of each pruned metric on the selected ones,
        # from the (mean) correlation matrix: r_jS' R_SS^+ r_jS, clipped to [0, 1]
        Rss_pinv = np.linalg.pinv(R[np.ix_(S, S)], hermitian=True)
        rjs = R[np.ix_(pruned, S)]
        r2 = np.clip(np.einsum("ij,jk,ik->i", rjs, Rss_pinv, rjs), 0.0, 1.0)
        avg_r2, avg_max = float(r2.mean()), float(max_r.mean())
    else:
        avg_r2 = avg_max = float("nan")
    return {
        "n_metrics": p,
        "n_selected": int(S.size),
        "selected_ratio": S.size / p if p else float("nan"),
        "avg_multi_r2": avg_r2,
        "avg_max_abs_r": avg_max,
    }


def pruning_curve(
    frames_by_workload: Mapping[str, Sequence[Frame]],
    thresholds: Sequence[float] = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95),
    *,
    method: str = "complete",
    min_periods: int = 3,
    spaces: Mapping[str, MetricSpace] | None = None,
) -> pl.DataFrame:
    """The Fig. 4 curves: per workload and threshold,

    * ``selected_ratio``: selected metrics / metrics;
    * ``avg_max_abs_r``: mean over the pruned metrics of their largest |r| with a
      selected metric (how well the closest kept metric tracks a pruned one);
    * ``avg_multi_r2``: mean over the pruned metrics of the R² of the least-squares
      fit of the pruned metric on all selected metrics, computed from the mean
      correlation matrix (``r_jS' R_SS^+ r_jS``, clipped to [0, 1]) — the share of
      a pruned metric's variance the kept ones explain jointly.

    Both averages are NaN where nothing is pruned. Rows with ``workload="all"``
    average the workloads. Pass ``spaces`` (``PruneResult.spaces``) to skip
    recomputing the correlation matrices.
    """
    if spaces is None:
        spaces = {wl: metric_space(fr, min_periods) for wl, fr in frames_by_workload.items()}
    rows = []
    for wl, sp in spaces.items():
        for t in thresholds:
            rows.append({"workload": wl, "threshold": float(t), **_curve_point(sp, float(t), method)})
    df = pl.DataFrame(
        rows,
        schema={
            "workload": pl.String,
            "threshold": pl.Float64,
            "n_metrics": pl.Int64,
            "n_selected": pl.Int64,
            "selected_ratio": pl.Float64,
            "avg_multi_r2": pl.Float64,
            "avg_max_abs_r": pl.Float64,
        },
    )
    if len(spaces) > 1:
        mean = (
            df.group_by("threshold", maintain_order=True)
            .agg(
                pl.lit("all").alias("workload"),
                pl.col("n_metrics").mean().round().cast(pl.Int64),
                pl.col("n_selected").mean().round().cast(pl.Int64),
                pl.col("selected_ratio").mean(),
                pl.col("avg_multi_r2").mean(),
                pl.col("avg_max_abs_r").mean(),
            )
            .select(df.columns)
        )
        df = pl.concat([df, mean])
    return df
