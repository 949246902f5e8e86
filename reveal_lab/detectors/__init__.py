"""Anomaly detectors over window features (paper §4.3), PyOD/scikit-learn style.

``ZScoreDetector``, ``PCAMahalanobisDetector``, ``IsolationForestDetector`` and
``PCAReconstructionDetector`` share
:class:`BaseDetector` (``fit``, ``decision_function``, ``predict``, ``fit_predict``,
``decision_scores_``, ``threshold_``, ``labels_`` and ``explain``);
:class:`DetectorEnsemble` runs them together (agreement and a combined score;
:func:`agreement_score`, the paper's score that grows with the detectors agreeing);
:func:`pot_threshold` sets a threshold from calibration scores without labels.
"""

from typing import TYPE_CHECKING, Any

from reveal_lab.detectors._defaults import OUTLIER_FENCE_ON, QUANTILE, ZSCORE_FORMS, agreement_score
from reveal_lab.detectors._thresholds import pot_threshold

if TYPE_CHECKING:
    from reveal_lab.detectors._base import BaseDetector, FitStats, fit_stats
    from reveal_lab.detectors._ensemble import DetectorEnsemble, EnsembleResult, default_detectors
    from reveal_lab.detectors._fitted import FastForestScorer, FittedDetectors, FlatForest, WindowScorer
    from reveal_lab.detectors._iforest import IsolationForestDetector
    from reveal_lab.detectors._mahalanobis import PCAMahalanobisDetector
    from reveal_lab.detectors._pcarecon import PCAReconstructionDetector
    from reveal_lab.detectors._zscore import ZScoreDetector

__all__ = [
    "QUANTILE",
    "OUTLIER_FENCE_ON",
    "ZSCORE_FORMS",
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

#: the names whose modules import scikit-learn: loaded on first use (:func:`__getattr__`)
_ESTIMATORS = frozenset(__all__) - {
    "QUANTILE", "OUTLIER_FENCE_ON", "ZSCORE_FORMS", "agreement_score", "pot_threshold"
}


def __getattr__(name: str) -> Any:
    """The detectors and the ensemble, imported when first asked for: ``import
    reveal_lab.detectors`` (and the pipeline, the studies, the CLI that import it) does not
    load scikit-learn until a detector is made."""
    if name not in _ESTIMATORS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from reveal_lab.detectors._base import BaseDetector, FitStats, fit_stats
    from reveal_lab.detectors._ensemble import DetectorEnsemble, EnsembleResult, default_detectors
    from reveal_lab.detectors._fitted import FastForestScorer, FittedDetectors, FlatForest, WindowScorer
    from reveal_lab.detectors._iforest import IsolationForestDetector
    from reveal_lab.detectors._mahalanobis import PCAMahalanobisDetector
    from reveal_lab.detectors._pcarecon import PCAReconstructionDetector
    from reveal_lab.detectors._zscore import ZScoreDetector

    loaded = {
        "BaseDetector": BaseDetector,
        "FitStats": FitStats,
        "fit_stats": fit_stats,
        "DetectorEnsemble": DetectorEnsemble,
        "EnsembleResult": EnsembleResult,
        "default_detectors": default_detectors,
        "FastForestScorer": FastForestScorer,
        "FittedDetectors": FittedDetectors,
        "FlatForest": FlatForest,
        "WindowScorer": WindowScorer,
        "IsolationForestDetector": IsolationForestDetector,
        "PCAMahalanobisDetector": PCAMahalanobisDetector,
        "PCAReconstructionDetector": PCAReconstructionDetector,
        "ZScoreDetector": ZScoreDetector,
    }
    globals().update(loaded)
    return loaded[name]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
