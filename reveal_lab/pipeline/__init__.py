"""The detection pipeline: a run's telemetry in, scored and explained windows out.

Around the detectors, the paper's method (:mod:`reveal_lab.pipeline._method`): the
trimming rule (:func:`trim_run`), the pruned metric space fitted on fault-free runs and
saved for reuse (:func:`fit_pruning`, :func:`save_pruning`, :func:`load_pruning`) and the
threshold modes (:data:`THRESHOLD_MODES`, :func:`robust_threshold`). Which windows are
anomalous is decided by one frozen :class:`DetectionPolicy` (:data:`POLICIES`: ``paper``,
``default``), resolved per run (:meth:`DetectionPolicy.resolve`).
"""

from reveal_lab.pipeline._baseline_check import MIN_BASELINE_OVERLAP, BaselineMismatch, check_baseline
from reveal_lab.pipeline._cache import CACHE_ENV, cache_dir, cache_stats, memoize, using_cache
from reveal_lab.pipeline._detect import detect_many, detect_run
from reveal_lab.pipeline._method import (
    Pruning,
    Trim,
    TrimRule,
    resolve_trim,
    trim_arguments,
    active_span,
    fit_pruning,
    pruning_frame,
    pruning_of,
    load_pruning,
    recorded_span,
    robust_threshold,
    spike_windows,
    save_pruning,
    trim_run,
)
from reveal_lab.pipeline._policy import (
    CALIBRATION_RULES,
    POLICIES,
    SOURCES,
    THRESHOLD_MODES,
    TRIM_RULES,
    DetectionPolicy,
    ResolvedPolicy,
    default_min_run,
    get_policy,
    past_a_spike,
    run_source,
    threshold_mode,
)
from reveal_lab.pipeline._result import ANOMALIES_COLUMNS, Detection
from reveal_lab.pipeline._sentinel import (
    SENTINEL_COLUMNS,
    SENTINEL_MIN_SAMPLES,
    SENTINEL_WINDOW_SCHEMA,
    moved_samples,
    per_interval_counts,
    sentinel_evidence,
    sentinel_counters,
    sentinel_windows,
    silent_columns,
    silent_counters,
    silent_indices,
)
from reveal_lab.pipeline._episodes import (
    EPISODE_GAP_S,
    EPISODE_SCHEMA,
    SLOW_FACTOR,
    episode_pace,
    episodes_of,
    unexplained_slowdowns,
    what_moved,
)
from reveal_lab.pipeline._score import RELATIVE_FLOOR, family_groups, family_threshold, unit_floors
from reveal_lab.pipeline._startup import StartUp, collector_startup, without_startup
from reveal_lab.pipeline._view import detection_view, select_metrics
from reveal_lab.numeric import sustained

__all__ = [
    "RELATIVE_FLOOR",
    "family_groups",
    "family_threshold",
    "unit_floors",
    "EPISODE_GAP_S",
    "EPISODE_SCHEMA",
    "SLOW_FACTOR",
    "episode_pace",
    "episodes_of",
    "unexplained_slowdowns",
    "what_moved",
    "StartUp",
    "collector_startup",
    "without_startup",
    "CACHE_ENV",
    "cache_dir",
    "cache_stats",
    "memoize",
    "using_cache",
    "DetectionPolicy",
    "ResolvedPolicy",
    "POLICIES",
    "get_policy",
    "SOURCES",
    "TRIM_RULES",
    "run_source",
    "moved_samples",
    "Detection",
    "detect_run",
    "detect_many",
    "default_min_run",
    "past_a_spike",
    "detection_view",
    "select_metrics",
    "ANOMALIES_COLUMNS",
    "BaselineMismatch",
    "MIN_BASELINE_OVERLAP",
    "check_baseline",
    "THRESHOLD_MODES",
    "threshold_mode",
    "CALIBRATION_RULES",
    "Pruning",
    "Trim",
    "TrimRule",
    "resolve_trim",
    "trim_arguments",
    "active_span",
    "fit_pruning",
    "pruning_frame",
    "pruning_of",
    "load_pruning",
    "recorded_span",
    "robust_threshold",
    "spike_windows",
    "sustained",
    "save_pruning",
    "trim_run",
    "SENTINEL_COLUMNS",
    "sentinel_counters",
    "sentinel_windows",
    "silent_indices",
    "sentinel_evidence",
    "per_interval_counts",
    "SENTINEL_MIN_SAMPLES",
    "SENTINEL_WINDOW_SCHEMA",
    "silent_columns",
    "silent_counters",
]
