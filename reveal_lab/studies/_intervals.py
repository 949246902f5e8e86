"""Anomalous intervals: merging flagged windows, length-based IoU and hit rates.

Intervals are ``(start, end)`` pairs in seconds (or any common unit) with
``end > start``; a set of intervals is an ``float64[n, 2]`` array. Everything
here is exact interval arithmetic, no sampling.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "as_intervals",
    "merge_intervals",
    "merge_windows",
    "total_length",
    "intersection_length",
    "union_length",
    "interval_iou",
    "hit_rate_count",
    "hit_rate_length",
]


def as_intervals(x: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """``float64[n, 2]`` from pairs; raises on ``end < start``.

    >>> as_intervals([(0, 1), (2, 3)]).shape
    (2, 2)
    """
    a = np.asarray(x, dtype=np.float64)
    if a.size == 0:
        return np.empty((0, 2))
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"intervals must have shape (n, 2), got {a.shape}")
    if np.any(a[:, 1] < a[:, 0]):
        i = int(np.argmax(a[:, 1] < a[:, 0]))
        raise ValueError(f"interval {i} ends before it starts: {tuple(a[i])}")
    return a


def merge_intervals(x: Sequence[Sequence[float]] | np.ndarray, gap: float = 0.0) -> np.ndarray:
    """Union of intervals as sorted disjoint intervals; ones closer than ``gap`` join.

    >>> merge_intervals([(0, 3), (1, 4), (6, 7), (7, 8)]).tolist()
    [[0.0, 4.0], [6.0, 8.0]]
    >>> merge_intervals([(0, 1), (1.5, 2)], gap=0.5).tolist()
    [[0.0, 2.0]]
    """
    a = as_intervals(x)
    if len(a) == 0:
        return a
    a = a[np.argsort(a[:, 0], kind="stable")]
    out = [list(a[0])]
    for s, e in a[1:]:
        if s <= out[-1][1] + gap:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return np.asarray(out, dtype=np.float64)


def merge_windows(starts: np.ndarray, ends: np.ndarray, flags: np.ndarray, gap: float = 0.0) -> np.ndarray:
    """Merge the flagged windows (overlapping or touching) into anomalous intervals.

    >>> merge_windows(np.array([0, 1, 2, 5.]), np.array([3, 4, 5, 8.]), np.array([1, 1, 0, 1], bool)).tolist()
    [[0.0, 4.0], [5.0, 8.0]]
    """
    starts, ends, flags = np.asarray(starts, float), np.asarray(ends, float), np.asarray(flags, bool)
    if not (starts.shape == ends.shape == flags.shape):
        raise ValueError(
            f"starts, ends and flags differ in shape: {starts.shape}, {ends.shape}, {flags.shape}"
        )
    return merge_intervals(np.column_stack([starts[flags], ends[flags]]), gap=gap)


def total_length(x: np.ndarray) -> float:
    """Length covered by the union of the intervals.

    >>> total_length(np.array([[0, 2], [1, 3.]]))
    3.0
    """
    m = merge_intervals(x)
    return float((m[:, 1] - m[:, 0]).sum()) if len(m) else 0.0


def intersection_length(a: np.ndarray, b: np.ndarray) -> float:
    """Length covered by both ``a`` and ``b``.

    >>> intersection_length(np.array([[0, 4.]]), np.array([[2, 6.], [7, 8.]]))
    2.0
    """
    a, b = merge_intervals(a), merge_intervals(b)
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i, 0], b[j, 0]), min(a[i, 1], b[j, 1])
        if hi > lo:
            total += hi - lo
        if a[i, 1] < b[j, 1]:
            i += 1
        else:
            j += 1
    return float(total)


def union_length(a: np.ndarray, b: np.ndarray) -> float:
    """Length covered by ``a`` or ``b``."""
    return total_length(np.vstack([as_intervals(a), as_intervals(b)]))


def interval_iou(a: np.ndarray, b: np.ndarray) -> float:
    """Length-based intersection over union; NaN when both are empty.

    >>> interval_iou(np.array([[0, 4.]]), np.array([[2, 6.]]))
    0.3333333333333333
    """
    u = union_length(a, b)
    return intersection_length(a, b) / u if u > 0 else float("nan")


def hit_rate_count(ref: np.ndarray, other: np.ndarray) -> float:
    """Share of the intervals of ``ref`` that overlap at least one interval of ``other``
    (NaN when ``ref`` is empty).

    >>> hit_rate_count(np.array([[0, 1.], [5, 6.]]), np.array([[0.5, 2.]]))
    0.5
    """
    ref, other = merge_intervals(ref), merge_intervals(other)
    if len(ref) == 0:
        return float("nan")
    if len(other) == 0:
        return 0.0
    hits = [bool(np.any((other[:, 0] < e) & (other[:, 1] > s))) for s, e in ref]
    return float(np.mean(hits))


def hit_rate_length(ref: np.ndarray, other: np.ndarray) -> float:
    """Share of the length of ``ref`` covered by ``other`` (NaN when ``ref`` is empty).

    >>> hit_rate_length(np.array([[0, 4.]]), np.array([[1, 2.]]))
    0.25
    """
    t = total_length(ref)
    return intersection_length(ref, other) / t if t > 0 else float("nan")
