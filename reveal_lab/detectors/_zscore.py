"""Z-score detector (paper §4.3): mean absolute z of a window's features."""

from __future__ import annotations

import numpy as np

from reveal_lab.detectors._base import BaseDetector, robust_scale, safe_divide

__all__ = ["ZScoreDetector"]


class ZScoreDetector(BaseDetector):
    """Per-feature z against the fit data; a window's score is the mean ``|z|``.

    Parameters
    ----------
    quantile : the threshold is this quantile of the fit scores (paper: 0.99).
    robust : centre/scale by median and 1.4826·MAD (falling back to the standard
        deviation where the MAD is 0) instead of mean and standard deviation.

    ``explain(X)`` returns ``|z|`` per feature; its row mean is the score exactly.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)); X[7, 2] = 40.0
    >>> det = ZScoreDetector().fit(X)
    >>> int(det.decision_scores_.argmax()), int(det.explain(X[7:8]).argmax())
    (7, 2)
    """

    name = "zscore"

    def __init__(self, quantile: float = 0.99, robust: bool = True) -> None:
        self.quantile = quantile
        self.robust = robust

    def _quantile(self) -> float:
        return self.quantile

    def _fit(self, X: np.ndarray) -> None:
        self.center_, self.scale_ = robust_scale(X, self.robust)

    def _z(self, X: np.ndarray) -> np.ndarray:
        return np.abs(safe_divide(X - self.center_, self.scale_))

    def _score(self, X: np.ndarray) -> np.ndarray:
        # row blocks keep the memory of wide feature matrices small
        out = np.empty(X.shape[0])
        for i in range(0, X.shape[0], 256):
            out[i:i + 256] = self._z(X[i:i + 256]).mean(axis=1)
        return out

    def _explain(self, X: np.ndarray) -> np.ndarray:
        return self._z(X)

    def zscores(self, X) -> np.ndarray:  # noqa: ANN001
        """Signed z per feature (for the words of a claim: above or below its baseline)."""
        Xi = self._transform_input(X)
        return safe_divide(Xi - self.center_, self.scale_)
