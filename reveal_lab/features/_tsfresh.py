"""The reference backend: tsfresh's own feature calculators on the same windows.

Each window-channel is handed to ``tsfresh.feature_extraction.feature_calculators``
as the numpy array of its valid (non-NaN) samples in time order, the same samples
the compiled kernel sees. This is slow (one Python call per feature per
window-channel; the ADF runs statsmodels' OLS a dozen times) and exists to define
and check the fast backends.
"""

from __future__ import annotations

import warnings

import numpy as np

from reveal_lab.features._kernels import FEATURE_CODES, N_FEATURES

__all__ = ["tsfresh_features", "tsfresh_calculators"]

#: tsfresh's parameters for the two combiner calculators
ADF_PARAM = [{"attr": "teststat", "autolag": "AIC"}]
SLOPE_PARAM = [{"attr": "slope"}]


def tsfresh_calculators():
    """``{feature name: callable(x) -> float}`` built on tsfresh's calculators."""
    try:
        from tsfresh.feature_extraction import feature_calculators as fc
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("backend='tsfresh' needs tsfresh: pip install 'reveal-lab[studies]'") from exc

    return {
        "mean": fc.mean,
        "var": fc.variance,
        "std": fc.standard_deviation,
        "min": fc.minimum,
        "max": fc.maximum,
        "skew": fc.skewness,
        "kurtosis": fc.kurtosis,
        "slope": lambda x: fc.linear_trend(x, SLOPE_PARAM)[0][1],
        "acf1": lambda x: fc.autocorrelation(x, 1),
        "adf": lambda x: fc.augmented_dickey_fuller(x, ADF_PARAM)[0][1],
        "sum": fc.sum_values,
    }


def tsfresh_features(
    values: np.ndarray, row_start: np.ndarray, row_end: np.ndarray, want: np.ndarray, min_valid: int
) -> np.ndarray:
    """Same contract as :func:`reveal_lab.features._kernels.window_feature_kernel`,
    returning ``out[w, c, f]``."""
    calc = tsfresh_calculators()
    names = list(FEATURE_CODES)
    out = np.full((len(row_start), values.shape[1], N_FEATURES), np.nan)
    with warnings.catch_warnings():
        # statsmodels warns on rank-deficient designs; tsfresh's value is still the reference
        warnings.simplefilter("ignore", category=RuntimeWarning)
        # statsmodels announces a future change of adfuller's return type; tsfresh reads [0]
        warnings.filterwarnings("ignore", message="adfuller currently returns", category=FutureWarning)
        try:
            from statsmodels.tools.sm_exceptions import SingularMatrixWarning

            warnings.simplefilter("ignore", category=SingularMatrixWarning)
        except ImportError:  # pragma: no cover
            pass
        for c in range(values.shape[1]):
            feats = [(f, names[f]) for f in range(N_FEATURES) if want[c, f]]
            if not feats:
                continue
            col = values[:, c]
            for w, (a, b) in enumerate(zip(row_start, row_end, strict=True)):
                x = col[a:b]
                x = np.ascontiguousarray(x[~np.isnan(x)])
                if x.size < max(min_valid, 1):
                    continue
                for f, name in feats:
                    out[w, c, f] = float(calc[name](x))
    return out
