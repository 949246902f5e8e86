"""Thresholds set without labels: peaks over threshold (POT, extreme-value theory)."""

from __future__ import annotations

import numpy as np

__all__ = ["pot_threshold"]


def pot_threshold(scores: np.ndarray, risk: float = 3e-3, init_quantile: float = 0.98) -> float:
    """The score exceeded with probability ``risk`` under a generalized Pareto tail.

    Peaks over threshold (Siffer et al., KDD 2017, the ``POT`` step of SPOT): the
    excesses of ``scores`` over their ``init_quantile`` quantile ``t`` are fitted with
    a generalized Pareto distribution (shape ``ξ``, scale ``σ``, maximum likelihood);
    the threshold is ``t + σ/ξ · ((risk · n / n_t)^(-ξ) - 1)`` (``t - σ log(risk · n / n_t)``
    when ``ξ ≈ 0``), with ``n`` scores and ``n_t`` excesses. Give it scores the
    detector did **not** fit on (a calibration split): in-sample scores understate the
    tail. With fewer than 10 excesses (or a fit that fails) the largest score is returned.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.random.default_rng(0).exponential(size=20_000)
    >>> round(pot_threshold(s, risk=1e-3), 1), round(float(np.log(1e3)), 1)  # exact: -log(risk)
    (6.9, 6.9)
    """
    from scipy import stats

    s = np.asarray(scores, dtype=np.float64)
    s = s[np.isfinite(s)]
    if not 0 < risk < 1:
        raise ValueError(f"risk must be in (0, 1), got {risk}")
    if not 0 < init_quantile < 1:
        raise ValueError(f"init_quantile must be in (0, 1), got {init_quantile}")
    if s.size == 0:
        raise ValueError("pot_threshold needs at least one finite score")
    t = float(np.quantile(s, init_quantile))
    y = s[s > t] - t
    if y.size < 10 or float(y.max()) <= 0:
        return float(s.max())
    try:
        xi, _, sigma = stats.genpareto.fit(y, floc=0)
    except (RuntimeError, ValueError, FloatingPointError):
        return float(s.max())
    r = risk * s.size / y.size
    if r >= 1:  # the risk is above the initial level: the quantile itself
        return float(np.quantile(s, 1 - risk))
    thr = t + (sigma / xi) * (r ** (-xi) - 1) if abs(xi) > 1e-6 else t - sigma * np.log(r)
    return float(thr) if np.isfinite(thr) else float(s.max())
