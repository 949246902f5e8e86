"""Correlation-based metric pruning (paper §4.1).

:func:`prune` keeps one representative per cluster of correlated metrics per
workload (priority table, then variance; ``method="pairwise"``: the paper's pairwise
rule, ties by the variance of the correlations) and returns the union over workloads,
the diagnostic space; :func:`pruning_curve` gives the Fig. 4 curves against the
threshold.
"""

from reveal_lab.pruning._prune import (
    CLUSTER_METHODS,
    MetricSpace,
    PruneResult,
    correlation_matrix,
    correlation_variance,
    metric_space,
    pairwise_keep,
    prune,
    prune_spaces,
    RunCorrelation,
    run_correlation,
    run_correlations,
    SpaceAccumulator,
    pruning_curve,
)

__all__ = [
    "CLUSTER_METHODS",
    "MetricSpace",
    "PruneResult",
    "correlation_matrix",
    "correlation_variance",
    "metric_space",
    "pairwise_keep",
    "prune",
    "prune_spaces",
    "RunCorrelation",
    "run_correlation",
    "run_correlations",
    "SpaceAccumulator",
    "pruning_curve",
]
