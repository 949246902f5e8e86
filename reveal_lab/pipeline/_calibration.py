"""Calibrated thresholds: each detector's threshold from out-of-sample scores of the baseline
runs (leave one baseline run out), and the notes on baseline runs the trimmed rule left out."""

from __future__ import annotations

import numpy as np
import polars as pl

from reveal_lab.config import Preset
from reveal_lab.pipeline._view import baseline_matrix

__all__ = ["cross_fit_thresholds", "left_out_notes", "unreachable_notes"]


def cross_fit_thresholds(
    base_feats: list,
    pairs: pl.DataFrame,
    preset: Preset,
    false_alarm_rate: float,
    rule: str = "trimmed",
    left_out: dict[str, int] | None = None,
    clip: float | None = None,
    setters: dict[str, tuple[int, float, float]] | None = None,
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

    ``clip``: the Z-score and Mahalanobis detectors' clip (the policy's ``z_clip``).
    ``setters``: when a dict is given, detector → (the baseline run whose left-out scores are
    highest among those kept, the median of its left-out scores, the 90th percentile of all
    kept left-out scores), for :func:`unreachable_notes`.
    """
    from reveal_lab.detectors import DetectorEnsemble, default_detectors

    runs = sorted({entry[2] for entry in base_feats})
    if len(runs) < 2:
        raise ValueError(f"cross-fitted thresholds need at least 2 baseline runs, got {len(runs)}")
    pooled: dict[str, list[np.ndarray]] = {}
    n_det = len(default_detectors(preset.detect))
    for r in runs:
        fit = [e for e in base_feats if e[2] != r]
        held = [e for e in base_feats if e[2] == r]
        Xfit = baseline_matrix(fit, pairs)
        if Xfit.shape[0] < 2:
            raise ValueError(
                f"baseline without run {r} gives {Xfit.shape[0]} window(s); at least 2 are needed"
            )
        ens = DetectorEnsemble(default_detectors(preset.detect, clip=clip))
        for m, sc in ens.holdout_scores(Xfit, baseline_matrix(held, pairs)).items():
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
        if setters is not None:
            r, p = max(kept, key=lambda k: float(np.max(k[1])))
            bulk = float(np.quantile(np.concatenate([p for _, p in kept]), 0.9))
            setters[m] = (r, float(np.median(p)), bulk)
    return out


def left_out_notes(left: dict[str, int], base_feats: list, host: str) -> list[str]:
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


#: a calibrated threshold this many times the 90th percentile of the left-out scores is set by
#: a few outlying baseline windows, not by the baseline runs' ordinary spread
OUTLYING_THRESHOLD = 10.0


def unreachable_notes(
    setters: dict[str, tuple[int, float, float]], result: object, base_feats: list, host: str
) -> list[str]:
    """A note when no window of the run reaches any detector's calibrated threshold and some
    threshold is set by a few outlying baseline windows (more than :data:`OUTLYING_THRESHOLD`
    times the 90th percentile of the left-out scores): a brief disturbance in a fault-free
    baseline run then decides that nothing here can be flagged. It names, per such detector,
    the threshold, the baseline run whose windows set it (with its median left-out window) and
    the run's highest score. ``result``: the ensemble's scores of the run (``scores``,
    ``thresholds``)."""
    scores, thresholds = result.scores, result.thresholds  # type: ignore[attr-defined]
    top = {m: float(np.nanmax(scores[m], initial=-np.inf)) for m in setters}
    if not setters or any(not np.isfinite(thresholds[m]) or top[m] >= thresholds[m] for m in setters):
        return []
    odd = {m: v for m, v in setters.items() if thresholds[m] > OUTLYING_THRESHOLD * max(v[2], 1e-12)}
    if not odd:
        return []
    ids = {e[2]: e[3] for e in base_feats}
    parts = [
        f"{m} {thresholds[m]:.3g}, {thresholds[m] / max(bulk, 1e-12):.0f}x the 90th percentile of the "
        f"left-out scores (set by windows of baseline run {ids[r]}, whose median window scores {med:.3g}; "
        f"this run's highest {top[m]:.3g})"
        for m, (r, med, bulk) in odd.items()
    ]
    return [
        f"{host}: no window of this run reaches a calibrated threshold, and {'; '.join(parts)}. A few "
        "windows of a fault-free baseline run, scored by detectors fitted on the other baseline runs, "
        "score far above the rest (with few baseline windows a threshold is their highest), so one brief "
        "disturbance there decides that nothing here can be flagged. Give baseline runs without such "
        "disturbances, or four or more (the most unlike is then left out), or --thresholds baseline "
        "(in-sample thresholds: more alarms)"
    ]
