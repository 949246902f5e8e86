"""PCA reconstruction error: the strongest simple baseline on server telemetry
(QuoVadis, ICML 2024), with each feature's squared residual as its attribution."""

from __future__ import annotations

import numpy as np

from reveal_lab.detectors._base import OUTLIER_FENCE_ON, QUANTILE, BaseDetector
from reveal_lab.detectors._mahalanobis import _top_eigen

__all__ = ["PCAReconstructionDetector", "RESIDUAL_ROUNDOFF"]

#: residual entries within this many ``eps · (‖z‖ + 1)`` of 0 are round-off (set to 0)
RESIDUAL_ROUNDOFF = 1024.0


class PCAReconstructionDetector(BaseDetector):
    """Standardize, keep the principal components explaining ``variance`` of the
    variance, score each row by its squared distance to that subspace.

    With standardized ``z`` and loadings ``W`` (``p × k``) the residual is
    ``r = z - W Wᵀ z`` and the score ``‖r‖² = Σ_j r_j²``. ``explain`` returns the
    ``r_j²`` (non-negative, they sum to the score exactly): a metric that breaks the
    correlations it keeps in the fit data stands out, even when its level stays in range.

    The same estimator works **per point** (rows of raw metrics: the published
    baseline) and **per window** (rows of window features, as the other detectors).

    Parameters
    ----------
    variance : share of the (standardized) variance the kept components explain (at most
        all but one direction of the fit data's span, so that a residual space remains).
    quantile, outlier_fence : shared by every detector
        (:class:`~reveal_lab.detectors.BaseDetector`).
    standardize : divide by each feature's standard deviation (window features have
        different units); ``False`` only centres (rows of metrics already on one scale,
        e.g. min-max normalised).
    scale_floor : a feature's scale is at least ``scale_floor`` times its range in the
        fit data (a metric almost constant in the fit data does not blow up on its first
        small move); features constant in the fit data are neutral.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> t = rng.normal(size=(300, 1)); X = np.hstack([t, t, t]) + 0.05 * rng.normal(size=(300, 3))
    >>> det = PCAReconstructionDetector(variance=0.9).fit(X)
    >>> x = X[:1].copy(); x[0, 2] += 3.0        # breaks the correlation, level in range
    >>> int(det.predict(x)[0]), int(det.explain(x)[0].argmax())
    (1, 2)
    """

    name = "pcarecon"

    def __init__(
        self,
        variance: float = 0.95,
        quantile: float = QUANTILE,
        standardize: bool = True,
        scale_floor: float = 0.01,
        outlier_fence: bool = OUTLIER_FENCE_ON,
    ) -> None:
        super().__init__(quantile=quantile, outlier_fence=outlier_fence)
        self.variance = variance
        self.standardize = standardize
        self.scale_floor = scale_floor

    def _fit(self, X: np.ndarray) -> None:
        if not 0 < self.variance <= 1:
            raise ValueError(f"variance must be in (0, 1], got {self.variance}")
        if self.scale_floor < 0:
            raise ValueError(f"scale_floor must be >= 0, got {self.scale_floor}")
        n, p = X.shape
        self.mean_ = X.mean(axis=0)
        span = X.max(axis=0) - X.min(axis=0)
        const = span <= 1e-12 * np.maximum(1.0, np.abs(self.mean_))
        if self.standardize:
            scale = np.maximum(X.std(axis=0), self.scale_floor * span)
        else:
            scale = np.ones(p)
        self.scale_ = np.where(const, 0.0, scale)
        Z = self._standardize(X)
        gram = n <= p
        M = Z @ Z.T if gram else Z.T @ Z
        total = float(np.trace(M))
        evals, evecs = _top_eigen(M, self.variance, total)
        if total > 0 and evals.size:
            k = int(np.searchsorted(np.cumsum(evals) / total, self.variance - 1e-12) + 1)
            k = min(k, evals.size)
        else:
            k = 0
        # at least one direction of the fit data's span stays out of the kept subspace: when
        # the components would span all of it, every residual is round-off and the detector
        # sees nothing, so the least-variance direction is left as the residual space
        k = min(k, max(min(int((self.scale_ > 0).sum()), n - 1) - 1, 0))
        evals, evecs = evals[:k], evecs[:, :k]
        if gram:  # right singular vectors from the left ones: W = Zᵀ U / s
            W = (Z.T @ evecs) / np.sqrt(evals) if k else np.zeros((p, 0))
        else:
            W = evecs
        self.components_ = np.ascontiguousarray(W.T)  # k × p, unit rows
        self.n_components_ = k
        self.explained_variance_ratio_ = evals / total if total > 0 else evals

    def _standardize(self, X: np.ndarray) -> np.ndarray:
        Z = np.subtract(X, self.mean_)
        nz = self.scale_ > 0
        np.divide(Z, np.where(nz, self.scale_, 1.0), out=Z)
        if not nz.all():
            Z[:, ~nz] = 0.0
        return Z

    def residuals(self, X) -> np.ndarray:  # noqa: ANN001
        """Signed residual ``z - W Wᵀ z`` per feature (standardized units)."""
        return self._residuals(self._transform_input(X))

    def _residuals(self, X: np.ndarray) -> np.ndarray:
        """``z - W Wᵀ z`` with round-off set to 0.

        Where the kept components span the row (all of the fit data's variance, or a row
        inside the subspace) the residual is mathematically 0 and numerically round-off of
        order ``eps·‖z‖``, whose bits depend on how BLAS blocks the batch. A threshold fitted
        on such round-off would flag a row in one batch and not in another, so each entry
        within :data:`RESIDUAL_ROUNDOFF` ``· eps · (‖z‖ + 1)`` of 0 is 0: a row's score and
        verdict do not depend on which rows are scored with it.
        """
        Z = self._standardize(X)
        if self.n_components_ == 0:
            return Z
        R = Z - (Z @ self.components_.T) @ self.components_
        tol = RESIDUAL_ROUNDOFF * np.finfo(np.float64).eps * (np.sqrt(np.einsum("ij,ij->i", Z, Z)) + 1.0)
        R[np.abs(R) <= tol[:, None]] = 0.0
        return R

    def _score(self, X: np.ndarray) -> np.ndarray:
        R = self._residuals(X)
        return np.einsum("ij,ij->i", R, R)

    def _explain(self, X: np.ndarray) -> np.ndarray:
        R = self._residuals(X)
        return R * R

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        """Distance (not squared) over the threshold distance, so that it weighs like the others."""
        thr = self.threshold_
        return np.sqrt(np.maximum(scores, 0.0) / thr) if thr > 0 else np.sqrt(np.maximum(scores, 0.0)) + 1.0
