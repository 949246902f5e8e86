"""The detection pipeline: a run's telemetry in, scored and explained windows out.

Around the detectors, the paper's method: the trimming rule (:mod:`~reveal_lab.pipeline._trim`,
:func:`trim_run`), the pruned metric space fitted on fault-free runs and saved for reuse
(:mod:`~reveal_lab.pipeline._pruning`: :func:`fit_pruning`, :func:`save_pruning`,
:func:`load_pruning`), the threshold modes (:data:`THRESHOLD_MODES`; a run alone:
:func:`robust_threshold`, :mod:`~reveal_lab.pipeline._robust`) and the reach of one spike
(:func:`spike_windows`, :mod:`~reveal_lab.pipeline._spikes`). Which windows are
anomalous is decided by one frozen :class:`DetectionPolicy` (:data:`POLICIES`: ``paper``,
``default``), resolved per run (:meth:`DetectionPolicy.resolve`).
"""

from reveal_lab.pipeline._baseline_check import (
    MIN_BASELINE_OVERLAP,
    BaselineMismatch,
    check_baseline,
    check_metric_overlap,
)
from reveal_lab.pipeline._cache import (
    CACHE_ENV,
    LOOKUPS,
    NOTEBOOK_ENV,
    append_line,
    cache_dir,
    cache_stats,
    lookup_counts,
    memoize,
    read_lines,
    using_cache,
)
from reveal_lab.pipeline._detect import detect_many, detect_run
from reveal_lab.pipeline._pruning import (
    Pruning,
    fit_pruning,
    load_pruning,
    pruning_frame,
    pruning_of,
    save_pruning,
)
from reveal_lab.pipeline._robust import robust_threshold
from reveal_lab.pipeline._spikes import spike_windows
from reveal_lab.pipeline._trim import (
    TRIM_RULES,
    Trim,
    TrimRule,
    active_span,
    recorded_span,
    resolve_trim,
    run_source,
    trim_arguments,
    trim_run,
)
from reveal_lab.pipeline._policy import (
    CALIBRATION_RULES,
    POLICIES,
    SOURCES,
    THRESHOLD_MODES,
    DetectionPolicy,
    ResolvedPolicy,
    default_min_run,
    get_policy,
    past_a_spike,
    threshold_mode,
)
from reveal_lab.pipeline._result import ANOMALIES_COLUMNS, Detection
from reveal_lab.pipeline._sentinel import (
    LONE_ACTIVE_SHARE,
    LONE_QUIET_SHARE,
    SENTINEL_COLUMNS,
    SENTINEL_MIN_SAMPLES,
    SENTINEL_WINDOW_SCHEMA,
    lone_candidate,
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
from reveal_lab.pipeline._view import detection_view, fitted_space, select_metrics
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
    "lookup_counts",
    "append_line",
    "read_lines",
    "LOOKUPS",
    "NOTEBOOK_ENV",
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
    "LONE_QUIET_SHARE",
    "LONE_ACTIVE_SHARE",
    "lone_candidate",
    "Detection",
    "detect_run",
    "detect_many",
    "default_min_run",
    "past_a_spike",
    "detection_view",
    "fitted_space",
    "select_metrics",
    "ANOMALIES_COLUMNS",
    "BaselineMismatch",
    "MIN_BASELINE_OVERLAP",
    "check_baseline",
    "check_metric_overlap",
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
