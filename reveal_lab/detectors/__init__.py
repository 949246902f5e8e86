"""Anomaly detectors over window features (paper §4.3), PyOD/scikit-learn style.

``ZScoreDetector``, ``PCAMahalanobisDetector``, ``IsolationForestDetector`` and
``PCAReconstructionDetector`` share
:class:`BaseDetector` (``fit``, ``decision_function``, ``predict``, ``fit_predict``,
``decision_scores_``, ``threshold_``, ``labels_`` and ``explain``);
:class:`DetectorEnsemble` runs them together (agreement and a combined score;
:func:`agreement_score`, the paper's score that grows with the detectors agreeing);
:func:`pot_threshold` sets a threshold from calibration scores without labels.
"""

from reveal_lab.detectors._base import OUTLIER_FENCE_ON, QUANTILE, BaseDetector, FitStats, fit_stats
from reveal_lab.detectors._ensemble import (
    DetectorEnsemble,
    EnsembleResult,
    agreement_score,
    default_detectors,
)
from reveal_lab.detectors._fitted import FastForestScorer, FittedDetectors, FlatForest, WindowScorer
from reveal_lab.detectors._iforest import IsolationForestDetector
from reveal_lab.detectors._mahalanobis import PCAMahalanobisDetector
from reveal_lab.detectors._pcarecon import PCAReconstructionDetector
from reveal_lab.detectors._thresholds import pot_threshold
from reveal_lab.detectors._zscore import ZScoreDetector

__all__ = [
    "QUANTILE",
    "OUTLIER_FENCE_ON",
    "FitStats",
    "fit_stats",
    "FittedDetectors",
    "WindowScorer",
    "FastForestScorer",
    "FlatForest",
    "BaseDetector",
    "ZScoreDetector",
    "PCAMahalanobisDetector",
    "IsolationForestDetector",
    "PCAReconstructionDetector",
    "pot_threshold",
    "DetectorEnsemble",
    "EnsembleResult",
    "default_detectors",
    "agreement_score",
]
