"""DTW reproducibility (paper §5.4): are runs of one workload closer to their own
workload's median trace than to other workloads' median traces?

Test used here (the paper leaves the pairing open)
---------------------------------------------------
For each workload ``w`` and metric ``m``:

1. every run's trace is z-normalized (a constant trace becomes all zeros) and
   linearly resampled to ``length`` points, so that runs of different duration can
   share a pointwise median and DTW cost stays bounded;
2. the *median trace* of a workload is the pointwise median of its runs' traces;
3. for each run ``r`` of ``w``: ``d_within(r) = DTW(r, median of w without r)``
   (leave-one-out, so a run is never compared with a median it helped build) and
   ``d_between(r) = mean over other workloads w' of DTW(r, median of w')``, over
   ``max_other_workloads`` other workloads (:func:`reference_order`: one seeded order of the
   study's workloads, drawn once per study, that is once per platform; each workload takes
   the first ``max_other_workloads`` of it other than itself that have the metric; every
   other workload while there are no more than that; the ``n_others`` column of the pairs
   says how many). The paper compares with every other workload: a departure, written down
   in ``docs/METHOD.md`` with its effect on the proxy;
4. a two-sided Wilcoxon signed-rank test on the paired ``(d_within, d_between)``
   over the runs of ``w`` (``pairing="run"``), or over every (run, other workload)
   pair (``pairing="run_x_workload"``: more pairs, but they are not independent);
   ``pairing="auto"`` uses ``run`` where the workload has at least ``min_pairs`` runs
   and ``run_x_workload`` elsewhere (the ``pairing`` column says which).

A workload–metric pair counts as *reproducible* when ``p < alpha``; the study
reports the share of such pairs (the paper reports 99.75 %). Beside it, the hypothesis
tested in its own direction (:func:`one_sided_test`): a one-sided Wilcoxon test that runs
are closer to their own workload, on one value per run (``within`` vs the mean over the
other workloads), with the rank-biserial effect size, per pair and per metric over the
runs of all workloads (``DTWStudy.by_metric``). With ``pairing="run"``
an exact two-sided test needs at least 6 runs to reach ``p < 0.05``; pairs with
fewer usable runs are reported with ``p = NaN`` and ``reason`` filled, never
silently dropped. When all paired differences are 0 the test is undefined; we
report ``p = 1`` (no evidence of a difference).

The sample keeps each run's cost fixed: with every other workload, the DTW calls of the
study grow as runs × workloads × metrics, quadratic in the number of workloads (hundreds in
the public dataset); with the sample they grow as runs × (``max_other_workloads`` + 1) ×
metrics, linear in the runs.

DTW is exact (no FastDTW approximation): dtaidistance's C implementation on
float64 C-contiguous arrays (a run's distances to the chosen medians in one call of its
``distance_matrix`` over that block, :func:`dtw_distances`, the same value per pair as
:func:`dtw_distance`), with an optional Sakoe–Chiba band (``window``: the
radius in samples, as tslearn's ``sakoe_chiba_radius``). It returns
``sqrt(sum of squared differences along the best path)``, the same quantity as
:func:`tslearn.metrics.dtw` (checked in the tests and in ``benchmarks/dtw_vs_tslearn.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

__all__ = [
    "znormalize",
    "resample",
    "prepare_trace",
    "median_trace",
    "dtw_distance",
    "dtw_distances",
    "reference_order",
    "reference_workloads",
    "MAX_OTHER_WORKLOADS",
    "dtw_to_median",
    "signed_rank_test",
    "one_sided_test",
    "dtw_reproducibility",
    "DTWStudy",
    "collect_traces",
]


def znormalize(x: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance; NaNs are interpolated over, a constant trace gives zeros.

    >>> znormalize(np.array([1.0, 2.0, 3.0])).round(3).tolist()
    [-1.225, 0.0, 1.225]
    >>> znormalize(np.array([5.0, 5.0])).tolist()
    [0.0, 0.0]
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"a trace must be 1-D, got shape {x.shape}")
    finite = np.isfinite(x)
    if not finite.any():
        return np.zeros_like(x)
    if not finite.all():
        idx = np.arange(x.size)
        x = np.interp(idx, idx[finite], x[finite])
    sd = x.std()
    if sd == 0 or not np.isfinite(sd):
        return np.zeros_like(x)
    return (x - x.mean()) / sd


def resample(x: np.ndarray, length: int | None) -> np.ndarray:
    """Linear resampling of a trace to ``length`` points (``None``: unchanged).

    >>> resample(np.array([0.0, 1.0]), 3).tolist()
    [0.0, 0.5, 1.0]
    """
    x = np.asarray(x, dtype=np.float64)
    if length is None or x.size == length:
        return x
    if length < 2:
        raise ValueError("resample length must be >= 2")
    if x.size < 2:
        return np.full(length, x[0] if x.size else 0.0)
    return np.interp(np.linspace(0, x.size - 1, length), np.arange(x.size), x)


def prepare_trace(x: np.ndarray, length: int | None) -> np.ndarray:
    """A trace as the DTW study compares it: z-normalized, then resampled to ``length``.

    >>> prepare_trace(np.array([1.0, 2.0, 3.0]), 5).round(3).tolist()
    [-1.225, -0.612, 0.0, 0.612, 1.225]
    """
    return resample(znormalize(np.asarray(x, float)), length)


def median_trace(traces: Sequence[np.ndarray], length: int | None = None) -> np.ndarray:
    """Pointwise median of traces, each first resampled to ``length``
    (default: the median length of the traces).

    >>> median_trace([np.zeros(4), np.ones(4), 2 * np.ones(4)]).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    if len(traces) == 0:
        raise ValueError("median_trace needs at least one trace")
    if length is None:
        length = int(np.median([len(t) for t in traces]))
    return np.median(np.vstack([resample(t, length) for t in traces]), axis=0)


def dtw_distance(a: np.ndarray, b: np.ndarray, window: int | None = None) -> float:
    """Exact DTW distance (sqrt of summed squared differences on the best path).

    ``window`` is the Sakoe–Chiba radius in samples: cells with ``|i - j| <= window``
    are allowed (tslearn's ``sakoe_chiba_radius``; dtaidistance's own ``window``
    allows ``|i - j| < window``, so it receives ``window + 1``). ``None``: unconstrained.

    >>> dtw_distance(np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0]))
    0.0
    >>> dtw_distance(np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
    0.0
    """
    from dtaidistance import dtw

    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        raise ValueError("DTW needs two non-empty traces")
    if window is not None and window < 0:
        raise ValueError(f"Sakoe-Chiba radius must be >= 0, got {window}")
    kw = {} if window is None else {"window": int(window) + 1}
    # use_pruning=False: dtaidistance 2.5 prunes by default with the Euclidean distance as
    # an upper bound and a strict comparison, so a pair whose DTW distance *equals* that bound
    # (any pair with a constant, z-normalized-to-zero trace) came back as inf
    return float(dtw.distance_fast(a, b, use_pruning=False, **kw))


def dtw_distances(
    a: Sequence[np.ndarray], b: Sequence[np.ndarray], window: int | None = None
) -> np.ndarray:
    """DTW distance of every trace of ``a`` to every trace of ``b``: ``float64[len(a), len(b)]``,
    element ``[i, j]`` equal to ``dtw_distance(a[i], b[j], window)``.

    One call of dtaidistance's C ``distance_matrix`` on the block ``a × b`` (no pruning),
    instead of one Python call per pair; its pairs are shared among OpenMP threads (as many as
    the OpenMP runtime gives: ``OMP_NUM_THREADS``, which Dask sets to 1 in its workers and in
    the process that starts a local cluster), each pair computed as serially, so the values do
    not depend on the threads.

    >>> dtw_distances([np.array([0.0, 1.0, 2.0])], [np.array([0.0, 1.0, 2.0]), np.zeros(3)]).round(3).tolist()
    [[0.0, 2.236]]
    """
    from dtaidistance import dtw

    n, k = len(a), len(b)
    if not n or not k:
        return np.empty((n, k))
    if window is not None and window < 0:
        raise ValueError(f"Sakoe-Chiba radius must be >= 0, got {window}")
    series = [np.ascontiguousarray(x, dtype=np.float64) for x in (*a, *b)]
    if any(x.ndim != 1 or x.size == 0 for x in series):
        raise ValueError("DTW needs non-empty 1-D traces")
    kw = {} if window is None else {"window": int(window) + 1}
    d = dtw.distance_matrix_fast(
        series, block=((0, n), (n, n + k)), compact=True, parallel=True, use_pruning=False, **kw
    )
    return np.asarray(d, dtype=np.float64).reshape(n, k)


MAX_OTHER_WORKLOADS = 32
"""Default number of other workloads each run is compared with (:func:`reference_workloads`)."""


def reference_order(workloads: Sequence[str], seed: int = 0) -> list[str]:
    """The study's workloads in one seeded order, drawn once per study (a platform): the other
    workloads each workload is compared with are taken from its front. The same order on every
    machine, process and engine, whatever the order of ``workloads``.

    >>> reference_order(["c", "a", "b"]) == reference_order(["b", "c", "a"])
    True
    >>> sorted(reference_order(["c", "a", "b"], seed=1))
    ['a', 'b', 'c']
    """
    names = sorted(set(workloads))
    return [names[i] for i in np.random.default_rng(seed).permutation(len(names))]


def reference_workloads(workload: str, order: Sequence[str], max_others: int | None) -> list[str]:
    """The other workloads whose median traces the runs of ``workload`` are compared with: the
    first ``max_others`` of ``order`` (:func:`reference_order`, or the candidates that have
    the metric, in that order) other than ``workload``; all of them when ``max_others`` is
    ``None`` or 0.

    >>> reference_workloads("a", ["b", "a", "c", "d"], 2)
    ['b', 'c']
    >>> reference_workloads("c", ["b", "a", "c", "d"], 2)
    ['b', 'a']
    >>> reference_workloads("a", ["b", "a", "c"], None)
    ['b', 'c']
    """
    if max_others is not None and max_others < 0:
        raise ValueError(f"max_other_workloads must be >= 0 or None, got {max_others}")
    others = [o for o in order if o != workload]
    return others if not max_others else others[:max_others]


def dtw_to_median(
    traces: Sequence[np.ndarray],
    *,
    length: int | None = 256,
    window: int | None = None,
    normalize: bool = True,
) -> np.ndarray:
    """DTW distance of every trace to the median trace of all of them."""
    prepared = [resample(znormalize(t) if normalize else np.asarray(t, float), length) for t in traces]
    med = median_trace(prepared, length)
    return np.array([dtw_distance(p, med, window) for p in prepared])


def signed_rank_test(x: np.ndarray, y: np.ndarray, *, min_pairs: int = 6) -> tuple[float, float, str]:
    """Two-sided Wilcoxon signed-rank test of paired samples: ``(statistic, p, reason)``.

    ``reason`` is empty when the test ran; ``"identical"`` (p = 1) when every
    difference is 0; ``"too few pairs"`` (p = NaN) below ``min_pairs`` pairs.

    >>> signed_rank_test(np.arange(8.0), np.arange(8.0) + 10)[1] < 0.05
    True
    >>> signed_rank_test(np.ones(8), np.ones(8))
    (0.0, 1.0, 'identical')
    """
    from scipy.stats import wilcoxon

    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in shape: {x.shape} vs {y.shape}")
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < max(min_pairs, 1):
        return float("nan"), float("nan"), "too few pairs"
    d = x - y
    if np.all(d == 0):
        return 0.0, 1.0, "identical"
    res = wilcoxon(x, y, alternative="two-sided")
    return float(res.statistic), float(res.pvalue), ""


def one_sided_test(
    within: np.ndarray, between: np.ndarray, *, min_pairs: int = 1
) -> tuple[float, float, str]:
    """One-sided Wilcoxon signed-rank test of the hypothesis that runs are *closer* to their
    own workload (``within < between``), on one pair per independent unit (a run):
    ``(p, effect, reason)``. ``effect`` is the matched-pairs rank-biserial correlation,
    ``(R+ − R−) / (R+ + R−)`` of the ranks of ``|between − within|`` signed by
    ``between − within``: +1 when every run is closer to its own workload, −1 when every run
    is farther. The exact null distribution is used for small samples (a permutation test of
    the signs); with 4 runs the smallest possible p is 1/16.

    >>> one_sided_test(np.arange(6.0), np.arange(6.0) + 1)
    (0.015625, 1.0, '')
    >>> p, e, _ = one_sided_test(np.arange(6.0) + 1, np.arange(6.0)); (p, e)
    (1.0, -1.0)
    """
    from scipy.stats import wilcoxon

    x = np.asarray(within, float)
    y = np.asarray(between, float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in shape: {x.shape} vs {y.shape}")
    ok = np.isfinite(x) & np.isfinite(y)
    d = (y - x)[ok]
    if d.size < max(min_pairs, 1):
        return float("nan"), float("nan"), "too few runs"
    nz = d[d != 0]
    if nz.size == 0:
        return 1.0, 0.0, "identical"
    from scipy.stats import rankdata

    r = rankdata(np.abs(nz))
    effect = float((r[nz > 0].sum() - r[nz < 0].sum()) / r.sum())
    res = wilcoxon(x[ok], y[ok], alternative="less")
    return float(res.pvalue), effect, ""


@dataclass
class DTWStudy:
    """Result of :func:`dtw_reproducibility`.

    ``pairs``: one row per workload–metric pair (``workload, metric, n_runs,
    n_pairs, median_within, median_between, statistic, pvalue, significant,
    closer_within, reason, pairing``: the paper's two-sided test; then
    ``p_one_sided, significant_one_sided, effect_size``: the one-sided test on one value
    per run, :func:`one_sided_test`; ``n_others``: how many other workloads' medians each run
    is compared with, see ``max_other_workloads``); ``distances``: one row per run, metric and
    reference (``workload, metric, run, reference, distance`` with reference ``"own"`` or the
    other workload's name); ``by_metric``: per metric, the one-sided test over every run of
    every workload (each run once: independent units, enough of them to reach p < alpha).
    """

    pairs: pl.DataFrame
    distances: pl.DataFrame
    alpha: float
    by_metric: pl.DataFrame | None = None

    @property
    def tested(self) -> pl.DataFrame:
        return self.pairs.filter(pl.col("pvalue").is_not_nan())

    @property
    def share_significant(self) -> float:
        """Share of tested workload–metric pairs with ``p < alpha`` (NaN if none tested)."""
        t = self.tested
        return float(t["significant"].mean()) if t.height else float("nan")

    def summary(self) -> pl.DataFrame:
        """The paper's two-sided share beside the one-sided tests.

        ``share_significant_pct``: two-sided p < alpha (the paper's 99.75 %), in either
        direction; ``significant_wrong_direction``: of those, runs *farther* from their own
        workload; ``share_one_sided_pct``: one-sided p < alpha per workload–metric pair (one
        value per run); ``share_metrics_one_sided_pct``: per metric over all runs
        (``by_metric``); ``median_effect_size``: median rank-biserial effect of the pairs.
        """
        t = self.tested
        nan = float("nan")
        wrong = int((t["significant"] & ~t["closer_within"]).sum()) if t.height else 0
        one = self.pairs.filter(pl.col("p_one_sided").is_not_nan())
        bm = (
            self.by_metric.filter(pl.col("p_one_sided").is_not_nan()) if self.by_metric is not None else None
        )
        return pl.DataFrame(
            {
                "workload_metric_pairs": [self.pairs.height],
                "tested": [t.height],
                "significant": [int(t["significant"].sum()) if t.height else 0],
                "share_significant_pct": [100 * self.share_significant],
                "significant_wrong_direction": [wrong],
                "share_closer_within_pct": [
                    100 * float(t["closer_within"].mean()) if t.height else nan
                ],
                "tested_one_sided": [one.height],
                "share_one_sided_pct": [
                    100 * float(one["significant_one_sided"].mean()) if one.height else nan
                ],
                "median_effect_size": [float(one["effect_size"].median()) if one.height else nan],
                "metrics_tested_one_sided": [bm.height if bm is not None else 0],
                "share_metrics_one_sided_pct": [
                    100 * float(bm["significant_one_sided"].mean()) if bm is not None and bm.height else nan
                ],
                "alpha": [self.alpha],
            }
        )


def dtw_reproducibility(
    traces: Mapping[str, Mapping[str, Sequence[np.ndarray]]],
    *,
    length: int | None = 256,
    window: int | None = None,
    alpha: float = 0.05,
    pairing: str = "run",
    min_pairs: int | None = None,
    prepared: bool = False,
    max_other_workloads: int | None = MAX_OTHER_WORKLOADS,
    seed: int = 0,
) -> DTWStudy:
    """The §5.4 study over ``traces[workload][metric] -> [trace of each run]``.

    See the module docstring for the test. ``length`` resamples every trace
    (``None`` keeps the raw lengths: exact but O(n²) per pair); ``window`` is a
    Sakoe–Chiba band in samples of the resampled traces. ``prepared``: the traces are
    already z-normalized and resampled (:func:`reveal_lab.studies.dtw_piece`), as this
    function would prepare them. ``max_other_workloads``: each run is compared with the
    medians of this many other workloads (:func:`reference_workloads`, from the front of the
    study's :func:`reference_order` drawn with ``seed``; ``None`` or 0: all of them), so that
    its cost does not grow with the number of workloads.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = np.linspace(0, 6, 120)
    >>> runs = {"sine": {"m": [np.sin(t) + 0.1 * rng.normal(size=t.size) for _ in range(8)]},
    ...         "saw": {"m": [(t % 1) + 0.1 * rng.normal(size=t.size) for _ in range(8)]}}
    >>> s = dtw_reproducibility(runs, length=60)
    >>> s.share_significant
    1.0
    """
    if pairing not in ("run", "run_x_workload", "auto"):
        raise ValueError(f"pairing must be 'run', 'run_x_workload' or 'auto', got {pairing!r}")
    if min_pairs is None:
        min_pairs = 6
    # prepare: z-normalize + resample; medians per workload and metric
    prep: dict[str, dict[str, list[np.ndarray]]] = {}
    for w, by_metric in traces.items():
        prep[w] = {}
        for m, runs in by_metric.items():
            if prepared:
                prep[w][m] = [np.asarray(r, float) for r in runs]
                continue
            prep[w][m] = [prepare_trace(r, length) for r in runs if np.asarray(r).size >= 2]
    medians = {w: {m: median_trace(rs, length) for m, rs in bm.items() if rs} for w, bm in prep.items()}

    names = list(prep)
    order = reference_order(names, seed)
    code = {w: i for i, w in enumerate(names)}
    metric_names = list(dict.fromkeys(m for bm in prep.values() for m in bm))
    mcode = {m: i for i, m in enumerate(metric_names)}
    pair_rows: list[dict[str, object]] = []
    cols = _Columns()
    for w, by_metric in prep.items():
        for m, runs in by_metric.items():
            candidates = [w2 for w2 in order if m in medians[w2]]
            chosen = set(reference_workloads(w, candidates, max_other_workloads))
            others = [w2 for w2 in prep if w2 in chosen]  # in the order given, as every other workload
            within, between = _distances(runs, [medians[w2][m] for w2 in others], length, window)
            row = _pair_test(within, between, (pairing, min_pairs, alpha))
            row["n_others"] = len(others)
            pair_rows.append({"workload": w, "metric": m, "n_runs": len(runs), **row})
            cols.add(code[w], mcode[m], [code[w2] for w2 in others], within, between)
    return DTWStudy(
        pl.DataFrame(pair_rows, schema=_PAIRS_SCHEMA),
        cols.distances(names, metric_names),
        alpha,
        _by_metric(cols.units(names, metric_names), min_pairs, alpha),
    )


class _Columns:
    """The distances and per-run units of the study as numpy columns (codes into the workload
    and metric names), one chunk per workload–metric pair, concatenated once at the end."""

    def __init__(self) -> None:
        self.chunks: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, w: int, m: int, others: list[int], within: np.ndarray, between: np.ndarray) -> None:
        self.chunks.append((w, m, np.asarray(others, dtype=np.int64), within, between))

    def distances(self, names: list[str], metrics: list[str]) -> pl.DataFrame:
        """One row per run, metric and reference (``"own"`` first, then the other workloads)."""
        if not self.chunks:
            return pl.DataFrame(schema=_DIST_SCHEMA)
        own = len(names)  # the code of "own": the name after the workloads' in ``refs`` below
        w, m, run, ref, dist = [], [], [], [], []
        for wc, mc, oth, wi, bw in self.chunks:
            n, k = bw.shape
            w.append(np.full(n * (k + 1), wc))
            m.append(np.full(n * (k + 1), mc))
            run.append(np.repeat(np.arange(n), k + 1))
            ref.append(np.tile(np.concatenate([[own], oth]), n))
            dist.append(np.column_stack([wi, bw]).ravel())
        refs = pl.Series([*names, "own"], dtype=pl.String)
        return pl.DataFrame(
            {
                "workload": pl.Series(names, dtype=pl.String).gather(np.concatenate(w)),
                "metric": pl.Series(metrics, dtype=pl.String).gather(np.concatenate(m)),
                "run": np.concatenate(run).astype(np.int64),
                "reference": refs.gather(np.concatenate(ref)),
                "distance": np.concatenate(dist).astype(np.float64),
            },
            schema=_DIST_SCHEMA,
        )

    def units(self, names: list[str], metrics: list[str]) -> pl.DataFrame:
        """One row per run and metric: ``within`` and the mean ``between`` distance."""
        if not self.chunks:
            return pl.DataFrame(schema=_UNITS_SCHEMA)
        w, m, run, wi, bw = [], [], [], [], []
        for wc, mc, _oth, within, between in self.chunks:
            n = within.size
            w.append(np.full(n, wc))
            m.append(np.full(n, mc))
            run.append(np.arange(n))
            wi.append(within)
            bw.append(_mean_between(between))
        return pl.DataFrame(
            {
                "metric": pl.Series(metrics, dtype=pl.String).gather(np.concatenate(m)),
                "workload": pl.Series(names, dtype=pl.String).gather(np.concatenate(w)),
                "run": np.concatenate(run).astype(np.int64),
                "within": np.concatenate(wi).astype(np.float64),
                "between": np.concatenate(bw).astype(np.float64),
            },
            schema=_UNITS_SCHEMA,
        )


def _distances(
    runs: list[np.ndarray], refs: list[np.ndarray], length: int | None, window: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Each run's DTW distance to the median of its workload's other runs (``within``) and
    to the reference medians (``between``: ``float64[runs, refs]``, one batched call)."""
    within = np.full(len(runs), np.nan)
    if len(runs) > 1:  # a lone run has no leave-one-out median
        for i, r in enumerate(runs):
            within[i] = dtw_distance(r, median_trace(runs[:i] + runs[i + 1 :], length), window)
    return within, dtw_distances(runs, refs, window)


def _mean_between(between: np.ndarray) -> np.ndarray:
    """Each run's mean distance to the other workloads' medians (NaN without another workload)."""
    if not between.shape[1]:
        return np.full(between.shape[0], np.nan)
    return between.mean(axis=1)


def _pair_test(wi: np.ndarray, B: np.ndarray, test: tuple) -> dict[str, object]:
    """The paired test of one workload–metric pair (within against between ``B``, runs × other
    workloads, paired by run or by run × other workload), and the one-sided test by run;
    ``test``: ``(pairing, min_pairs, alpha)``."""
    pairing, min_pairs, alpha = test
    n = wi.size
    if not B.shape[1]:
        stat, p, reason, n_pairs, bw = float("nan"), float("nan"), "no other workload", 0, np.full(n, np.nan)
        used = pairing
    else:
        used = pairing if pairing != "auto" else ("run" if n >= min_pairs else "run_x_workload")
        if used == "run":
            x, y = wi, B.mean(axis=1)
        else:
            x, y = np.repeat(wi, B.shape[1]), B.ravel()
        stat, p, reason = signed_rank_test(x, y, min_pairs=min_pairs)
        n_pairs = int(np.isfinite(x - y).sum())
        bw = B.mean(axis=1)
    p1, eff, _r1 = one_sided_test(wi, bw)
    return {
        "n_pairs": n_pairs,
        "median_within": float(np.nanmedian(wi)) if np.isfinite(wi).any() else float("nan"),
        "median_between": float(np.nanmedian(bw)) if np.isfinite(bw).any() else float("nan"),
        "statistic": stat,
        "pvalue": p,
        "significant": bool(np.isfinite(p) and p < alpha),
        "pairing": used,
        "closer_within": bool(
            np.isfinite(wi).any() and np.isfinite(bw).any() and np.nanmedian(wi) < np.nanmedian(bw)
        ),
        "reason": reason,
        "p_one_sided": p1,
        "significant_one_sided": bool(np.isfinite(p1) and p1 < alpha),
        "effect_size": eff,
    }


def _by_metric(u: pl.DataFrame, min_pairs: int, alpha: float) -> pl.DataFrame:
    """The one-sided test per metric over every workload's runs (within against between)."""
    rows = []
    for (m,), g in u.group_by(["metric"], maintain_order=True):
        p1, eff, reason = one_sided_test(g["within"].to_numpy(), g["between"].to_numpy(), min_pairs=min_pairs)
        ok = g.filter(pl.col("within").is_finite() & pl.col("between").is_finite())
        rows.append(
            {
                "metric": m,
                "n_runs": ok.height,
                "n_workloads": ok["workload"].n_unique(),
                "median_within": float(ok["within"].median()) if ok.height else float("nan"),
                "median_between": float(ok["between"].median()) if ok.height else float("nan"),
                "p_one_sided": p1,
                "significant_one_sided": bool(np.isfinite(p1) and p1 < alpha),
                "effect_size": eff,
                "reason": reason,
            }
        )
    return pl.DataFrame(rows, schema=_BY_METRIC_SCHEMA)


_PAIRS_SCHEMA = {
    "workload": pl.String,
    "metric": pl.String,
    "n_runs": pl.Int64,
    "n_pairs": pl.Int64,
    "median_within": pl.Float64,
    "median_between": pl.Float64,
    "statistic": pl.Float64,
    "pvalue": pl.Float64,
    "significant": pl.Boolean,
    "closer_within": pl.Boolean,
    "reason": pl.String,
    "pairing": pl.String,
    "p_one_sided": pl.Float64,
    "significant_one_sided": pl.Boolean,
    "effect_size": pl.Float64,
    "n_others": pl.Int64,
}
_DIST_SCHEMA = {
    "workload": pl.String,
    "metric": pl.String,
    "run": pl.Int64,
    "reference": pl.String,
    "distance": pl.Float64,
}
_UNITS_SCHEMA = {
    "metric": pl.String,
    "workload": pl.String,
    "run": pl.Int64,
    "within": pl.Float64,
    "between": pl.Float64,
}
_BY_METRIC_SCHEMA = {
    "metric": pl.String,
    "n_runs": pl.Int64,
    "n_workloads": pl.Int64,
    "median_within": pl.Float64,
    "median_between": pl.Float64,
    "p_one_sided": pl.Float64,
    "significant_one_sided": pl.Boolean,
    "effect_size": pl.Float64,
    "reason": pl.String,
}


def trace_keys(
    per_workload: Mapping[str, Sequence[Mapping[str, object]]],
    varies: Callable[[str], bool],
    metrics: Sequence[str] | None,
    max_metrics: int | None,
) -> list[str]:
    """The metric keys the DTW study compares: ``metrics`` when given, else the keys every
    workload has in at least one of its runs (``per_workload``: workload -> one mapping keyed
    by metric per run) for which ``varies`` holds, sorted; the first ``max_metrics`` (0 or None: all)."""
    if metrics:
        keys = list(metrics)
    else:
        shared = (
            set.intersection(*(set().union(*(set(d) for d in ds)) for ds in per_workload.values()))
            if per_workload
            else set()
        )
        keys = sorted(k for k in shared if varies(k))
    return keys[:max_metrics] if max_metrics else keys


def collect_traces(
    runs: Sequence[object],
    *,
    by_phase: bool = False,
    metrics: Sequence[str] | None = None,
    max_metrics: int | None = None,
    kinds: Sequence[str] = ("dynamic",),
) -> dict[str, dict[str, list[np.ndarray]]]:
    """``traces[workload][metric key] -> [one trace per run and host]`` for :func:`dtw_reproducibility`.

    Metrics are matched across runs and hosts by their host-free key
    (:meth:`reveal_lab.telemetry.MetricName.key`); ``by_phase`` treats the phases of a
    workload (train, infer, fine-tuning) as separate workloads. By default every metric of the
    given registry ``kinds`` that all workloads share and that is not constant
    everywhere; ``metrics`` (keys) picks them explicitly; ``max_metrics`` keeps the
    first ``n`` in sorted order (a deterministic subset for quick runs).
    """
    from reveal_lab.telemetry import classify, metric_columns, parse_metric_name

    per_workload: dict[str, list[dict[str, np.ndarray]]] = {}
    for run in runs:
        for _host, sub in run.split_hosts().items():  # type: ignore[attr-defined]
            by_key: dict[str, np.ndarray] = {}
            for c in metric_columns(sub.frame):
                m = parse_metric_name(c)
                if m is None or classify(c).kind not in kinds:
                    continue
                by_key[m.key()] = sub.frame.get_column(c).to_numpy().astype(np.float64)
            name = run.meta.workload or "unknown"  # type: ignore[attr-defined]
            if by_phase and run.meta.phase:  # type: ignore[attr-defined]
                name = f"{name} ({run.meta.phase})"  # type: ignore[attr-defined]
            per_workload.setdefault(name, []).append(by_key)
    def varies(k: str) -> bool:
        return any(
            k in d and np.nanstd(d[k]) > 0
            for ds in per_workload.values()
            for d in ds
            if np.isfinite(d.get(k, np.array([np.nan]))).any()
        )

    keys = trace_keys(per_workload, varies, metrics, max_metrics)
    return {
        w: {k: [d[k] for d in ds if k in d and np.isfinite(d[k]).sum() >= 2] for k in keys}
        for w, ds in per_workload.items()
    }
