"""What the detection settings and the studies read of the detectors without fitting one:
the shared defaults, the Z-score's forms and the agreement score. Nothing here imports
scikit-learn, so a process that never fits a detector does not load it."""

from __future__ import annotations

import numpy as np

__all__ = ["QUANTILE", "OUTLIER_FENCE_ON", "ZSCORE_FORMS", "agreement_score"]

#: every detector's threshold is this quantile of its fit scores unless told otherwise: the top
#: 1 % flagged (paper §4.3); the detection policy's ``quantile`` sets it for a run
QUANTILE = 0.99
#: the outlier fence (:func:`~reveal_lab.detectors._base.outlier_fence`) caps a fitted quantile
#: threshold unless told otherwise
OUTLIER_FENCE_ON = True
#: the Z-score's forms (:attr:`~reveal_lab.detectors.ZScoreDetector.FORMS`): ``robust``
#: (median and MAD, floored) and ``standard`` (mean and standard deviation: the paper's)
ZSCORE_FORMS = ("robust", "standard")


def agreement_score(agreement: np.ndarray, combined: np.ndarray) -> np.ndarray:
    """The paper's anomaly score that "increases with the number of detectors in agreement"
    (§3.1), whose formula the paper does not give: the number of detectors that flag the
    window, plus its combined score mapped into [0, 1) (``c / (1 + c)``, ``c`` clipped at 0),
    so every window flagged by ``k`` detectors ranks above every window flagged by fewer, and
    the combined score orders windows with the same agreement.

    >>> agreement_score(np.array([1, 2, 2]), np.array([9.0, 0.5, 1.0])).round(3).tolist()
    [1.9, 2.333, 2.5]
    """
    c = np.clip(np.nan_to_num(np.asarray(combined, dtype=np.float64), nan=0.0, posinf=1e300), 0.0, None)
    return np.asarray(agreement, dtype=np.float64) + c / (1.0 + c)
