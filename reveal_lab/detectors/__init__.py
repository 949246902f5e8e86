"""Anomaly detectors over window features (paper §4.3), PyOD/scikit-learn style.

``ZScoreDetector``, ``PCAMahalanobisDetector`` and ``IsolationForestDetector`` share
:class:`BaseDetector` (``fit``, ``decision_function``, ``predict``, ``fit_predict``,
``decision_scores_``, ``threshold_``, ``labels_`` and ``explain``);
:class:`DetectorEnsemble` runs them together (agreement 0–3 and a combined score).
"""

from reveal_lab.detectors._base import BaseDetector, FitStats, fit_stats
from reveal_lab.detectors._ensemble import DetectorEnsemble, EnsembleResult, default_detectors
from reveal_lab.detectors._fitted import FastForestScorer, FittedDetectors, FlatForest, WindowScorer
from reveal_lab.detectors._iforest import IsolationForestDetector
from reveal_lab.detectors._mahalanobis import PCAMahalanobisDetector
from reveal_lab.detectors._zscore import ZScoreDetector

__all__ = [
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
    "DetectorEnsemble",
    "EnsembleResult",
    "default_detectors",
]
