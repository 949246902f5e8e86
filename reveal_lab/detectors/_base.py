"""The shared estimator contract of the detectors (PyOD style, scikit-learn compatible).

* ``__init__`` stores parameters only.
* ``fit(X)`` learns from ``X`` (the run itself, as the paper, or reference runs) and
  sets ``decision_scores_`` (the scores of ``X``), ``threshold_`` and ``labels_``.
* ``decision_function(X)``: higher means more anomalous.
* ``predict(X)``: ``1`` for anomalous windows, ``0`` otherwise (PyOD convention, *not*
  scikit-learn's ``-1/+1`` outlier convention).
* ``explain(X)``: ``float[n_samples, n_features]``, each feature's contribution to each
  window's score (see each detector for what the numbers mean).

Features may hold NaN or ±inf (a window of a metric that was missing, the kurtosis
of a constant): they are imputed with the medians of the fit data, and features
that are constant (or missing) in the fit data are neutral.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from reveal_lab.detectors._defaults import OUTLIER_FENCE_ON, QUANTILE
from reveal_lab.numeric import safe_divide  # noqa: F401  (the detectors' helper lives there)

__all__ = ["BaseDetector", "QUANTILE", "OUTLIER_FENCE_ON"]



class BaseDetector(BaseEstimator, ABC):
    """Abstract base: validation, imputation, ``predict``/``fit_predict``, thresholds.

    The parameters every detector shares are set here, once (a subclass lists them in its own
    signature, as scikit-learn's ``get_params`` reads it, with these defaults, and passes them
    on):

    quantile : the threshold is this quantile of the fit scores (:data:`QUANTILE`, the
        paper's top 1 %).
    outlier_fence : cap that threshold at the outlier fence when a few windows lie beyond it
        (:meth:`_fit_threshold`; :data:`OUTLIER_FENCE_ON`). ``False``: the quantile itself.
    clip : a standardized feature counts at most this many units (``None``: unbounded, as
        the paper); only detectors that standardize their features (``clips = True``) take it.
    """

    #: short name used in reports (``methods`` column)
    name: str = "detector"
    #: whether the detector standardizes its features and takes ``clip``
    clips: bool = False

    def __init__(
        self, quantile: float = QUANTILE, outlier_fence: bool = OUTLIER_FENCE_ON, clip: float | None = None
    ) -> None:
        self.quantile = quantile
        self.outlier_fence = outlier_fence
        # ``clip`` is a parameter of a detector that clips, and of one that takes this signature
        if self.clips or type(self).__init__ is BaseDetector.__init__:
            self.clip = clip

    def __sklearn_tags__(self):  # noqa: ANN204 - sklearn's Tags type
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.non_deterministic = False
        return tags

    # -- validation and imputation ---------------------------------------------------------
    def _validate(self, X, *, reset: bool) -> np.ndarray:  # noqa: ANN001
        X = validate_data(
            self,
            X,
            reset=reset,
            dtype=np.float64,
            ensure_all_finite=False,
            ensure_min_samples=2 if reset else 1,
        )
        X = np.asarray(X, dtype=np.float64)
        # huge finite values (1e308) would overflow squares, sums and float32: clip them (they
        # stay the most extreme values by far); counted for the report
        big = np.abs(X) > VALUE_CLIP
        n_big = int(big.sum()) - int(np.isinf(X).sum())
        if reset:
            self.n_clipped_ = n_big
        if n_big:
            X = np.where(big & np.isfinite(X), np.clip(X, -VALUE_CLIP, VALUE_CLIP), X)
        return X

    def _fit_impute(self, X: np.ndarray, stats: FitStats | None = None) -> np.ndarray:
        if stats is None:
            stats = fit_stats(X)
        elif stats.finite.shape != X.shape:
            raise ValueError(
                f"{self.name}: fit statistics of a {stats.finite.shape} matrix given for {X.shape}"
            )
        #: features with at least one finite value in the fit data (the others are unknown, not constant)
        self.observed_ = stats.observed
        self.impute_values_ = stats.impute_values
        # the fit data's medians after imputation (the robust centre of the Z-score):
        # filling with the median leaves each median unchanged, so they are ``impute_values_``
        self._fit_stats = stats
        return self._impute(X, stats.finite)

    def _impute(self, X: np.ndarray, finite: np.ndarray | None = None) -> np.ndarray:
        if finite is None:
            finite = np.isfinite(X)
        if finite.all():
            return X
        return np.where(finite, X, self.impute_values_[None, :])

    def _transform_input(self, X) -> np.ndarray:  # noqa: ANN001
        check_is_fitted(self, "threshold_")
        return self._impute(self._validate(X, reset=False))

    # -- the contract ------------------------------------------------------------------------
    def fit(self, X, y=None, *, stats: FitStats | None = None):  # noqa: ANN001, ARG002 - y ignored
        """Fit on ``X``. ``stats``: :func:`fit_stats` of exactly this ``X``, when the caller has
        them (an ensemble computes them once for all its detectors); computed here otherwise."""
        self._check_shared()
        X = self._validate(X, reset=True)
        try:
            Xi = self._fit_impute(X, stats)
            self._fit(Xi)
            scores = self._fit_scores(Xi)
        finally:
            self.__dict__.pop("_fit_stats", None)  # the shared fit statistics are not kept
        self.decision_scores_ = scores
        self.threshold_ = self._fit_threshold(scores)
        self.labels_ = (scores > self.threshold_).astype(np.int64)
        return self

    def holdout_scores(self, X, X_new, *, stats: FitStats | None = None) -> np.ndarray:  # noqa: ANN001
        """The scores of ``X_new`` by this detector fitted on ``X`` (``stats`` as in
        :meth:`fit`): ``fit(X).decision_function(X_new)`` without scoring ``X`` or setting a
        threshold, for fits that only score held-out windows. ``decision_scores_``,
        ``threshold_`` and ``labels_`` stay unset."""
        self._check_shared()
        X = self._validate(X, reset=True)
        try:
            self._fit(self._fit_impute(X, stats))
        finally:
            self.__dict__.pop("_fit_stats", None)
        self.__dict__.pop("_fit_scores_cache", None)
        return self._score(self._impute(self._validate(X_new, reset=False)))

    def decision_function(self, X) -> np.ndarray:  # noqa: ANN001
        """Anomaly score of each row of ``X`` (higher: more anomalous)."""
        return self._score(self._transform_input(X))

    def predict(self, X) -> np.ndarray:  # noqa: ANN001
        """``1`` where the score exceeds ``threshold_`` (anomalous), else ``0``."""
        return (self.decision_function(X) > self.threshold_).astype(np.int64)

    def fit_predict(self, X, y=None) -> np.ndarray:  # noqa: ANN001, ARG002
        return self.fit(X).labels_

    def explain(self, X) -> np.ndarray:  # noqa: ANN001
        """Per-feature contributions, ``float[n_samples, n_features]``."""
        return self._explain(self._transform_input(X))

    def normalized_scores(self, X=None) -> np.ndarray:  # noqa: ANN001
        """Scores in units of ``threshold_`` (``> 1``: flagged); of the fit data when ``X`` is None."""
        check_is_fitted(self, "threshold_")
        return self.normalize(self.decision_scores_ if X is None else self.decision_function(X))

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        """``scores / threshold_`` (shifted when the threshold is not positive)."""
        thr = self.threshold_
        return scores / thr if thr > 0 else scores - thr + 1.0

    # -- what each detector implements ------------------------------------------------------
    @abstractmethod
    def _fit(self, X: np.ndarray) -> None: ...

    @abstractmethod
    def _score(self, X: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def _explain(self, X: np.ndarray) -> np.ndarray: ...

    def _fit_scores(self, X: np.ndarray) -> np.ndarray:
        """Scores of the fit data (a detector may reuse what ``_fit`` computed)."""
        return self._score(X)

    def _check_shared(self) -> None:
        """The shared parameters checked (at fit time, as scikit-learn asks)."""
        q = self.quantile
        if isinstance(q, bool) or not isinstance(q, int | float) or not 0.5 <= q < 1.0:
            raise ValueError(f"{self.name}: quantile must be in [0.5, 1), got {q!r}")
        if not isinstance(self.outlier_fence, bool | np.bool_):
            raise ValueError(f"{self.name}: outlier_fence must be True or False, got {self.outlier_fence!r}")
        clip = self.clip if self.clips else None
        if clip is not None and (isinstance(clip, bool) or not isinstance(clip, int | float) or not clip > 0):
            raise ValueError(f"{self.name}: clip must be > 0 or None, got {clip!r}")

    def _fit_threshold(self, scores: np.ndarray) -> float:
        """The ``quantile`` quantile of the fit scores, capped by the outlier fence
        (:func:`outlier_fence`) when ``outlier_fence`` is True and at most
        :data:`OUTLIER_MAX_SHARE` of the fit windows lie beyond it: a few extreme windows (a
        1e25 spike spread over the three windows that hold it) cannot lift the threshold above
        themselves. With ``outlier_fence=False`` the threshold is the quantile itself, so a fit
        on the run flags its top share. ``n_beyond_fence_`` counts the fit windows beyond the
        fence when it capped (else 0)."""
        thr = float(np.quantile(scores, self.quantile))
        self.n_beyond_fence_ = 0
        if not self.outlier_fence:
            return thr
        fence = outlier_fence(scores)
        if fence < thr:
            beyond = int((scores > fence).sum())
            # a few windows (outliers), not a regime: a bimodal run keeps its quantile
            if beyond <= OUTLIER_MAX_SHARE * scores.size:
                self.n_beyond_fence_ = beyond
                return fence
        return thr


#: fit scores beyond median + OUTLIER_FENCE · 1.4826 · MAD are outliers whatever the quantile
OUTLIER_FENCE = 100.0
#: ... when they are at most this share of the fit windows (more is a regime of the run)
OUTLIER_MAX_SHARE = 0.10
#: finite inputs are clipped to ±VALUE_CLIP: squares and sums stay finite, and so does
#: the float32 copy the Isolation Forest makes (float32 ends at 3.4e38)
VALUE_CLIP = 1e30


def outlier_fence(scores: np.ndarray, k: float = OUTLIER_FENCE) -> float:
    """``median + k · 1.4826 · MAD`` of the finite ``scores`` (``inf`` when the MAD is 0
    or there are fewer than 2 finite scores: no fence).

    >>> s = np.r_[np.linspace(1.0, 2.0, 57), 1e46, 1e46, 1e46]
    >>> bool(outlier_fence(s) < 1e3), bool(np.quantile(s, 0.99) == 1e46)
    (True, True)
    """
    s = np.asarray(scores, dtype=np.float64)
    s = s[np.isfinite(s)]
    if s.size < 2:
        return float("inf")
    med = float(np.median(s))
    mad = 1.4826 * float(np.median(np.abs(s - med)))
    return med + k * mad if mad > 0 else float("inf")


def robust_scale(X: np.ndarray, robust: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature centre and scale; scale 0 for constant features (made neutral by the caller).

    Robust: median and 1.4826·MAD, falling back to the standard deviation where the
    MAD is 0 or numerically 0 (sparse counters that are mostly zero; the variance of a
    metric that is constant in most windows, which is round-off such as ``3e-30``
    there and a real value elsewhere).
    """
    if robust:
        XT = np.array(X.T, order="C")
        center = median_rows(XT, overwrite=True)  # permutes within rows: harmless for the MAD
        np.subtract(XT, center[:, None], out=XT)
        np.abs(XT, out=XT)
        scale = 1.4826 * median_rows(XT, overwrite=True)
        del XT
        std = X.std(axis=0)
        scale = np.where(_numerically_zero(scale, center), std, scale)
    else:
        center = X.mean(axis=0)
        scale = X.std(axis=0)
    # treat numerically-constant features as constant
    scale = np.where(_numerically_zero(scale, center), 0.0, scale)
    return center, scale


def _numerically_zero(scale: np.ndarray, center: np.ndarray) -> np.ndarray:
    """Where a scale is 0 up to round-off: ``scale <= 1e-12 · max(1, |centre|)``."""
    return ~(scale > 1e-12 * np.maximum(1.0, np.abs(center)))


def robust_scale_from_partition(
    X: np.ndarray, median: np.ndarray, P: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`robust_scale` (robust) given the column medians of ``X`` and ``P``: ``X.T``
    with each row permuted (e.g. partitioned around its median), overwritten here.
    The standard deviation (the fallback where the MAD is 0 up to round-off) is computed
    only where needed."""
    center = median.copy()
    np.subtract(P, center[:, None], out=P)
    np.abs(P, out=P)
    scale = 1.4826 * median_rows(P, overwrite=True)
    del P
    zero = np.flatnonzero(_numerically_zero(scale, center))
    if zero.size:
        scale[zero] = X[:, zero].std(axis=0)
    scale = np.where(_numerically_zero(scale, center), 0.0, scale)
    return center, scale


def median_rows(A: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
    """Median of each row of a C-contiguous 2-D array (a partition, in place when
    ``overwrite``; faster than ``np.median(X, axis=0)`` on wide feature matrices)."""
    n = A.shape[1]
    if n == 0:
        return np.full(A.shape[0], np.nan)
    k = n // 2
    kth = [k - 1, k] if n % 2 == 0 else [k]
    P = A if overwrite else A.copy()
    P.partition(kth, axis=1)
    return P[:, k].copy() if n % 2 else 0.5 * (P[:, k - 1] + P[:, k])


class FitStats:
    """What every detector needs from its fit data before fitting: finiteness and the
    per-feature medians used for imputation (computed once per matrix, shared by the
    detectors of an ensemble: the median is the costly part on 1,800 × 7,000 features).

    ``sorted_T``, when present, is ``X.T`` (C-contiguous) with each row partitioned around
    its median; a consumer may take it over (``take_partitioned``) and overwrite it."""

    __slots__ = ("finite", "all_finite", "observed", "impute_values", "_partitioned_T")

    def __init__(self, finite, all_finite, observed, impute_values, partitioned_T):  # noqa: ANN001
        self.finite = finite
        self.all_finite = all_finite
        self.observed = observed
        self.impute_values = impute_values
        self._partitioned_T = partitioned_T

    def take_partitioned(self) -> np.ndarray | None:
        """``X.T`` partitioned around the medians (only when ``X`` was all finite), once."""
        P, self._partitioned_T = self._partitioned_T, None
        return P


def fit_stats(X: np.ndarray, *, keep_partitioned: bool = True) -> FitStats:
    """Finiteness mask, observed features and imputation medians of a fit matrix."""
    finite = np.isfinite(X)
    observed = finite.any(axis=0)
    all_finite = bool(observed.all()) and bool(finite.all())
    XT = np.array(X.T, order="C")
    med = median_rows(XT, overwrite=True)
    bad_cols = np.flatnonzero(~finite.all(axis=0))
    if bad_cols.size:
        sub = X[:, bad_cols]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: imputed with 0 below
            med[bad_cols] = np.nanmedian(np.where(np.isfinite(sub), sub, np.nan), axis=0)
    impute_values = np.where(np.isfinite(med), med, 0.0)
    return FitStats(
        finite, all_finite, observed, impute_values, XT if (all_finite and keep_partitioned) else None
    )
