"""Small numeric helpers shared by several subpackages (detectors, attribution, pipeline, bench).

>>> import numpy as np
>>> safe_divide(np.array([1.0, 2.0]), np.array([2.0, 0.0])).tolist()
[0.5, 0.0]
"""

from __future__ import annotations

import numpy as np

__all__ = ["safe_divide", "true_runs"]


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
