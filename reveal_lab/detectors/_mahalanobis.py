"""Mahalanobis distance in a PCA subspace (paper §4.3), with an exact additive
attribution of the squared distance onto the original features."""

from __future__ import annotations

import numpy as np
from scipy import linalg

from reveal_lab.detectors._base import OUTLIER_FENCE_ON, QUANTILE, BaseDetector

__all__ = ["PCAMahalanobisDetector"]


def _top_eigen(M: np.ndarray, variance: float, total: float) -> tuple[np.ndarray, np.ndarray]:
    """Leading eigenpairs of the symmetric PSD ``M`` (descending) until they explain
    ``variance`` of ``total``: a partial decomposition first, the full one if needed."""
    m = M.shape[0]
    if m == 0 or total <= 0:
        return np.zeros(0), np.zeros((m, 0))
    # up to a few thousand rows the full divide-and-conquer decomposition is cheaper than
    # partial ones tried at growing sizes (telemetry features often need k ≈ n/2 for 95 %)
    size = m if m <= 4096 else 256
    while True:
        if size >= m // 2:
            evals, evecs = linalg.eigh(M, check_finite=False, driver="evd")
        else:
            evals, evecs = linalg.eigh(M, subset_by_index=[m - size, m - 1], driver="evr", check_finite=False)
        evals, evecs = evals[::-1], evecs[:, ::-1]
        keep = evals > max(evals[0], 0.0) * 1e-10 if evals.size else np.zeros(0, bool)
        evals, evecs = evals[keep], evecs[:, keep]
        if size >= m // 2 or evals.sum() >= variance * total or not keep.all():
            return evals, evecs
        size *= 4


class PCAMahalanobisDetector(BaseDetector):
    """Standardize, keep the principal components explaining ``variance`` of the
    variance, score each window by its squared Mahalanobis distance in that subspace.

    With standardized ``z``, loadings ``W`` (``p × k``) and component variances ``Λ``:
    ``d²(z) = zᵀ W Λ⁻¹ Wᵀ z = Σ_j c_j`` with ``c_j = z_j · (W Λ⁻¹ Wᵀ z)_j``.
    ``explain`` returns these ``c_j`` (they sum to the score exactly; a single ``c_j``
    may be negative when a feature pulls the window back towards the bulk).

    Parameters
    ----------
    variance : share of the variance the kept components explain (paper: 0.95).
    quantile, outlier_fence, clip : shared by every detector
        (:class:`~reveal_lab.detectors.BaseDetector`).
    max_components : optional cap on the number of components.
    clip : standardized values are clipped to ``±clip`` before the projection, in the fit
        and when scoring (``None``, the default: unclipped, as the paper); see
        :class:`~reveal_lab.detectors.ZScoreDetector`'s ``clip`` for why.
    precision : ``"float64"`` (default, exact). ``"mixed"`` forms the Gram/covariance
        matrix in single precision and decomposes it in double (Gram about 2× faster;
        on 1,800 × 6,818 synthetic features the scores move by ~1e-6 relative).
        ``"float32"`` also decomposes in single precision (the whole fit about 2× faster;
        scores ~2e-4 relative). Loadings, scores and contributions stay float64, so
        ``explain`` still sums exactly to ``decision_function``; with fewer windows than
        features the fit scores come from the eigenvectors themselves, so in the reduced
        precisions they agree with ``decision_function`` on the same windows to that
        precision only.

    The PCA is an eigendecomposition of the Gram matrix when there are fewer windows
    than features (the usual case: 1,800 windows × 7,000 features) and of the
    covariance otherwise; both are exact.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 6)); X[:, 1] += X[:, 0]
    >>> det = PCAMahalanobisDetector().fit(X)
    >>> bool(np.allclose(det.explain(X).sum(axis=1), det.decision_scores_))
    True
    """

    name = "mahalanobis"
    clips = True

    def __init__(
        self,
        variance: float = 0.95,
        quantile: float = QUANTILE,
        max_components: int | None = None,
        precision: str = "float64",
        clip: float | None = None,
        outlier_fence: bool = OUTLIER_FENCE_ON,
    ) -> None:
        super().__init__(quantile=quantile, outlier_fence=outlier_fence, clip=clip)
        self.variance = variance
        self.max_components = max_components
        self.precision = precision

    def _fit(self, X: np.ndarray) -> None:
        if not 0 < self.variance <= 1:
            raise ValueError(f"variance must be in (0, 1], got {self.variance}")
        n, p = X.shape
        self.mean_ = X.mean(axis=0)
        scale = X.std(axis=0, ddof=1) if n > 1 else np.zeros(p)
        scale = np.where(scale <= 1e-12 * np.maximum(1.0, np.abs(self.mean_)), 0.0, scale)
        self.scale_ = scale
        if self.precision not in ("float64", "mixed", "float32"):
            raise ValueError(f"precision must be 'float64', 'mixed' or 'float32', got {self.precision!r}")
        Z = self._standardize(X)
        gram = n <= p
        if self.precision == "float64":
            M = Z @ Z.T if gram else Z.T @ Z
        else:
            Zc = Z.astype(np.float32)
            M = Zc @ Zc.T if gram else Zc.T @ Zc
            del Zc
            if self.precision == "mixed":
                M = M.astype(np.float64)
        total_ss = float(np.trace(M, dtype=np.float64))
        evals, evecs = _top_eigen(M, self.variance, total_ss)
        evals, evecs = evals.astype(np.float64), evecs.astype(np.float64)
        lam = evals / max(n - 1, 1)  # component variances
        total = total_ss / max(n - 1, 1)
        if total > 0 and lam.size:
            k = int(np.searchsorted(np.cumsum(lam) / total, self.variance - 1e-12) + 1)
            k = min(k, lam.size)
        else:
            k = 0
        if self.max_components is not None:
            k = min(k, int(self.max_components))
        evals, evecs, lam = evals[:k], evecs[:, :k], lam[:k]
        self._lazy_components = None
        self.__dict__.pop("_components", None)
        if gram:
            # right singular vectors W = Zᵀ U / s (p × k) are only needed to score or explain
            # other windows: formed on first use (``components_``), not in ``fit``
            self._lazy_components = (Z, evecs, np.sqrt(evals))
            # fit scores straight from the left singular vectors: T = U S, d² = (n-1) Σ U²
            self._fit_scores_cache = (n - 1) * np.einsum("ik,ik->i", evecs, evecs)
        else:
            self._components = np.ascontiguousarray(evecs.T)
            self._fit_scores_cache = None
        self.n_components_ = k
        self.explained_variance_ = lam
        self.explained_variance_ratio_ = lam / total if total > 0 else lam

    @property
    def components_(self) -> np.ndarray:
        """Loadings of the kept components, ``float[k, p]`` (rows: unit vectors)."""
        if "_components" not in self.__dict__:
            lazy = self.__dict__.get("_lazy_components")
            if lazy is None:
                raise AttributeError("components_: the detector is not fitted")
            Z, U, s = lazy
            self._components = (U.T @ Z) / s[:, None] if s.size else np.zeros((0, Z.shape[1]))
            self._lazy_components = None
        return self._components

    def __getstate__(self) -> dict:
        # pickles hold the loadings, not the standardized fit data
        if self.__dict__.get("_lazy_components") is not None:
            self.components_  # noqa: B018 - forms them
        return super().__getstate__()

    def _fit_scores(self, X: np.ndarray) -> np.ndarray:
        cached, self._fit_scores_cache = self._fit_scores_cache, None
        return cached if cached is not None else self._score(X)

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        """Distance (not squared) over the threshold distance, so that it weighs like the others."""
        thr = self.threshold_
        return np.sqrt(np.maximum(scores, 0.0) / thr) if thr > 0 else np.sqrt(np.maximum(scores, 0.0)) + 1.0

    def _standardize(self, X: np.ndarray) -> np.ndarray:
        # (x - mean) / scale with 0 for constant features, in one new array
        Z = np.subtract(X, self.mean_)
        nz = self.scale_ > 0
        np.divide(Z, np.where(nz, self.scale_, 1.0), out=Z)
        if not nz.all():
            Z[:, ~nz] = 0.0
        if self.clip is not None:
            np.clip(Z, -self.clip, self.clip, out=Z)
        return Z

    def _gram_factors(self, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``(Z_fit, U, s)`` while the loadings are not formed and ``m`` windows are few
        (scoring or explaining through the fit data, ``Z Z_fitᵀ U / s``, then costs
        ``m·n·p`` instead of forming ``W``: ``n·k·p``); else None."""
        lazy = self.__dict__.get("_lazy_components")
        if lazy is None or "_components" in self.__dict__ or m > max(64, lazy[0].shape[0] // 4):
            return None
        return lazy

    def _projections(self, Z: np.ndarray) -> np.ndarray:
        g = self._gram_factors(Z.shape[0])
        if g is not None:
            Zf, U, s = g
            return ((Z @ Zf.T) @ U) / s  # = Z W, W = Z_fitᵀ U / s
        return Z @ self.components_.T  # n × k

    def _backproject(self, T: np.ndarray) -> np.ndarray:
        """``T Wᵀ`` (``m × p``), ``T`` of ``m × k``."""
        g = self._gram_factors(T.shape[0])
        if g is not None:
            Zf, U, s = g
            return ((T / s) @ U.T) @ Zf
        return T @ self.components_

    def _score(self, X: np.ndarray) -> np.ndarray:
        if self.n_components_ == 0:
            return np.zeros(X.shape[0])
        T = self._projections(self._standardize(X))
        return (T * T / self.explained_variance_).sum(axis=1)

    def _explain(self, X: np.ndarray) -> np.ndarray:
        Z = self._standardize(X)
        if self.n_components_ == 0:
            return np.zeros_like(Z)
        T = self._projections(Z) / self.explained_variance_  # Λ⁻¹ Wᵀ z
        return Z * self._backproject(T)  # z_j · (W Λ⁻¹ Wᵀ z)_j
