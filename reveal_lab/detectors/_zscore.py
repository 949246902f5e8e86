"""Z-score detector (paper §4.3): mean absolute z of a window's features."""

from __future__ import annotations

import numpy as np

from reveal_lab.detectors._base import BaseDetector, robust_scale, robust_scale_from_partition, safe_divide

__all__ = ["ZScoreDetector"]


class ZScoreDetector(BaseDetector):
    """Per-feature z against the fit data; a window's score is the mean ``|z|``.

    Parameters
    ----------
    quantile : the threshold is this quantile of the fit scores (paper: 0.99).
    robust : centre/scale by median and 1.4826·MAD (falling back to the standard
        deviation where the MAD is 0 up to round-off) instead of mean and standard deviation.
    constant_floor : a feature that is constant (but present) in the fit data gets the
        scale ``constant_floor · |centre|`` (or ``10 · constant_floor`` when the centre is
        0, or round-off below ``1e-12`` such as the variance ``3e-30`` of a constant
        window) instead of being neutral: in baseline mode an error counter that never fired
        in the baseline (sum 0) and fires 12 times in a window scores ``z = 120``. ``0``
        makes constant features neutral. Features absent from the fit data (all NaN)
        are always neutral.
    clip : a feature's ``|z|`` counts at most this much in the mean (``None``, the default:
        unbounded, as the paper). Features scaled by ``constant_floor`` (constant in the fit
        data: a counter that never fired) are never clipped. With calibrated thresholds,
        a feature nearly constant in some baseline runs (the variance of the page cache
        within a window) reaches ``|z|`` of 10⁴-10⁸ in another fault-free run and sets a
        threshold no fault reaches; the detection policy's ``z_clip`` bounds it.
    outlier_fence : cap the threshold at the outlier fence, median + 100·1.4826·MAD of the fit
        scores, when at most 10 % of the fit windows lie beyond it
        (:func:`~reveal_lab.detectors._base.outlier_fence`; ``True``, the default): a few
        extreme windows cannot lift the threshold above themselves. ``False``: the quantile
        itself, so a fit on the run flags its top share, as the paper.

    ``explain(X)`` returns ``|z|`` per feature (clipped as the score); its row mean is the
    score exactly.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)); X[7, 2] = 40.0
    >>> det = ZScoreDetector().fit(X)
    >>> int(det.decision_scores_.argmax()), int(det.explain(X[7:8]).argmax())
    (7, 2)
    >>> float(ZScoreDetector(clip=10.0).fit(X).explain(X[7:8])[0, 2])
    10.0
    """

    name = "zscore"

    def __init__(
        self,
        quantile: float = 0.99,
        robust: bool = True,
        constant_floor: float = 0.01,
        clip: float | None = None,
        outlier_fence: bool = True,
    ) -> None:
        self.quantile = quantile
        self.robust = robust
        self.constant_floor = constant_floor
        self.clip = clip
        self.outlier_fence = outlier_fence

    def _quantile(self) -> float:
        return self.quantile

    def _fit(self, X: np.ndarray) -> None:
        if self.clip is not None and not self.clip > 0:
            raise ValueError(f"clip must be > 0 or None, got {self.clip}")
        stats = getattr(self, "_fit_stats", None)
        P = stats.take_partitioned() if (self.robust and stats is not None) else None
        if P is not None:
            # the medians of the fit data are its imputation values (computed once, shared
            # with the other detectors of an ensemble); the MAD reuses their partition
            center, scale = robust_scale_from_partition(X, stats.impute_values, P)
        else:
            center, scale = robust_scale(X, self.robust)
        if self.constant_floor > 0:
            floor = np.where(
                np.abs(center) > 1e-12, self.constant_floor * np.abs(center), 10 * self.constant_floor
            )
            floored = (scale == 0) & self.observed_
            scale = np.where(floored, floor, scale)
        else:
            floored = np.zeros(scale.shape, dtype=bool)
        # per-feature cap on |z|: the clip, except for floored features (and none without a clip)
        self.z_cap_ = np.where(floored, np.inf, np.inf if self.clip is None else self.clip)
        self.center_, self.scale_ = center, scale

    def _z(self, X: np.ndarray) -> np.ndarray:
        z = np.abs(safe_divide(X - self.center_, self.scale_))
        return z if self.clip is None else np.minimum(z, self.z_cap_, out=z)

    def _score(self, X: np.ndarray) -> np.ndarray:
        # |x - c| / s summed in row blocks (small memory on wide feature matrices), with
        # 1/s precomputed (0 for neutral features); equals the mean of ``_z`` to rounding
        inv = safe_divide(np.ones_like(self.scale_), self.scale_)
        p = X.shape[1]
        out = np.empty(X.shape[0])
        buf = np.empty((min(256, X.shape[0]), p))
        for i in range(0, X.shape[0], 256):
            blk = X[i : i + 256]
            b = buf[: blk.shape[0]]
            np.subtract(blk, self.center_, out=b)
            np.abs(b, out=b)
            if self.clip is None:
                out[i : i + 256] = b @ inv
            else:  # |z| per feature (0 for neutral ones), capped, then summed
                np.multiply(b, inv, out=b)
                np.minimum(b, self.z_cap_, out=b)
                out[i : i + 256] = b.sum(axis=1)
        return out / p if p else out

    def _explain(self, X: np.ndarray) -> np.ndarray:
        return self._z(X)

    def zscores(self, X) -> np.ndarray:  # noqa: ANN001
        """Signed z per feature (for the words of a claim: above or below its baseline)."""
        Xi = self._transform_input(X)
        return safe_divide(Xi - self.center_, self.scale_)
