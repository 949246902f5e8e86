"""Figures of the paper's studies: one function per figure, each returning a
matplotlib :class:`~matplotlib.figure.Figure` in one house style
(:func:`reveal_lab.plots.style`); :func:`save_figure` writes PNG and PDF."""

from reveal_lab.plots._compare import plot_comparison
from reveal_lab.plots._figures import (
    plot_causes_per_window,
    plot_collector_overhead,
    plot_crosshost_deviation,
    plot_detector_windows,
    plot_dtw_distances,
    plot_granularity_timelines,
    plot_message,
    plot_overhead_comparison,
    plot_projection,
    plot_pruning_curve,
    plot_raw_traces,
    plot_usage_cdfs,
)
from reveal_lab.plots._timelines import (
    EPISODE_COLOR,
    plot_evidence_traces,
    plot_flag_timelines,
    plot_score_timeline,
)
from reveal_lab.plots._style import (
    CONTENT_KEY,
    METHOD_COLORS,
    STYLE,
    SUBSYSTEM_COLORS,
    color_for,
    figure_content,
    mark_empty,
    new_figure,
    save_figure,
    style,
)

__all__ = [
    "CONTENT_KEY",
    "figure_content",
    "mark_empty",
    "STYLE",
    "SUBSYSTEM_COLORS",
    "METHOD_COLORS",
    "style",
    "new_figure",
    "save_figure",
    "color_for",
    "plot_usage_cdfs",
    "plot_pruning_curve",
    "plot_detector_windows",
    "plot_causes_per_window",
    "plot_collector_overhead",
    "plot_granularity_timelines",
    "plot_raw_traces",
    "plot_crosshost_deviation",
    "plot_projection",
    "plot_dtw_distances",
    "plot_message",
    "plot_comparison",
    "plot_overhead_comparison",
    "plot_flag_timelines",
    "plot_score_timeline",
    "plot_evidence_traces",
    "EPISODE_COLOR",
]
