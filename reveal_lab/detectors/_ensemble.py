"""Run the three detectors together: agreement (how many flag a window) and a combined score."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.base import clone

from reveal_lab.config import DetectConfig
from reveal_lab.detectors._base import OUTLIER_FENCE_ON, QUANTILE, BaseDetector, FitStats, fit_stats
from reveal_lab.detectors._defaults import agreement_score
from reveal_lab.detectors._iforest import IsolationForestDetector
from reveal_lab.detectors._mahalanobis import PCAMahalanobisDetector
from reveal_lab.detectors._pcarecon import PCAReconstructionDetector
from reveal_lab.detectors._zscore import ZScoreDetector

__all__ = ["EnsembleResult", "DetectorEnsemble", "default_detectors", "agreement_score"]


def default_detectors(
    config: DetectConfig | None = None,
    *,
    quantile: float = QUANTILE,
    clip: float | None = None,
    outlier_fence: bool = OUTLIER_FENCE_ON,
    zscore: str = "robust",
) -> list[BaseDetector]:
    """The paper's three detectors configured from a :class:`~reveal_lab.config.DetectConfig`,
    and PCA reconstruction error when ``config.pcarecon`` is True. The parameters they share
    (:class:`~reveal_lab.detectors.BaseDetector`) come from the detection policy:
    ``quantile`` (each threshold is this quantile of the fit scores, the paper's top 1 %),
    ``clip`` (a standardized feature counts at most this many units in the Z-score mean and
    the Mahalanobis projection; ``None``: unbounded) and ``outlier_fence`` (each threshold
    capped at the outlier fence; ``False``: the quantile itself, as the paper). ``zscore``: the
    Z-score's form (:attr:`ZScoreDetector.FORMS`; ``standard`` is the paper's).

    >>> [d.clip for d in default_detectors()[:2]], [d.clip for d in default_detectors(clip=10.0)[:2]]
    ([None, None], [10.0, 10.0])
    >>> [d.outlier_fence for d in default_detectors(outlier_fence=False)]
    [False, False, False]
    >>> [d.quantile for d in default_detectors(quantile=0.95)], default_detectors(zscore="standard")[0].robust
    ([0.95, 0.95, 0.95], False)
    """
    c = config or DetectConfig()
    shared = {"quantile": quantile, "outlier_fence": outlier_fence}
    dets: list[BaseDetector] = [
        ZScoreDetector(clip=clip, **ZScoreDetector.form_params(zscore), **shared),  # type: ignore[arg-type]
        PCAMahalanobisDetector(variance=c.pca_variance, precision=c.pca_precision, clip=clip, **shared),
        IsolationForestDetector(n_estimators=c.iforest_estimators, random_state=c.seed, **shared),
    ]
    if c.pcarecon:
        dets.append(PCAReconstructionDetector(variance=c.pca_variance, **shared))
    return dets


@dataclass
class EnsembleResult:
    """Scores of one set of windows.

    ``combined`` is the mean over detectors of ``score / threshold`` (each detector's
    score in units of its own threshold: above 1 means that detector flags the window;
    the Mahalanobis score enters as a distance, ``sqrt(d² / threshold)``), so detectors
    on different scales weigh alike and a window flagged by all three ranks above one
    flagged by one.
    """

    scores: dict[str, np.ndarray]
    thresholds: dict[str, float]
    labels: dict[str, np.ndarray]
    agreement: np.ndarray
    combined: np.ndarray

    @property
    def methods(self) -> list[str]:
        return list(self.scores)

    @property
    def anomalous(self) -> np.ndarray:
        """Windows flagged by at least one detector."""
        return self.agreement > 0


class DetectorEnsemble:
    """Fit several detectors on the same features and score windows with all of them.

    Parameters
    ----------
    detectors : unfitted detectors (default: :func:`default_detectors`); each is cloned.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> X = rng.normal(size=(400, 10)); X[50] += 8.0
    >>> res = DetectorEnsemble().fit(X).result_
    >>> int(res.agreement[50]), int(res.combined.argmax())
    (3, 50)
    """

    def __init__(self, detectors: Sequence[BaseDetector] | None = None) -> None:
        self.detectors = detectors

    def fit(self, X) -> DetectorEnsemble:  # noqa: ANN001
        base, stats = self._unfitted(X)
        self.detectors_ = {d.name: clone(d).fit(X, stats=stats) for d in base}
        self.result_ = self._result({n: d.decision_scores_ for n, d in self.detectors_.items()})
        return self

    def holdout_scores(self, X, X_new) -> dict[str, np.ndarray]:  # noqa: ANN001
        """Each detector's scores of ``X_new`` when fitted on ``X``: ``fit(X).score(X_new).scores``
        without the fit data's own scores and thresholds (:meth:`BaseDetector.holdout_scores`);
        for fits that only score held-out windows. Sets ``detectors_`` (without thresholds)."""
        base, stats = self._unfitted(X)
        self.detectors_ = {d.name: clone(d) for d in base}
        return {n: d.holdout_scores(X, X_new, stats=stats) for n, d in self.detectors_.items()}

    def _unfitted(self, X) -> tuple[Sequence[BaseDetector], FitStats | None]:  # noqa: ANN001
        """The detectors to fit (checked) and the fit statistics they share (None: each its own)."""
        base = self.detectors if self.detectors is not None else default_detectors()
        names = [d.name for d in base]
        if len(set(names)) != len(names):
            raise ValueError(f"detector names must be unique, got {names}")
        if isinstance(X, np.ndarray) and X.dtype == np.float64 and X.ndim == 2 and X.shape[0] >= 2:
            # the detectors share one pass over the fit data for finiteness and medians
            return base, fit_stats(X)
        return base, None

    def score(self, X) -> EnsembleResult:  # noqa: ANN001
        """Score new windows against what was fit (the baseline mode)."""
        return self._result({n: d.decision_function(X) for n, d in self.detectors_.items()})

    def combine(self, scores: dict[str, np.ndarray]) -> EnsembleResult:
        """The ensemble's result from each detector's scores of the same windows (thresholds,
        labels, agreement and the combined score, each detector normalised its own way)."""
        return self._result(scores)

    def _result(self, scores: dict[str, np.ndarray]) -> EnsembleResult:
        thr = {n: float(self.detectors_[n].threshold_) for n in scores}
        labels = {n: (s > thr[n]).astype(np.int64) for n, s in scores.items()}
        agreement = np.sum(list(labels.values()), axis=0).astype(np.int64)
        norm = [self.detectors_[n].normalize(s) for n, s in scores.items()]
        return EnsembleResult(scores, thr, labels, agreement, np.mean(norm, axis=0))
