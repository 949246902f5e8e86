"""Z-score detector (paper §4.3): mean absolute z of a window's features."""

from __future__ import annotations

import numpy as np

from reveal_lab.detectors._base import (
    OUTLIER_FENCE_ON,
    QUANTILE,
    BaseDetector,
    robust_scale,
    robust_scale_from_partition,
    safe_divide,
)
from reveal_lab.detectors._defaults import ZSCORE_FORMS

__all__ = ["ZScoreDetector", "GROUP_SCALE_FLOOR", "TAIL_SHARE"]

#: with ``groups``: a group's mean ``|z|`` is scaled by its robust spread over the fit windows,
#: never below this (a group calm in every window would otherwise turn round-off into sigmas)
GROUP_SCALE_FLOOR = 0.25
#: with ``groups`` and no ``clip``: the ``|z|`` of one feature taken as its most, for the
#: group's least scale (see :class:`ZScoreDetector`)
ONE_FEATURE_CAP = 10.0
#: with ``groups``: the upper tail of a group, the mean of its ``ceil(TAIL_SHARE · size)``
#: largest ``|z|``, is a second statistic of the group beside its mean (a shift of a minority
#: of a large family's features is not averaged away)
TAIL_SHARE = 0.01


class ZScoreDetector(BaseDetector):
    """Per-feature z against the fit data; a window's score is the mean ``|z|``.

    Parameters
    ----------
    quantile, outlier_fence, clip : shared by every detector
        (:class:`~reveal_lab.detectors.BaseDetector`); ``clip`` and ``outlier_fence`` as below.
    robust : centre/scale by median and 1.4826·MAD (falling back to the standard
        deviation where the MAD is 0 up to round-off) instead of mean and standard deviation.
        ``robust=False, constant_floor=0`` is the paper's standardized Z-score (§4.3, the
        "three-sigma" rule: mean and standard deviation of the fit windows, a feature constant
        in them neutral): :meth:`standardized`.
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

    groups : one group number per feature (e.g. its metric's subsystem), or ``None``: a
        window's score is then the largest of its groups' mean ``|z|`` instead of the mean
        over every feature, so a deviation confined to a small group (a GPU's few metrics
        among hundreds of network counters) is not averaged away. Each group's mean is first
        put in units of its own spread over the fit windows (median and 1.4826·MAD, at least
        :data:`GROUP_SCALE_FLOOR`, and at least what one feature at the clip adds to the
        group's mean), so a group that is always busy does not outrank one that is always
        calm, and one twitching feature cannot make its group fire. A mean averages away a
        strong shift of a minority of a large group (30 of 1,200 features at the clip move it
        by 0.25), so each group is also scored by its upper tail: the mean of its ``k``
        largest ``|z|``, ``k = ceil(tail_share · size)``, in units of its own spread over the
        fit windows likewise (at least :data:`GROUP_SCALE_FLOOR` and the clip over ``k``: one
        feature entering the tail at the clip moves it by at most one unit). A group's score
        is the larger of its mean and its tail over ``tail_margin``; both are shares of the
        group, so neither grows with its size. Two tests per group: a threshold by family
        counts both (:func:`~reveal_lab.pipeline.family_threshold`).
    tail_share : with ``groups``: the share of a group's features whose mean is its upper
        tail (:data:`TAIL_SHARE`).
    tail_margin : with ``groups``: how many times the threshold the tail must clear
        (:attr:`TAIL_MARGIN`).
    relative_floor : each feature's scale is at least this share of its centre's magnitude
        (``0``: no floor): a gauge near-flat within the run (free memory, the page cache)
        drifting by a fraction of a percent is not hundreds of its tiny MADs away.
    scale_floor : one least scale per feature, in the feature's unit (``None``: none): a
        percentage moving by a tenth of a point is no deviation however flat it was.

    ``explain(X)`` returns ``|z|`` per feature (clipped as the score); without ``groups`` its
    row mean is the score exactly; with ``groups``, each feature's part in its group's score
    by the statistic that scores the group higher in that window (by the mean, its ``|z|``
    over the group's size and scale; by the tail, its ``|z|`` over ``k``, the tail's scale and
    the margin for the ``k`` largest, 0 for the others), so the features of the group that fired come
    first.

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
    clips = True
    #: with ``groups``: the tail counts in its group's score divided by this (``tail_margin``'s
    #: default), so it must clear twice the group's threshold: under the normal model of a
    #: family's threshold (:func:`~reveal_lab.pipeline.family_threshold`, which counts it) its
    #: false alarms add ``P(N > 2 t)`` to the mean's ``P(N > t)``, under 10⁻⁴ of it for any
    #: ``t ≥ 2.5`` (the default rate gives 2.7 and up); a tail is heavier than a mean (fewer
    #: features averaged) and is held to more
    TAIL_MARGIN = 2.0

    def __init__(
        self,
        quantile: float = QUANTILE,
        robust: bool = True,
        constant_floor: float = 0.01,
        clip: float | None = None,
        outlier_fence: bool = OUTLIER_FENCE_ON,
        groups: tuple[int, ...] | None = None,
        relative_floor: float = 0.0,
        scale_floor: tuple[float, ...] | None = None,
        tail_share: float = TAIL_SHARE,
        tail_margin: float = TAIL_MARGIN,
    ) -> None:
        super().__init__(quantile=quantile, outlier_fence=outlier_fence, clip=clip)
        self.robust = robust
        self.constant_floor = constant_floor
        self.groups = groups
        self.relative_floor = relative_floor
        self.scale_floor = scale_floor
        self.tail_share = tail_share
        self.tail_margin = tail_margin

    #: the two forms of the Z-score: ``robust`` (median and 1.4826·MAD, a constant feature
    #: floored) and ``standard`` (mean and standard deviation, a constant feature neutral: the
    #: paper's, :meth:`standardized`)
    FORMS = ZSCORE_FORMS

    @classmethod
    def form_params(cls, form: str) -> dict[str, object]:
        """The parameters of the Z-score's form ``form`` (one of :data:`FORMS`).

        >>> ZScoreDetector.form_params("standard")
        {'robust': False, 'constant_floor': 0.0}
        """
        if form not in cls.FORMS:
            raise ValueError(f"Z-score form must be one of {cls.FORMS}, got {form!r}")
        robust = form == "robust"
        return {"robust": robust, "constant_floor": 0.01 if robust else 0.0}

    @classmethod
    def standardized(cls, **params: object) -> ZScoreDetector:
        """The paper's Z-score (§4.3): standardized deviations from the fit windows' mean in
        units of their standard deviation, a feature constant in them neutral.

        >>> import numpy as np
        >>> X = np.r_[np.zeros((99, 1)), [[10.0]]]
        >>> det = ZScoreDetector.standardized().fit(X)
        >>> round(float(det.center_[0]), 2), round(float(det.scale_[0]), 3)
        (0.1, 0.995)
        """
        return cls(**cls.form_params("standard"), **params)  # type: ignore[arg-type]

    def _fit(self, X: np.ndarray) -> None:
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
        if self.relative_floor > 0:  # a gauge's slow drift is not a deviation of its scale
            scale = np.maximum(scale, self.relative_floor * np.abs(center))
        if self.scale_floor is not None:  # a resolution in the metric's own unit
            scale = np.maximum(scale, np.asarray(self.scale_floor, dtype=np.float64))
        # per-feature cap on |z|: the clip, except for floored features (and none without a clip)
        # (with groups every feature is clipped: a group's scale bounds what one feature adds)
        unclipped = floored if self.groups is None else np.zeros(scale.shape, dtype=bool)
        self.z_cap_ = np.where(unclipped, np.inf, np.inf if self.clip is None else self.clip)
        self.center_, self.scale_ = center, scale
        G = self._group_matrix(X.shape[1])
        if G is not None:  # each group's mean |z| against its own calm majority in the fit data
            self.tail_members_, self.tail_k_ = self._tail_sizes()
            S, T = self._group_stats(X, G)
            self.group_center_ = np.median(S, axis=0)
            mad = 1.4826 * np.median(np.abs(S - self.group_center_), axis=0)
            # one feature alone at its cap moves its group's mean by cap / size: never more than
            # one unit, so a group fires only when several of its features move
            cap = self.clip if self.clip is not None else ONE_FEATURE_CAP
            self.group_scale_ = np.maximum(np.maximum(mad, GROUP_SCALE_FLOOR), cap * G.max(axis=0))
            # the upper tail likewise, against its own calm majority; one feature entering the
            # top k at its cap moves the tail's mean by at most cap / k
            self.tail_center_ = np.median(T, axis=0)
            mad = 1.4826 * np.median(np.abs(T - self.tail_center_), axis=0)
            self.tail_scale_ = np.maximum(np.maximum(mad, GROUP_SCALE_FLOOR), cap / self.tail_k_)

    def _z(self, X: np.ndarray) -> np.ndarray:
        z = np.abs(safe_divide(X - self.center_, self.scale_))
        return z if self.clip is None else np.minimum(z, self.z_cap_, out=z)

    def _group_matrix(self, p: int) -> np.ndarray | None:
        """Features x groups: 1 / (the group's size) where a feature is in a group."""
        if self.groups is None:
            return None
        g = np.asarray(self.groups, dtype=np.int64)
        if g.shape != (p,):
            raise ValueError(f"groups must give one group per feature ({p}), got {g.shape}")
        _, inv, counts = np.unique(g, return_inverse=True, return_counts=True)
        G = np.zeros((p, counts.size))
        G[np.arange(p), inv] = 1.0 / counts[inv]
        return G

    def _tail_sizes(self) -> tuple[list[np.ndarray], np.ndarray]:
        """Each group's features (in the order of ``np.unique(groups)``) and its tail's size
        ``k = ceil(tail_share · size)``."""
        g = np.asarray(self.groups, dtype=np.int64)
        _, inv = np.unique(g, return_inverse=True)
        members = [np.flatnonzero(inv == j) for j in range(int(inv.max(initial=-1)) + 1)]
        k = np.array([max(1, int(np.ceil(self.tail_share * m.size))) for m in members])
        return members, k

    def _group_stats(self, X: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Windows x groups: each group's mean ``|z|`` and the mean of its ``k`` largest
        (``tail_members_``, ``tail_k_``: :meth:`_tail_sizes` at fit), from one ``|z|`` per block
        of rows."""
        means = np.empty((X.shape[0], G.shape[1]))
        tails = np.empty((X.shape[0], len(self.tail_members_)))
        for i in range(0, X.shape[0], 256):
            z = self._z(X[i : i + 256])
            means[i : i + 256] = z @ G
            for j, (m, k) in enumerate(zip(self.tail_members_, self.tail_k_, strict=True)):
                top = np.partition(z[:, m], m.size - k, axis=1)[:, m.size - k :]
                tails[i : i + 256, j] = top.mean(axis=1)
        return means, tails

    def _group_scores(self, X: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Windows x groups: each group's mean in units of its own spread, and its tail in units
        of its own spread over ``tail_margin``."""
        means, tails = self._group_stats(X, G)
        S = (means - self.group_center_) / self.group_scale_
        T = (tails - self.tail_center_) / (self.tail_scale_ * self.tail_margin)
        return S, T

    def _score(self, X: np.ndarray) -> np.ndarray:
        G = self._group_matrix(X.shape[1])
        if G is not None:
            S = np.maximum(*self._group_scores(X, G))
            return S.max(axis=1, initial=-np.inf) if S.shape[1] else np.zeros(X.shape[0])
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
        z = self._z(X)
        G = self._group_matrix(X.shape[1])
        if G is None:
            return z
        # with groups: each feature's part in its group's score by the statistic that scores the
        # group higher in the window: its mean (|z| / group size / group scale) or its tail
        # (|z| / k / tail scale / margin for the group's k largest, 0 for the others)
        S, T = self._group_scores(X, G)
        out = z * (G @ (1.0 / self.group_scale_))
        for j, (m, k) in enumerate(zip(self.tail_members_, self.tail_k_, strict=True)):
            rows = np.flatnonzero(T[:, j] > S[:, j])
            if rows.size:
                zj = z[np.ix_(rows, m)]
                kth = np.partition(zj, m.size - k, axis=1)[:, m.size - k : m.size - k + 1]
                part = zj / (k * self.tail_scale_[j] * self.tail_margin)
                out[np.ix_(rows, m)] = np.where(zj >= kth, part, 0.0)
        return out

    def zscores(self, X) -> np.ndarray:  # noqa: ANN001
        """Signed z per feature (for the words of a claim: above or below its baseline)."""
        Xi = self._transform_input(X)
        return safe_divide(Xi - self.center_, self.scale_)
