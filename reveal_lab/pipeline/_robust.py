"""The threshold of a run that comes alone: robust against the run's own calm majority
(:func:`robust_threshold`), instead of one calibrated on fault-free runs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["robust_threshold"]


def robust_threshold(scores: Sequence[float] | np.ndarray, rate: float, n_detectors: int = 3) -> float:
    """``median + k · 1.4826 · MAD`` of a run's own scores, ``k`` the normal quantile at
    ``1 − rate / n_detectors``: the calm majority of the run sets the scale, so a fault that
    covers a minority of the run stands out over its whole length while a fault-free run
    flags about ``rate`` of its windows (any detector), instead of a fixed top share.

    >>> s = np.r_[np.random.default_rng(0).normal(size=90), np.full(10, 8.0)]
    >>> int((s > robust_threshold(s, 0.01)).sum())
    10
    """
    from scipy.stats import norm

    s = np.asarray(scores, dtype=np.float64)
    s = s[np.isfinite(s)]
    if s.size == 0:
        return float("inf")
    med = float(np.median(s))
    mad = 1.4826 * float(np.median(np.abs(s - med)))
    if mad <= 0:
        mad = float(np.std(s)) or 1e-12
    return med + float(norm.ppf(1.0 - rate / n_detectors)) * mad
