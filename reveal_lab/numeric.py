"""Small numeric helpers shared by several subpackages (detectors, attribution, pipeline, bench).

>>> import numpy as np
>>> safe_divide(np.array([1.0, 2.0]), np.array([2.0, 0.0])).tolist()
[0.5, 0.0]
"""

from __future__ import annotations

import numpy as np

__all__ = ["safe_divide", "sustained", "true_runs"]


def safe_divide(a: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``a / scale`` with 0 where ``scale`` is 0 (constant features are neutral)."""
    out = np.zeros_like(a)
    nz = scale > 0
    with np.errstate(over="ignore"):  # a denormal scale: the quotient is +-inf (most extreme), on purpose
        np.divide(a, scale, out=out, where=np.broadcast_to(nz, a.shape))
    return out


def true_runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """Runs of consecutive non-zero values as ``(start, end_exclusive)`` pairs.

    >>> true_runs(np.array([0, 1, 1, 0, 1]))
    [(1, 3), (4, 5)]
    """
    f = np.asarray(flags).astype(bool).astype(np.int8)
    d = np.diff(np.concatenate(([0], f, [0])))
    return [(int(s), int(e)) for s, e in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1), strict=True)]


def sustained(flags: np.ndarray | list, min_run: int, ids: np.ndarray | list | None = None) -> np.ndarray:
    """``flags`` kept only inside runs of at least ``min_run`` consecutive flagged windows: the
    one windows-in-a-row rule (a detector's ``min_run`` in the pipeline, ``persist`` in the
    evaluation). Without ``ids`` a run is counted over consecutive array positions (windows
    left out for too few samples do not break it); with ``ids`` (window ids, ascending) a
    jump (next id not id + 1) ends a run.

    >>> sustained([0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1], 4).astype(int).tolist()
    [0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0]
    >>> sustained([1, 1, 1, 1], 3, ids=[0, 1, 5, 6]).astype(int).tolist()
    [0, 0, 0, 0]
    """
    f = np.asarray(flags, dtype=bool)
    if min_run <= 1:
        return f.copy()
    cuts = np.zeros(0, dtype=np.int64)
    if ids is not None:
        cuts = np.flatnonzero(np.diff(np.asarray(ids)) != 1) + 1  # a run never spans these
    out = np.zeros_like(f)
    for a, b in true_runs(f):
        inner = cuts[(cuts > a) & (cuts < b)]
        for s, e in zip([a, *inner.tolist()], [*inner.tolist(), b], strict=True):
            if e - s >= min_run:
                out[s:e] = True
    return out
