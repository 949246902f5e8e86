"""One host of one run scored: detection view, window features, the detectors fitted on the
run or its baseline runs with the policy's thresholds, windows in a row, attribution."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from reveal_lab.attribution import Attribution, attribute
from reveal_lab.config import Preset
from reveal_lab.pipeline._baseline_check import check_baseline, outlier_notes
from reveal_lab.pipeline._cache import memoize
from reveal_lab.pipeline._calibration import cross_fit_thresholds, left_out_notes, unreachable_notes
from reveal_lab.numeric import sustained
from reveal_lab.pipeline._robust import robust_threshold
from reveal_lab.pipeline._policy import ResolvedPolicy
from reveal_lab.pipeline._view import baseline_matrix, detection_view, features_of
from reveal_lab.telemetry import Run, TelemetryError, TelemetryWarning, metric_key

if TYPE_CHECKING:
    from reveal_lab.detectors import EnsembleResult

__all__ = [
    "score_host", "sustained_result", "ScoreSettings", "UNSCORED_FIELDS", "unkeyed_fields", "family_groups",
    "family_threshold", "confirmed_result", "host_memory_kb",
]


#: a run alone by subsystem: each feature's Z-score scale is at least this share of its level
RELATIVE_FLOOR = 0.01
#: the window features that follow a metric's level (a shift moves them all); the others
#: follow its shape within the window (spread, skew, trend, memory)
LEVEL_FEATURES = frozenset({"mean", "min", "max", "sum", "median"})


#: a run alone by subsystem: the least scale of a percentage's level and spread features, in
#: percentage points
PERCENT_FLOOR = 1.0
#: a run alone by subsystem: the least scale of a host-memory gauge's level and spread
#: features, as a share of the host's memory (0.1 %: 25 MB of 24 GB, 2 GB of 2 TB): buffers,
#: page tables or a cgroup's usage moving by a few megabytes on a host of gigabytes is the
#: host's housekeeping, not a deviation
MEMORY_FLOOR = 0.001
#: a run alone by subsystem: the least scale of the reclaimable page cache's gauges (and of
#: free memory, its mirror), as a share of the host's memory: files read, written and deleted
#: move the cache by gigabytes while what processes can use stays (``MemAvailable`` and
#: anonymous memory keep :data:`MEMORY_FLOOR`; the pressure and reclaim counters, no floor)
PAGE_CACHE_FLOOR = 0.02
#: the page cache's gauges and free memory (``/proc/meminfo`` and ``/proc/vmstat`` names)
PAGE_CACHE_FIELDS = frozenset({
    "MemFree", "Buffers", "Cached", "Active_file", "Inactive_file", "Active(file)", "Inactive(file)",
    "FileHugePages", "FilePmdMapped", "SReclaimable", "KReclaimable", "nr_free_pages", "nr_file_pages",
    "nr_active_file", "nr_inactive_file", "nr_slab_reclaimable",
})
#: the units of host memory, per kB
MEMORY_UNITS_PER_KB = {"kB": 1.0, "Bytes": 1024.0, "B": 1024.0, "pages": 0.25}
#: sources whose memory gauges are not the host's memory (a GPU's own)
MEMORY_FLOOR_EXEMPT = frozenset({"GPU"})


def unit_floors(pairs: pl.DataFrame, mem_total_kb: float | None = None) -> tuple[float, ...]:
    """For each metric-feature pair of ``pairs``, the least Z-score scale in the feature's
    unit, for its level features and its standard deviation: :data:`PERCENT_FLOOR` for a
    percentage; for a gauge of host memory (kB, Bytes, pages: anonymous memory, a cgroup's
    usage, …) :data:`MEMORY_FLOOR` of the host's memory (``mem_total_kb``; none when it is not
    known), :data:`PAGE_CACHE_FLOOR` for the page cache and free memory; else 0.

    >>> p = pl.DataFrame({
    ...     "metric": ["CPU:User%.h[%]", "Memory:AnonPages.h[kB]", "Vmstat:nr_mapped.h[pages]",
    ...                "Memory:Cached.h[kB]", "Vmstat_diff:pgfree.h[count]", "Memory:Cached.h[kB]"],
    ...     "feature": ["mean", "max", "std", "min", "mean", "skew"]})
    >>> unit_floors(p, mem_total_kb=1_000_000)
    (1.0, 1000.0, 250.0, 20000.0, 0.0, 0.0)
    >>> unit_floors(p)
    (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    """
    from reveal_lab.telemetry import parse_metric_name

    def floor(m: str) -> tuple[float, bool]:
        p = parse_metric_name(m)
        if p is None:
            return 0.0, False
        if p.unit == "%":
            return PERCENT_FLOOR, True
        per_kb = MEMORY_UNITS_PER_KB.get(p.unit)
        if per_kb is None or p.diff or not mem_total_kb or p.source in MEMORY_FLOOR_EXEMPT:
            return 0.0, False
        share = PAGE_CACHE_FLOOR if p.field in PAGE_CACHE_FIELDS else MEMORY_FLOOR
        return share * mem_total_kb * per_kb, True

    floors = {m: floor(m) for m in set(pairs["metric"].to_list())}
    return tuple(
        floors[m][0] if floors[m][1] and (f in LEVEL_FEATURES or f == "std") else 0.0
        for m, f in zip(pairs["metric"].to_list(), pairs["feature"].to_list(), strict=True)
    )


def host_memory_kb(frame: pl.DataFrame) -> float | None:
    """The host's memory in kB, from a ``Memory:MemTotal`` column of ``frame`` (its first
    value); ``None`` where there is none."""
    from reveal_lab.telemetry import parse_metric_name

    for c in frame.columns:
        p = parse_metric_name(c)
        if p is not None and p.source == "Memory" and p.field == "MemTotal" and p.unit == "kB" and not p.diff:
            v = frame[c].drop_nulls()
            v = v.filter(v > 0) if v.dtype.is_numeric() else v.clear()
            return float(v[0]) if v.len() else None
    return None


def family_groups(pairs: pl.DataFrame) -> tuple[int, ...]:
    """For each metric-feature pair of ``pairs`` (``metric``, ``feature``), its group: the
    metric's family (its source, ``CPU``, ``Softirqs``, ``GPU``, ``Nstat`` …, a counter's
    ``_diff`` with its gauge) and whether the feature follows the level
    (:data:`LEVEL_FEATURES`) or the shape, so that a level shift of a family's metrics is not
    averaged with the shape features that do not move.

    >>> p = pl.DataFrame({
    ...     "metric": ["GPU: memory.used.0.h[MiB]", "GPU: power.draw.0.h[W]",
    ...                "Nstat_diff:TcpInSegs.h[count]"],
    ...     "feature": ["mean", "skew", "mean"]})
    >>> family_groups(p)
    (1, 0, 3)
    """
    metrics = pairs["metric"].to_list()
    family = {m: m.split(":", 1)[0].strip().removesuffix("_diff") for m in set(metrics)}
    index = {f: i for i, f in enumerate(sorted(set(family.values())))}
    return tuple(
        2 * index[family[m]] + (f in LEVEL_FEATURES)
        for m, f in zip(metrics, pairs["feature"].to_list(), strict=True)
    )


def family_threshold(rate: float, n_detectors: int, n_groups: int) -> float:
    """The Z-score's threshold by family (:func:`family_groups`): each family's two statistics,
    its mean ``|z|`` and its upper tail, are in units of their own spread
    (:class:`~reveal_lab.detectors.ZScoreDetector` ``groups``), and the tail must clear
    ``ZScoreDetector.TAIL_MARGIN`` (``m``) times the threshold, so the false-alarm rate is held
    per family: the ``t`` at which ``P(N > t) + P(N > m·t) = rate / (n_detectors · n_groups)``,
    ``N`` standard normal (a union bound over detectors, families and the two statistics; the
    tail's term lifts ``t`` by under 10⁻⁵ above the normal quantile at
    ``1 − rate / (n_detectors · n_groups)`` at the default rate).

    >>> round(family_threshold(0.01, 3, 40), 2)
    3.76
    """
    from scipy.optimize import brentq
    from scipy.stats import norm

    from reveal_lab.detectors import ZScoreDetector

    margin = ZScoreDetector.TAIL_MARGIN
    alpha = rate / (n_detectors * max(n_groups, 1))
    t0 = float(norm.isf(alpha))  # the mean's alone; the tail's term lifts it a little
    return float(brentq(lambda t: norm.sf(t) + norm.sf(margin * t) - alpha, t0, t0 + 1.0, xtol=1e-12))


def sustained_result(result: EnsembleResult, min_run: int) -> EnsembleResult:
    """Each detector's labels kept only in runs of ``min_run`` windows (:func:`sustained`);
    agreement recounted. Scores, thresholds and the combined score stay as they are."""
    from reveal_lab.detectors import EnsembleResult

    labels = {m: sustained(v == 1, min_run).astype(v.dtype) for m, v in result.labels.items()}
    agreement = np.sum([labels[m] for m in result.methods], axis=0).astype(result.agreement.dtype)
    return EnsembleResult(result.scores, result.thresholds, labels, agreement, result.combined)


def confirmed_result(result: EnsembleResult, lead: str = "zscore") -> EnsembleResult:
    """A run alone by family: the ``lead`` detector's labels as they are (the Z-score by family
    holds its false-alarm rate per family), every other detector's kept only in the windows
    that another detector flags too; agreement recounted. The Mahalanobis distance and the
    Isolation Forest score every feature at once against the run's own windows, and a burst of
    spikes in a few shape features (a host's housekeeping: kurtosis, an ADF statistic) takes
    either alone over its threshold for seconds on a calm host. Without ``lead`` among the
    detectors, ``result`` as it is.

    >>> import numpy as np
    >>> from reveal_lab.detectors import EnsembleResult
    >>> lab = {"zscore": np.array([1, 0, 0, 0]), "mahalanobis": np.array([1, 1, 1, 0]),
    ...        "iforest": np.array([0, 0, 1, 1])}
    >>> r = confirmed_result(EnsembleResult({m: np.zeros(4) for m in lab}, {}, lab, sum(lab.values()),
    ...                                     np.zeros(4)))
    >>> {m: v.tolist() for m, v in r.labels.items()}, r.agreement.tolist()
    ({'zscore': [1, 0, 0, 0], 'mahalanobis': [1, 0, 1, 0], 'iforest': [0, 0, 1, 0]}, [2, 0, 2, 0])
    """
    from reveal_lab.detectors import EnsembleResult

    if lead not in result.labels:
        return result
    flags = {m: np.asarray(v) == 1 for m, v in result.labels.items()}
    count = np.sum([flags[m] for m in result.methods], axis=0)
    labels = {
        m: v if m == lead else (flags[m] & (count >= 2)).astype(np.asarray(v).dtype)
        for m, v in result.labels.items()
    }
    agreement = np.sum([labels[m] for m in result.methods], axis=0).astype(result.agreement.dtype)
    return EnsembleResult(result.scores, result.thresholds, labels, agreement, result.combined)


@dataclass(frozen=True)
class ScoreSettings:
    """The fields of a :class:`ResolvedPolicy` that scoring one host reads, and nothing else:
    the score cache's key, so that two policies that score alike (other names, reasons,
    agreement counts, trimming notes or sentinel rules, applied after scoring) share entries.

    Every field of :class:`~reveal_lab.pipeline.DetectionPolicy` and of
    :class:`ResolvedPolicy` is either one of these (same name) or in :data:`UNSCORED_FIELDS`
    with the reason scoring does not read it (:func:`unkeyed_fields` lists those that are
    neither); :meth:`of` copies these fields by name."""

    thresholds: str
    false_alarm_rate: float | None
    calibration: str | None
    z_clip: float | None
    force_baseline: bool
    min_run: int
    outlier_fence: bool
    by_subsystem: bool = False
    quantile: float | None = None
    zscore: str = "robust"

    @classmethod
    def of(cls, policy: ResolvedPolicy) -> ScoreSettings:
        """The scoring fields of ``policy``, copied by name."""
        return cls(**{f.name: getattr(policy, f.name) for f in fields(cls)})


#: the policy fields (:class:`~reveal_lab.pipeline.DetectionPolicy`, :class:`ResolvedPolicy`)
#: that are not in :class:`ScoreSettings`, and why a score cached without them is still right
UNSCORED_FIELDS: dict[str, str] = {
    "name": "a label printed with the policy",
    "reasons": "why each value was chosen: printed, never read",
    "departures": "where the paper's policy departs from the paper: printed, never read",
    "baseline_runs": "the baseline runs reach the key as their features (score_host's baseline)",
    "source": "decides other fields at resolution; scoring reads those",
    "fit_on": "follows from thresholds and the baseline features, both in the key",
    "min_agreement": "counted over the detectors' labels after scoring",
    "sentinel_samples": "the sentinel rule, applied to the windows after scoring",
    "sentinel_rule": "the sentinel rule, applied to the windows after scoring",
    "sentinel_min_run": "the sentinel rule, applied to the windows after scoring",
    "lone_sentinel": "resolved into sentinel_rule, applied after scoring",
    "trim": "cuts the run before scoring: the key holds the cut frame's contents",
    "skip_startup": "cuts the run before scoring: the key holds the cut frame's contents",
    "fold_cores": "folds the run's columns before scoring: the key holds the folded frame",
    "prune": "the metric space reaches the key as score_host's selected metrics",
    "prune_method": "how the metric space is cut: it reaches the key as the selected metrics",
}


def unkeyed_fields(*policies: type) -> list[str]:
    """Fields of the dataclasses ``policies`` in neither :class:`ScoreSettings` nor
    :data:`UNSCORED_FIELDS` (a knob that could change scores without changing the score
    cache's key), and entries of :data:`UNSCORED_FIELDS` that are keyed too or name no field.

    >>> from reveal_lab.pipeline import DetectionPolicy, ResolvedPolicy
    >>> unkeyed_fields(DetectionPolicy, ResolvedPolicy)
    []
    """
    keyed = {f.name for f in fields(ScoreSettings)}
    names = {f.name for cls in policies for f in fields(cls)}
    said = set(UNSCORED_FIELDS)
    out = [f"{n}: neither in ScoreSettings nor in UNSCORED_FIELDS" for n in sorted(names - keyed - said)]
    out += [f"{n}: in UNSCORED_FIELDS and in ScoreSettings" for n in sorted(keyed & said)]
    out += [f"{n}: in UNSCORED_FIELDS but no field of the policies" for n in sorted(said - names)]
    return out


@memoize("score", ignore=("timings",))
def score_host(
    run: Run,
    host: str,
    preset: Preset,
    baseline: list | None,
    selected: Any,
    derive: bool,
    timings: dict[str, float],
    policy: ScoreSettings,
) -> tuple[pl.DataFrame, Attribution, dict[str, float], pl.DataFrame, list[str], EnsembleResult]:
    """One host of ``run`` scored under ``policy``'s scoring fields (:meth:`ScoreSettings.of`)."""
    from reveal_lab.detectors import DetectorEnsemble, default_detectors

    t = time.perf_counter()
    frame, notes = detection_view(run.frame, selected, derive=derive)
    notes = [f"{host}: {n}" for n in notes]
    timings["derive"] = timings.get("derive", 0.0) + time.perf_counter() - t
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TelemetryWarning)
        wf = features_of(frame, preset)
    for w in caught:
        if issubclass(w.category, TelemetryWarning):
            notes.append(f"{host}: {w.message}")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    timings["features"] = timings.get("features", 0.0) + time.perf_counter() - t
    if wf.n_pairs == 0:
        raise TelemetryError(f"run {run.run_id!r} host {host!r}: no dynamic or counter metric to score")
    pairs = wf.pairs
    if "key" not in pairs.columns:
        pairs = pairs.with_columns(key=pl.col("metric").map_elements(metric_key, return_dtype=pl.String))
    t = time.perf_counter()
    calibrated = policy.thresholds == "calibrated"
    replaced: set[str] = set()  # detectors whose fitted threshold is replaced
    dets = default_detectors(
        preset.detect, clip=policy.z_clip, outlier_fence=policy.outlier_fence, zscore=policy.zscore,
        **({"quantile": policy.quantile} if policy.quantile is not None else {}),
    )
    if policy.by_subsystem:
        floors = unit_floors(pairs, host_memory_kb(run.frame))
        for d in dets:
            if d.name == "zscore":
                d.set_params(groups=family_groups(pairs), relative_floor=RELATIVE_FLOOR, scale_floor=floors)
    ens = DetectorEnsemble(dets)
    if baseline:
        Xfit = baseline_matrix(baseline, pairs)
        if Xfit.shape[0] < 2:
            raise ValueError(f"baseline gives {Xfit.shape[0]} window(s); at least 2 are needed")
        base_keys = {kf[0] for col, *_ in baseline for kf in col}
        notes += check_baseline(
            pairs, Xfit, base_keys, where=f"{run.run_id} {host}", force=policy.force_baseline
        )
        ens.fit(Xfit)
        setters: dict[str, tuple[int, float, float]] = {}  # detector → what set its calibrated threshold
        if calibrated:  # out-of-sample thresholds instead of in-sample ones
            left: dict[str, int] = {}
            for m, thr in cross_fit_thresholds(
                baseline, pairs, preset, policy.false_alarm_rate, policy.calibration, left_out=left,
                clip=policy.z_clip, setters=setters,
            ).items():
                ens.detectors_[m].threshold_ = thr
                replaced.add(m)
            notes += left_out_notes(left, baseline, host)
        result = ens.score(wf.X)
        notes += unreachable_notes(setters, result, baseline, host)
    else:
        if wf.n_windows < 2:
            raise TelemetryError(
                f"run {run.run_id!r} host {host!r}: {wf.n_windows} window(s); fitting on the "
                "run itself needs at least 2 (give --baseline runs or a longer run)"
            )
        ens.fit(wf.X)
        result = ens.result_
        if policy.thresholds == "robust":  # against the run's calm majority, not a fixed top share
            n_det = len(result.methods)
            for m in result.methods:
                groups = getattr(ens.detectors_[m], "groups", None)
                ens.detectors_[m].threshold_ = (
                    family_threshold(policy.false_alarm_rate, n_det, len(set(groups)))
                    if groups is not None
                    else robust_threshold(result.scores[m], policy.false_alarm_rate, n_det)
                )
                replaced.add(m)
            result = ens.score(wf.X)
    if policy.by_subsystem:
        result = confirmed_result(result)
    raw_agreement = result.agreement  # before the min_run rule (the report counts what it dropped)
    if policy.min_run > 1:
        result = sustained_result(result, policy.min_run)
    notes += outlier_notes(ens.detectors_, where=f"{run.run_id} {host}", replaced=replaced)
    timings["detectors"] = timings.get("detectors", 0.0) + time.perf_counter() - t
    t = time.perf_counter()
    # by family, the Z-score's own contributions name the family that fired (the deviation rule
    # ranks every pair by |z|, where hundreds of clipped pairs of other families tie)
    att = attribute(
        ens.detectors_, wf.X, pairs, wf.windows, result, top_k=preset.detect.top_k, host=host,
        rule="shares" if policy.by_subsystem else "deviation",
    )
    timings["attribution"] = timings.get("attribution", 0.0) + time.perf_counter() - t
    w = wf.windows.select("window_id", "start", "end", "n_samples").with_columns(host=pl.lit(host))
    w = w.with_columns(
        *[pl.Series(f"score_{m}", result.scores[m]) for m in result.methods],
        *[pl.Series(f"label_{m}", result.labels[m]) for m in result.methods],
        pl.Series("agreement", result.agreement),
        pl.Series("raw_agreement", raw_agreement),
        pl.Series("combined", result.combined),
    )
    return w, att, result.thresholds, wf.excluded, notes, result
