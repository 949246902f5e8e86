"""Sliding windows by time and the features of each window (paper §4.2).

* :func:`make_windows`: ``[start, start + window)`` every ``stride`` by timestamp
  (gaps and jitter tolerated; under-filled windows dropped and reported).
* :func:`window_features`: ``WindowFeatures(windows, X, pairs)``. Dynamic metrics
  get ``mean, var, std, min, max, skew, kurtosis, slope, acf1, adf``; counters
  ``sum, max``; static metrics are excluded (listed in ``WindowFeatures.excluded``).

Definitions (identical in every backend, and those of tsfresh 0.21):

* features use the window's valid (non-NaN) samples, in time order, as one
  contiguous series (gaps are not interpolated);
* fewer than :data:`MIN_VALID` (3) valid samples: every feature of that
  window-channel is NaN;
* a constant window: ``var = std = 0``, ``slope = 0``; ``skew``, ``kurtosis``
  (pandas: 0/0), ``acf1`` (tsfresh: NaN when ``var <= 1e-8``) and ``adf``
  (statsmodels refuses a constant series) are NaN, never ±inf. Detectors should
  use :meth:`WindowFeatures.imputed` or their own NaN policy;
* ``skew``/``kurtosis`` are pandas' bias-adjusted G1/G2 (kurtosis is excess);
  ``acf1`` divides by ``(n - 1) var``; ``adf`` is statsmodels' ``adfuller``
  t-statistic with ``regression="c", autolag="AIC"`` (see ``_adf``), NaN
  where a candidate regression fits numerically exactly (RSS < 1e-10 TSS: a ramp,
  a step, a single spike), where statsmodels reports rounding noise such as -1e15.

Backends: ``"numba"`` (default, compiled), ``"numpy"`` (vectorised), ``"tsfresh"``
(the reference, tsfresh's own calculators).
"""

from reveal_lab.features._features import (
    BACKENDS,
    COUNTER_FEATURES,
    DYNAMIC_FEATURES,
    FEATURES,
    MIN_VALID,
    WindowFeatures,
    WindowPlan,
    feature_plan,
    pair_keys,
    window_features,
    window_plan,
)
from reveal_lab.features._windows import make_windows

__all__ = [
    "WindowPlan",
    "window_plan",
    "BACKENDS",
    "COUNTER_FEATURES",
    "DYNAMIC_FEATURES",
    "FEATURES",
    "MIN_VALID",
    "WindowFeatures",
    "feature_plan",
    "make_windows",
    "window_features",
]
