"""What the detectors see of a run: the detection view (derived metrics, static ones out, the
selected metric space), its window features, and baseline runs' features aligned to a run's."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import polars as pl

from reveal_lab.config import Preset
from reveal_lab.pipeline._cache import memoize
from reveal_lab.telemetry import TIMESTAMP, Run, TelemetryError, metric_columns, metric_key

__all__ = [
    "select_metrics", "detection_view", "features_of", "baseline_features", "baseline_matrix", "fitted_space",
    "baseline_silent", "single_host_columns",
]


def select_metrics(columns: Iterable[str], selected: Iterable[str] | Any) -> list[str]:
    """The metric columns of ``columns`` in ``selected`` (column names or host-free keys, or a
    pruning result with ``.selected``), in column order; the timestamp is never one.

    >>> select_metrics(["timestamp", "CPU:Busy%.0.h1[%]", "Memory:Dirty.h1[kB]"], ["CPU:Busy%.0"])
    ['CPU:Busy%.0.h1[%]']
    """
    sel = set(getattr(selected, "selected", selected))
    return [c for c in columns if c != TIMESTAMP and (c in sel or metric_key(c) in sel)]


@memoize("catalogue")
def single_host_columns(frame: pl.DataFrame) -> tuple[list[str], pl.DataFrame]:
    """The columns :func:`reveal_lab.derive.detection_view` keeps of ``frame`` and its
    catalogue of why the others are left out; cached by the frame's contents, so the views of
    one run (its own, as a baseline run, in another pruned space) judge its columns once."""
    from reveal_lab.derive import detection_view as single_host_view

    view, cat = single_host_view(frame)
    return view.columns, cat


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
    from reveal_lab.derive import CONSTANT_REASON, add_derived

    notes: list[str] = []
    if derive:
        frame = add_derived(frame)
    full = frame
    kept, cat = single_host_columns(frame)
    frame = frame.select(kept)
    if keep_constant:  # baseline runs: "never moved in the baseline" is information
        const = cat.filter(pl.col("reason") == CONSTANT_REASON)["column"].to_list()
        frame = full.select(*frame.columns, *const)
        cat = cat.filter(pl.col("reason") != CONSTANT_REASON)
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


@memoize("pruning")
def fitted_space(runs: list[Run], threshold: float, method: str = "complete") -> Any:
    """The pruned space fitted on ``runs`` as they are (untrimmed: the baseline runs, or
    the run itself; :func:`reveal_lab.pipeline.fit_pruning`, cut by ``method``); cached by the
    runs' contents, so runs scored against the same baseline runs fit it once."""
    from reveal_lab.pipeline._pruning import fit_pruning

    return fit_pruning(runs, threshold, method=method, trim=False)


@memoize("silent")
def baseline_silent(baseline: list[Run], derive: bool) -> set[str]:
    """The counters silent in every sample of the baseline runs (the sentinel rule's
    :func:`reveal_lab.pipeline.silent_counters` of their per-interval counts); cached by the
    runs' contents, so a run detected again in another study reads them back."""
    from reveal_lab.pipeline._sentinel import per_interval_counts, silent_counters

    return silent_counters([per_interval_counts(b, derive) for b in baseline])


def features_of(frame: pl.DataFrame, preset: Preset):  # noqa: ANN202 - WindowFeatures
    return window_features_of(frame, preset.window)


@memoize("features")
def window_features_of(frame: pl.DataFrame, window: Any):  # noqa: ANN202 - WindowFeatures
    from reveal_lab.features import window_features

    return window_features(frame, window)


def baseline_features(
    baseline: Sequence[Run], preset: Preset, selected: Any, derive: bool
) -> list[tuple[dict[tuple[str, str], int], np.ndarray]]:
    """Window features of every host of every baseline run (computed once per detection):
    ``({(host-free key, feature): column}, X, run index, run id)`` per host-run."""
    out = []
    for i, b in enumerate(baseline):
        for _h, part in b.split_hosts().items():
            frame, _ = detection_view(part.frame, selected, derive=derive, keep_constant=True)
            wf = features_of(frame, preset)
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


def baseline_matrix(
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
