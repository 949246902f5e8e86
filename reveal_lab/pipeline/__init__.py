"""The detection pipeline: a run's telemetry in, scored and explained windows out."""

from reveal_lab.pipeline._baseline_check import MIN_BASELINE_OVERLAP, BaselineMismatch, check_baseline
from reveal_lab.pipeline._detect import ANOMALIES_COLUMNS, Detection, detect_many, detect_run, detection_view

__all__ = [
    "Detection",
    "detect_run",
    "detect_many",
    "detection_view",
    "ANOMALIES_COLUMNS",
    "BaselineMismatch",
    "MIN_BASELINE_OVERLAP",
    "check_baseline",
]
