"""From a run's telemetry to scored, attributed windows.

derive → detection view (selected metrics, static ones out) → time windows →
window features → the three detectors (fit on the run itself, as the paper, or on
baseline runs) → agreement and combined score → attribution (pairs, subsystems,
host, claims). Multi-host runs are split per host, scored per host, then joined.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from reveal_lab.attribution import EVIDENCE_SCHEMA, WINDOW_SCHEMA, Attribution, attribute
from reveal_lab.config import Preset, get_preset
from reveal_lab.pipeline._baseline_check import (
    BaselineMismatch,
    check_baseline,
    check_metric_overlap,
    outlier_notes,
)
from reveal_lab.detectors import DetectorEnsemble, EnsembleResult, default_detectors
from reveal_lab.pipeline._cache import memoize
from reveal_lab.pipeline._method import (
    Pruning,
    fit_pruning,
    load_pruning,
    robust_threshold,
    sustained,
    trim_arguments,
    trim_run,
)
from reveal_lab.pipeline._policy import POLICIES, DetectionPolicy, ResolvedPolicy, run_source
from reveal_lab.pipeline._sentinel import (
    SENTINEL_WINDOW_SCHEMA,
    lone_sentinel_windows,
    per_interval_counts,
    sentinel_counters,
    sentinel_evidence,
    sentinel_windows,
    silent_counters,
)
from reveal_lab.telemetry import (
    SUBSYSTEMS,
    TIMESTAMP,
    Run,
    TelemetryError,
    TelemetryWarning,
    metric_columns,
    metric_key,
)

__all__ = [
    "Detection",
    "detect_run",
    "detect_many",
    "detection_view",
    "select_metrics",
    "policy_from_keywords",
    "ANOMALIES_COLUMNS",
]

log = logging.getLogger(__name__)

#: the columns of ``anomalies.csv``, in order
ANOMALIES_COLUMNS: tuple[str, ...] = (
    "window_id",
    "start",
    "end",
    "host",
    "methods",
    "agreement",
    "subsystem",
    "metric",
    "feature",
    "score",
    "claim",
)


@dataclass
class Detection:
    """The outcome of :func:`detect_run` for one run.

    Attributes
    ----------
    windows : one row per scored window and host: ``window_id, start, end, host,
        n_samples``, ``score_<detector>``, ``label_<detector>``, ``agreement``,
        ``raw_agreement`` (before the ``min_run`` rule), ``combined``, the sentinel rule's
        ``sentinel_samples``, ``sentinel``,
        ``sentinel_metric``, ``sentinel_subsystem`` (:func:`sentinel_windows`; with baseline
        runs), ``anomalous`` (the decision: ``agreement >= min_agreement`` or ``sentinel``),
        and for anomalous windows their (joint) ``subsystems``, ``top_subsystem`` and
        ``share_<subsystem>`` (a window flagged by the sentinel rule alone: its counter's
        subsystem, share 1).
    evidence : one row per anomalous window × metric–feature pair (the columns of
        ``anomalies.csv`` first, see :data:`ANOMALIES_COLUMNS`).
    thresholds : per host, per detector.
    summary : counts and shares (see :meth:`make_summary`).
    """

    run_id: str
    meta: dict[str, Any]
    windows: pl.DataFrame
    evidence: pl.DataFrame
    methods: list[str]
    thresholds: dict[str, dict[str, float]]
    fit_mode: str
    min_agreement: int
    config: dict[str, Any]
    excluded: pl.DataFrame
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    #: cross-host deviation for runs with 3+ hosts (:func:`reveal_lab.crosshost.deviation`;
    #: :func:`reveal_lab.crosshost.baseline_deviation` when 2+ baseline runs have the same hosts)
    crosshost: pl.DataFrame | None = None
    #: with baseline runs: the counters 0 in every baseline sample that move here
    #: (:func:`reveal_lab.pipeline.sentinel_counters`)
    sentinels: pl.DataFrame | None = None

    @property
    def scores(self) -> dict[str, np.ndarray]:
        return {m: self.windows[f"score_{m}"].to_numpy() for m in self.methods}

    @property
    def labels(self) -> dict[str, np.ndarray]:
        return {m: self.windows[f"label_{m}"].to_numpy() for m in self.methods}

    @property
    def agreement(self) -> np.ndarray:
        return self.windows["agreement"].to_numpy()

    @property
    def combined(self) -> np.ndarray:
        return self.windows["combined"].to_numpy()

    @property
    def decision(self) -> pl.Expr:
        """The run's decision on a window of :attr:`windows`: its ``anomalous`` column
        (agreement reaches ``min_agreement``, or the sentinel rule fires)."""
        if "anomalous" in self.windows.columns:
            return pl.col("anomalous").fill_null(False)
        return pl.col("agreement") >= self.min_agreement

    @property
    def anomalous(self) -> pl.DataFrame:
        """The windows the run's decision flags (:attr:`decision`)."""
        return self.windows.filter(self.decision)

    def anomalies(self) -> pl.DataFrame:
        """The evidence with exactly the columns of ``anomalies.csv``."""
        return self.evidence.select(ANOMALIES_COLUMNS)

    def make_summary(self) -> dict[str, Any]:
        w = self.windows
        anom = self.anomalous
        hosts = w["host"].unique(maintain_order=True).to_list()

        def block(ws: pl.DataFrame, an: pl.DataFrame) -> dict[str, Any]:
            k = ws.height
            per_det = {
                m: {
                    "flagged": int(ws[f"label_{m}"].sum()),
                    "share": float(ws[f"label_{m}"].sum() / k) if k else 0.0,
                }
                for m in self.methods
            }
            agree = {str(a): int((ws["agreement"] == a).sum()) for a in range(len(self.methods) + 1)}
            subs = {}
            for s in SUBSYSTEMS:
                hit = (
                    int(an.filter(pl.col("subsystems").str.split("+").list.contains(s)).height)
                    if an.height
                    else 0
                )
                top = int((an["top_subsystem"] == s).sum()) if an.height else 0
                if hit or top:
                    subs[s] = {"windows": hit, "share": hit / k if k else 0.0, "top": top}
            return {
                "windows": k,
                "anomalous": an.height,
                "anomalous_share": an.height / k if k else 0.0,
                "per_detector": per_det,
                "agreement": agree,
                "per_subsystem": subs,
            }

        out = {
            "run_id": self.run_id,
            "fit_mode": self.fit_mode,
            "min_agreement": self.min_agreement,
            "methods": self.methods,
            "hosts": hosts,
            "config": self.config,
            "meta": {k: v for k, v in self.meta.items() if k != "extra"},
            "thresholds": self.thresholds,
            **block(w, anom),
            "per_host": {
                h: block(w.filter(pl.col("host") == h), anom.filter(pl.col("host") == h)) for h in hosts
            }
            if len(hosts) > 1
            else {},
            "evidence_rows": self.evidence.height,
            "crosshost_persistent": (
                int(self.crosshost["persistent"].sum()) if self.crosshost is not None else None
            ),
            "excluded_metrics": self.excluded.height,
            "sentinel_counters": None if self.sentinels is None else self.sentinels.height,
            "sentinel_windows": int(w["sentinel"].sum()) if "sentinel" in w.columns else 0,
            # windows that had the detectors' agreement before the min_run rule dropped it
            "short_runs_dropped": (
                int(((w["raw_agreement"] >= self.min_agreement) & ~w["anomalous"]).sum())
                if "raw_agreement" in w.columns
                else 0
            ),
            "warnings": list(self.warnings),
            "timings_s": self.timings,
        }
        out["no_anomaly"] = anom.height == 0
        return out


# ------------------------------------------------------------------------------------------
def select_metrics(columns: Iterable[str], selected: Iterable[str] | Any) -> list[str]:
    """The metric columns of ``columns`` in ``selected`` (column names or host-free keys, or a
    pruning result with ``.selected``), in column order; the timestamp is never one.

    >>> select_metrics(["timestamp", "CPU:Busy%.0.h1[%]", "Memory:Dirty.h1[kB]"], ["CPU:Busy%.0"])
    ['CPU:Busy%.0.h1[%]']
    """
    sel = set(getattr(selected, "selected", selected))
    return [c for c in columns if c != TIMESTAMP and (c in sel or metric_key(c) in sel)]


@memoize("view")
def detection_view(
    frame: pl.DataFrame,
    selected: Iterable[str] | Any | None = None,
    *,
    derive: bool = True,
    keep_constant: bool = False,
) -> tuple[pl.DataFrame, list[str]]:
    """The frame the detectors see: derived metrics added (:func:`reveal_lab.derive.add_derived`),
    static, all-missing and constant columns left out (:func:`reveal_lab.derive.detection_view`,
    the reasons go to the returned notes), restricted to ``selected`` metrics (column
    names or host-free keys, or a pruning result with ``.selected``)."""
    from reveal_lab.derive import add_derived
    from reveal_lab.derive import detection_view as single_host_view

    notes: list[str] = []
    if derive:
        frame = add_derived(frame)
    full = frame
    frame, cat = single_host_view(frame)
    if keep_constant:  # baseline runs: "never moved in the baseline" is information
        const = cat.filter(pl.col("reason") == "constant over the run")["column"].to_list()
        frame = full.select(*frame.columns, *const)
        cat = cat.filter(pl.col("reason") != "constant over the run")
    left = cat.filter(~pl.col("used")).group_by("reason").len().sort("reason")
    if left.height:
        notes.append(
            "left out of single-host detection: " + ", ".join(f"{n} ({r})" for r, n in left.iter_rows())
        )
    if selected is not None:
        sel = set(getattr(selected, "selected", selected))
        cols = select_metrics(metric_columns(frame), sel)
        if not cols:
            raise TelemetryError(
                f"none of the {len(sel)} selected metrics is in this run (first selected: {sorted(sel)[:3]})"
            )
        dropped = len(metric_columns(frame)) - len(cols)
        if dropped:
            notes.append(f"detection view: {len(cols)} selected metrics kept, {dropped} left out")
        frame = frame.select(TIMESTAMP, *cols)
    return frame, notes


def _features(frame: pl.DataFrame, preset: Preset):  # noqa: ANN202 - WindowFeatures
    return _window_features(frame, preset.window)


@memoize("features")
def _window_features(frame: pl.DataFrame, window: Any):  # noqa: ANN202 - WindowFeatures
    from reveal_lab.features import window_features

    return window_features(frame, window)


def _baseline_features(
    baseline: Sequence[Run], preset: Preset, selected: Any, derive: bool
) -> list[tuple[dict[tuple[str, str], int], np.ndarray]]:
    """Window features of every host of every baseline run (computed once per detection):
    ``({(host-free key, feature): column}, X, run index, run id)`` per host-run."""
    out = []
    for i, b in enumerate(baseline):
        for _h, part in b.split_hosts().items():
            frame, _ = detection_view(part.frame, selected, derive=derive, keep_constant=True)
            wf = _features(frame, preset)
            keys = (
                wf.pairs["key"].to_list()
                if "key" in wf.pairs.columns
                else [metric_key(m) for m in wf.pairs["metric"]]
            )
            col = {
                (k, f): j for j, (k, f) in enumerate(zip(keys, wf.pairs["feature"].to_list(), strict=True))
            }
            out.append((col, wf.X, i, b.run_id))
    if not out:
        raise ValueError("baseline runs gave no windows")
    return out


def _baseline_matrix(
    base_feats: list[tuple[dict[tuple[str, str], int], np.ndarray]], pairs: pl.DataFrame
) -> np.ndarray:
    """Baseline window features aligned on (host-free key, feature) to ``pairs``; a pair
    the baseline lacks is NaN (unknown: neutral for the detectors)."""
    want = list(zip(pairs["key"].to_list(), pairs["feature"].to_list(), strict=True))
    blocks = []
    for col, X, *_ in base_feats:
        idx = np.array([col.get(kf, -1) for kf in want], dtype=np.int64)
        Xb = np.full((X.shape[0], len(want)), np.nan)
        ok = idx >= 0
        Xb[:, ok] = X[:, idx[ok]]
        blocks.append(Xb)
    return np.vstack(blocks)


def _cross_fit_thresholds(
    base_feats: list,
    pairs: pl.DataFrame,
    preset: Preset,
    false_alarm_rate: float,
    rule: str = "trimmed",
    left_out: dict[str, int] | None = None,
) -> dict[str, float]:
    """Per-detector thresholds from out-of-sample scores of the baseline runs.

    Leave one baseline run out: fit the detectors on the other baseline runs (in the
    scored run's feature space, ``pairs``), score the left-out run. Each detector's
    threshold is the ``1 - false_alarm_rate / n`` quantile (``n`` detectors,
    ``method="higher"``: an observed score) of left-out scores, so by the union bound the
    share of fault-free windows that *any* detector flags stays near ``false_alarm_rate``
    when new fault-free runs resemble the baseline runs as much as they resemble each
    other. With fewer scores than ``n / false_alarm_rate`` it is the largest one. ``rule``
    (one of :data:`CALIBRATION_RULES`, checked by :func:`detect_run`) says which left-out
    scores:

    ``"trimmed"`` (default)
        all left-out runs' scores pooled, except the run whose own quantile is the largest
        when there are four or more left-out runs (three or more stay pooled): one odd
        baseline run cannot set the threshold. With three or fewer it is ``pooled``.
        A baseline run recorded in another machine state can score far above the others
        when left out, and pooled it would set every threshold above whole faults
        (``docs/RESULTS.md``). The run left out of each detector's threshold goes into
        ``left_out`` (detector → baseline run index) when a dict is given.
    ``"pooled"``
        every left-out score pooled: the worst baseline run decides.
    ``"median"``
        the median over left-out runs of each run's quantile (the largest score of a run
        shorter than ``n / false_alarm_rate`` windows): more sensitive, and on short
        exchangeable runs about ``ln 2 / windows per run`` per detector flagged instead
        of ``false_alarm_rate / n``.
    """
    runs = sorted({entry[2] for entry in base_feats})
    if len(runs) < 2:
        raise ValueError(f"cross-fitted thresholds need at least 2 baseline runs, got {len(runs)}")
    pooled: dict[str, list[np.ndarray]] = {}
    n_det = len(default_detectors(preset.detect))
    for r in runs:
        fit = [e for e in base_feats if e[2] != r]
        held = [e for e in base_feats if e[2] == r]
        Xfit = _baseline_matrix(fit, pairs)
        if Xfit.shape[0] < 2:
            raise ValueError(
                f"baseline without run {r} gives {Xfit.shape[0]} window(s); at least 2 are needed"
            )
        ens = DetectorEnsemble(default_detectors(preset.detect, calibrated=True)).fit(Xfit)
        for m, sc in ens.score(_baseline_matrix(held, pairs)).scores.items():
            pooled.setdefault(m, []).append(np.asarray(sc, dtype=np.float64))
    q = 1.0 - false_alarm_rate / n_det
    out = {}
    for m, parts in pooled.items():
        # (baseline run index, its finite left-out scores); a run with none is not counted
        kept = [(r, p[np.isfinite(p)]) for r, p in zip(runs, parts, strict=True) if np.isfinite(p).any()]
        if not kept:
            out[m] = float("inf")
            continue
        per_run = [float(np.quantile(p, q, method="higher")) for _, p in kept]
        if rule == "median":
            out[m] = float(np.median(per_run))
            continue
        if rule == "trimmed" and len(kept) >= 4:
            worst = int(np.argmax(per_run))
            if left_out is not None:
                left_out[m] = kept[worst][0]
            kept = [k for i, k in enumerate(kept) if i != worst]
        out[m] = float(np.quantile(np.concatenate([p for _, p in kept]), q, method="higher"))
    return out


def _left_out_notes(left: dict[str, int], base_feats: list, host: str) -> list[str]:
    """One note per baseline run the trimmed calibration left out: that run is unlike the
    other baseline runs (its left-out scores were the most extreme), worth a look."""
    ids = {e[2]: e[3] for e in base_feats}
    by_run: dict[int, list[str]] = {}
    for m, r in left.items():
        by_run.setdefault(r, []).append(m)
    return [
        f"{host}: baseline run {ids[r]} was left out of the {', '.join(ms)} threshold(s) "
        "(trimmed calibration): scored by detectors fitted on the other baseline runs it was the "
        "most extreme, so it is unlike them"
        for r, ms in sorted(by_run.items())
    ]


def _sustained_result(result: EnsembleResult, min_run: int) -> EnsembleResult:
    """Each detector's labels kept only in runs of ``min_run`` windows (:func:`sustained`);
    agreement recounted. Scores, thresholds and the combined score stay as they are."""
    labels = {m: sustained(v == 1, min_run).astype(v.dtype) for m, v in result.labels.items()}
    agreement = np.sum([labels[m] for m in result.methods], axis=0).astype(result.agreement.dtype)
    return EnsembleResult(result.scores, result.thresholds, labels, agreement, result.combined)


@memoize("score", ignore=("timings",))
def _score_host(
    run: Run,
    host: str,
    preset: Preset,
    baseline: list | None,
    selected: Any,
    derive: bool,
    timings: dict[str, float],
    policy: ResolvedPolicy,
) -> tuple[pl.DataFrame, Attribution, dict[str, float], pl.DataFrame, list[str], EnsembleResult]:
    t = time.perf_counter()
    frame, notes = detection_view(run.frame, selected, derive=derive)
    notes = [f"{host}: {n}" for n in notes]
    timings["derive"] = timings.get("derive", 0.0) + time.perf_counter() - t
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TelemetryWarning)
        wf = _features(frame, preset)
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
        pairs = pairs.with_columns(key=pl.col("metric").map_elements(_key, return_dtype=pl.String))
    t = time.perf_counter()
    calibrated = policy.thresholds == "calibrated"
    ens = DetectorEnsemble(default_detectors(preset.detect, calibrated=calibrated))
    if baseline:
        Xfit = _baseline_matrix(baseline, pairs)
        if Xfit.shape[0] < 2:
            raise ValueError(f"baseline gives {Xfit.shape[0]} window(s); at least 2 are needed")
        base_keys = {kf[0] for col, *_ in baseline for kf in col}
        notes += check_baseline(
            pairs, Xfit, base_keys, where=f"{run.run_id} {host}", force=policy.force_baseline
        )
        ens.fit(Xfit)
        if calibrated:  # out-of-sample thresholds instead of in-sample ones
            left: dict[str, int] = {}
            for m, thr in _cross_fit_thresholds(
                baseline, pairs, preset, policy.false_alarm_rate, policy.calibration, left_out=left
            ).items():
                ens.detectors_[m].threshold_ = thr
            notes += _left_out_notes(left, baseline, host)
        result = ens.score(wf.X)
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
                ens.detectors_[m].threshold_ = robust_threshold(
                    result.scores[m], policy.false_alarm_rate, n_det
                )
            result = ens.score(wf.X)
    raw_agreement = result.agreement  # before the min_run rule (the report counts what it dropped)
    if policy.min_run > 1:
        result = _sustained_result(result, policy.min_run)
    notes += outlier_notes(ens.detectors_, where=f"{run.run_id} {host}")
    timings["detectors"] = timings.get("detectors", 0.0) + time.perf_counter() - t
    t = time.perf_counter()
    att = attribute(ens.detectors_, wf.X, pairs, wf.windows, result, top_k=preset.detect.top_k, host=host)
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


def detect_run(
    run: Run,
    baseline: Sequence[Run] | None = None,
    preset: Preset | None = None,
    selected: Iterable[str] | Any | None = None,
    *,
    policy: DetectionPolicy | None = None,
    derive: bool = True,
    blas_threads: int | None = None,
    **decisions: Any,
) -> Detection:
    """Detect and explain anomalous windows of one run.

    Parameters
    ----------
    run : the run to examine (single- or multi-host).
    baseline : reference runs to fit the detectors on; ``None`` fits on the run itself.
    preset : windows and detector settings (default ``get_preset("paper")``).
    selected : the diagnostic space (metric names, host-free keys, or a pruning result
        with ``.selected``); overrides the policy's ``prune``.
    policy : which windows are anomalous (:class:`DetectionPolicy`, default
        ``POLICIES["default"]``), resolved for this run and its baseline runs
        (:meth:`DetectionPolicy.resolve`; the result is ``config["policy"]``). With
        baseline runs, a window is anomalous also when a counter 0 in every sample of every
        baseline run is non-zero in at least ``sentinel_samples`` of its samples
        (:func:`sentinel_windows`), whatever the detectors say: such counters (a receiver's
        out-of-order queue, a sender's fast retransmits under packet loss) are pruned as
        constant and seen by one detector at most. A run alone (``robust`` thresholds) with
        ``lone_sentinel``: a counter 0 in at least half of the run's own samples that moves in
        90 % of a window's samples, :func:`past_a_spike` windows in a row
        (:func:`lone_sentinel_windows`); ``config["sentinel_rule"]`` says which form decided.
    decisions : the policy's fields as keywords (``min_agreement``, ``min_run``,
        ``thresholds``, ``calibration``, ``false_alarm_rate``, ``force_baseline``, ``prune``,
        ``trim`` as ``True``/``False``), without ``policy``: a policy built by
        :func:`policy_from_keywords` (clip and sentinel rule from ``preset.detect``, agreement 1).
    blas_threads : BLAS threads for the detectors' linear algebra (default
        ``$REVEAL_LAB_BLAS_THREADS`` or 1). One thread per run is the safe default: on a
        busy machine (or under Dask, one run per worker) OpenBLAS's spinning threads
        made the Mahalanobis eigendecomposition up to 8× slower than one thread.

    Raises
    ------
    TelemetryError
        when the run is shorter than one window, or has nothing to score.
    ValueError
        when the policy cannot apply (see :meth:`DetectionPolicy.resolve`).
    """
    from threadpoolctl import threadpool_limits

    preset = preset or get_preset("paper")
    if policy is None:
        policy = policy_from_keywords(preset, **decisions)
    elif decisions:
        raise TypeError(f"detect_run: give the policy or keywords, not both (got {sorted(decisions)})")
    n_base = len(baseline) if baseline else 0
    resolved = policy.resolve(baseline_runs=n_base, source=run_source(run), preset=preset)
    # the detectors read the clip from their config: the policy's
    preset = replace(
        preset,
        detect=replace(
            preset.detect, calibrated_z_clip=policy.z_clip, sentinel_samples=policy.sentinel_samples
        ),
    )
    if blas_threads is None:
        blas_threads = int(os.environ.get("REVEAL_LAB_BLAS_THREADS", "1"))
    with threadpool_limits(limits=blas_threads, user_api="blas"):
        return _detect_run(run, baseline if resolved.fit_on == "baseline" else None, preset, selected, resolved, derive)


def policy_from_keywords(
    preset: Preset,
    *,
    min_agreement: int = 1,
    false_alarm_rate: float | None = None,
    force_baseline: bool = False,
    prune: bool | str | os.PathLike | Pruning = True,
    trim: bool = True,
    thresholds: str = "auto",
    calibration: str = "trimmed",
    min_run: int | None = None,
) -> DetectionPolicy:
    """The :class:`DetectionPolicy` that :func:`detect_run`'s keywords ask for: the
    clip and the sentinel rule of ``preset.detect`` (``sentinel_samples=None`` turns both
    forms off), any one detector unless ``min_agreement`` says otherwise."""
    sentinel = preset.detect.sentinel_samples
    return POLICIES["default"].with_(
        name="keywords",
        min_agreement=min_agreement,
        false_alarm_rate=POLICIES["default"].false_alarm_rate if false_alarm_rate is None else false_alarm_rate,
        force_baseline=force_baseline,
        prune=prune,
        trim=trim_arguments(trim)[0],
        thresholds=thresholds,
        calibration=calibration,
        min_run=min_run,
        z_clip=preset.detect.calibrated_z_clip,
        sentinel_samples=sentinel,
        lone_sentinel=sentinel is not None,
    )


def _detect_run(
    run: Run,
    baseline: Sequence[Run] | None,
    preset: Preset,
    selected: Any,
    policy: ResolvedPolicy,
    derive: bool,
) -> Detection:
    mode, min_agreement, min_run = policy.thresholds, policy.min_agreement, policy.min_run
    sentinel_samples, prune = policy.sentinel_samples, policy.prune
    force_baseline = policy.force_baseline
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    # what was left out and why, always (trim_info["run"])
    run, tr = trim_run(run, mode=policy.trim, reason=policy.reasons.get("trim"))
    trim_info: dict[str, Any] = {"applied": tr.cut_start_s + tr.cut_end_s > 0, "mode": tr.mode, "run": tr.to_dict()}
    if policy.trim != "none":
        if baseline:
            trimmed = [trim_run(b, mode=policy.trim) for b in baseline]
            baseline = [b for b, _ in trimmed]
            trim_info["baseline"] = [t.to_dict() for _, t in trimmed]
    pre_notes: list[str] = []
    if baseline:  # before pruning: a space fitted on the baseline would hide what it lacks
        base_keys = {metric_key(c) for b in baseline for c in metric_columns(b.frame)}
        pre_notes = check_metric_overlap(
            (metric_key(c) for c in metric_columns(run.frame)),
            base_keys,
            where=run.run_id,
            force=force_baseline,
        )
        moving = any(
            b.frame.get_column(c).drop_nulls().n_unique() > 1 for b in baseline for c in metric_columns(b.frame)
        )
        if not moving:  # nothing to prune on or fit to: the per-host check's rule, before pruning
            msg = f"{run.run_id}: the baseline is degenerate: none of its metrics varies (all constant)"
            if not force_baseline:
                raise BaselineMismatch(msg + "; give a baseline that moves, or --force to use it anyway")
            pre_notes.append(msg + "; used because of --force")
            if prune is True:
                prune = False  # a pruned space fitted on constants would be empty
    prune_info: dict[str, Any] = {"applied": False}
    if selected is None and prune is not False and prune is not None:
        t = time.perf_counter()
        if isinstance(prune, Pruning):
            pr, src = prune, "given"
        elif isinstance(prune, str | os.PathLike):
            pr, src = load_pruning(prune), str(prune)
        else:
            fit_on = list(baseline) if baseline else [run]
            pr = fit_pruning(fit_on, preset.prune.threshold, trim=False)
            src = "fitted on the baseline runs" if baseline else "fitted on the run itself"
        selected = pr.selected
        prune_info = {"applied": True, "source": src, "n_selected": len(pr.selected), **pr.params}
        prune_info.pop("fitted_on", None)
        timings["pruning"] = time.perf_counter() - t
    elif selected is not None:
        n_sel = len(set(getattr(selected, "selected", selected)))
        prune_info = {"applied": True, "source": "selected", "n_selected": n_sel}
    parts = run.split_hosts()
    win_frames, evid, wattr, excluded, notes = [], [], [], [], list(run.warnings) + pre_notes
    thresholds: dict[str, dict[str, float]] = {}
    methods: list[str] = []
    base_feats = None
    if baseline:
        t = time.perf_counter()
        base_feats = _baseline_features(baseline, preset, selected, derive)
        timings["baseline_features"] = time.perf_counter() - t
    for host, part in parts.items():
        try:
            w, att, thr, excl, n, res = _score_host(
                part, host, preset, base_feats, selected, derive, timings, policy
            )
        except TelemetryError as exc:
            if len(parts) == 1:
                raise
            raise TelemetryError(f"host {host!r}: {exc}") from exc
        methods = res.methods
        win_frames.append(w)
        evid.append(att.evidence)
        wattr.append(att.windows)
        thresholds[host] = thr
        excluded.append(excl.with_columns(host=pl.lit(host)))
        notes.extend(n)
    windows = pl.concat(win_frames, how="vertical")
    wat = pl.concat(wattr, how="vertical") if wattr else pl.DataFrame(schema=WINDOW_SCHEMA)
    windows = windows.join(
        wat.select(
            "window_id",
            "host",
            "subsystems",
            "top_subsystem",
            "top_share",
            *[f"share_{s}" for s in SUBSYSTEMS],
        ),
        on=["window_id", "host"],
        how="left",
    )
    evidence = pl.concat(evid, how="vertical") if evid else pl.DataFrame(schema=EVIDENCE_SCHEMA)
    evidence = evidence.filter(pl.col("agreement") >= min_agreement)
    sentinels = None
    fire_on = policy.sentinel_rule == "baseline"
    if baseline:
        t = time.perf_counter()
        # per-interval counts: a collector's cumulative counters become their differences
        # (``_diff``) as in the detectors' view; lab and public frames hold them already
        silent = silent_counters([per_interval_counts(b, derive) for b in baseline])
        counts = {h: per_interval_counts(p, derive) for h, p in parts.items()}
        sentinels = sentinel_counters(counts, silent)
        if fire_on:
            windows = windows.join(
                sentinel_windows(windows, counts, silent, int(sentinel_samples)),
                on=["window_id", "host"],
                how="left",
            )
        timings["sentinels"] = time.perf_counter() - t
    lone_on = policy.sentinel_rule == "lone"
    lone_windows = policy.sentinel_min_run  # the lone rule's windows in a row
    if lone_on:  # a run alone: its own quiet counters, continuously active for lone_windows windows
        t = time.perf_counter()
        counts = {h: per_interval_counts(p, derive) for h, p in parts.items()}
        lone = lone_sentinel_windows(windows, counts, lone_windows)
        windows = windows.join(lone, on=["window_id", "host"], how="left")
        fired = {metric_key(m) for m in lone.filter("sentinel")["sentinel_metric"].to_list()}
        sentinels = sentinel_counters(counts, fired)
        timings["sentinels"] = time.perf_counter() - t
    if not (fire_on or lone_on):
        windows = windows.with_columns(
            *[pl.lit(None, dtype=d).alias(c) for c, d in SENTINEL_WINDOW_SCHEMA.items()]
        )
    windows = _with_sentinel_decision(
        windows.with_columns(pl.col("sentinel").fill_null(False)), min_agreement
    )
    evidence = pl.concat(
        [evidence, _sentinel_evidence(windows, evidence, lone_windows=lone_windows)], how="vertical_relaxed"
    ).sort(
        ["agreement", "combined", "window_id", "host", "rank"], descending=[True, True, False, False, False]
    )
    crosshost = None
    if len(parts) >= 3:
        from reveal_lab.crosshost import baseline_deviation, deviation

        t = time.perf_counter()
        hosts = {h: p.frame for h, p in parts.items()}
        # baseline runs of the same hosts: each host is also judged against itself in them
        split = [{h: p.frame for h, p in b.split_hosts().items()} for b in (baseline or [])]
        same = [b for b in split if set(b) == set(parts)]
        if len(same) >= 2:
            crosshost = baseline_deviation(hosts, same, window_s=preset.window.window_s)
        else:
            crosshost = deviation(hosts, window_s=preset.window.window_s, align="time")
        timings["crosshost"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0
    cfg = {
        "preset": preset.name,
        "window_s": preset.window.window_s,
        "stride_s": preset.window.stride_s,
        "interval_s": preset.window.interval_s,
        **{k: getattr(preset.detect, k) for k in preset.detect.__dataclass_fields__},
        "false_alarm_rate": policy.false_alarm_rate,
        "thresholds": mode,
        **({"calibration": policy.calibration} if mode == "calibrated" else {}),
        # the clip in force (it acts on calibrated thresholds only)
        "z_clip": policy.z_clip,
        "min_run_windows": min_run,
        "sentinel_samples": int(sentinel_samples) if fire_on else None,
        # which form of the sentinel rule decided: against the baseline runs' silent counters,
        # or a run alone's quiet counters (lone_sentinel_windows); None: off
        "sentinel_rule": "baseline" if fire_on else "lone" if lone_on else None,
        "sentinel_min_run": lone_windows,  # windows in a row (lone)
        "trim": trim_info,
        "pruning": prune_info,
        "force_baseline": force_baseline,
        "policy": policy.to_dict(),
    }
    det = Detection(
        run_id=run.run_id,
        meta=run.meta.to_dict(),
        windows=windows,
        evidence=evidence,
        methods=methods,
        thresholds=thresholds,
        fit_mode=mode,
        min_agreement=min_agreement,
        config=cfg,
        excluded=pl.concat(excluded, how="vertical") if excluded else pl.DataFrame(),
        warnings=notes,
        timings=timings,
        crosshost=crosshost,
        sentinels=sentinels,
    )
    det.summary = det.make_summary()
    log.info(
        "%s: %d windows, %d anomalous (agreement >= %d), %.1f s",
        run.run_id,
        windows.height,
        det.summary["anomalous"],
        min_agreement,
        timings["total"],
    )
    return det


def _with_sentinel_decision(windows: pl.DataFrame, min_agreement: int) -> pl.DataFrame:
    """``anomalous`` (agreement reaches ``min_agreement`` or the sentinel rule fires); a window
    the sentinel rule flags alone is attributed to its counter's subsystem (share 1)."""
    alone = pl.col("sentinel") & (pl.col("agreement") < min_agreement)
    sub = pl.col("sentinel_subsystem")
    return windows.with_columns(
        anomalous=(pl.col("agreement") >= min_agreement) | pl.col("sentinel"),
        subsystems=pl.when(alone).then(sub).otherwise(pl.col("subsystems")),
        top_subsystem=pl.when(alone).then(sub).otherwise(pl.col("top_subsystem")),
        top_share=pl.when(alone).then(pl.lit(1.0)).otherwise(pl.col("top_share")),
        **{
            f"share_{s}": pl.when(alone).then((sub == s).cast(pl.Float64)).otherwise(pl.col(f"share_{s}"))
            for s in SUBSYSTEMS
        },
    )


def _sentinel_evidence(
    windows: pl.DataFrame, evidence: pl.DataFrame, *, lone_windows: int | None = None
) -> pl.DataFrame:
    """One evidence row per window the sentinel rule fires on, ranked after the window's
    detector evidence (first when there is none); ``lone_windows``: the rule's form for a run
    alone (:func:`sentinel_evidence`)."""
    w = windows.filter(pl.col("sentinel"))
    if w.is_empty():
        return pl.DataFrame(schema=EVIDENCE_SCHEMA)
    last = evidence.group_by("window_id", "host").agg(pl.col("rank").max().alias("_last"))
    w = w.join(last, on=["window_id", "host"], how="left")
    rows = [
        {
            **{k: r[k] for k in ("window_id", "start", "end", "host", "agreement", "combined")},
            "methods": "sentinel",
            "rank": (r["_last"] or 0) + 1,
            **sentinel_evidence(r["sentinel_metric"], r["sentinel_samples"], lone_windows=lone_windows),
        }
        for r in w.iter_rows(named=True)
    ]
    return pl.DataFrame(rows, schema=EVIDENCE_SCHEMA)


def detect_many(
    runs: Iterable[Run],
    baseline: Sequence[Run] | None = None,
    preset: Preset | None = None,
    selected: Iterable[str] | Any | None = None,
    **kwargs: Any,
) -> list[Detection]:
    """:func:`detect_run` over several runs (one at a time, lazily loaded runs welcome)."""
    return [detect_run(r, baseline=baseline, preset=preset, selected=selected, **kwargs) for r in runs]
