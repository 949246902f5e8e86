"""The paper's studies as plain functions over runs, windows and detections.

* :mod:`~reveal_lab.studies._dtw`: DTW reproducibility (§5.4);
* :mod:`~reveal_lab.studies._granularity` and ``_intervals``: window granularity (§5.5, Table 2, Fig. 6);
* :mod:`~reveal_lab.studies._detection`: detector runs (Fig. 2, 3, Table 4) and raw traces (Fig. 7/8);
* :mod:`~reveal_lab.studies._claims`: the paper's claims beside ours (``paper_vs_reproduced.csv``);
* :mod:`~reveal_lab.studies._paper_tables`: Table 4 as the paper's, §5.6 evidence shares, Fig. 2's flags;
* :mod:`~reveal_lab.studies._usage`: CDFs of key resource usage;
* :mod:`~reveal_lab.studies._projections`: UMAP / t-SNE of window features;
* :mod:`~reveal_lab.studies._overhead`, ``_pruning``, ``_crosshost``: Fig. 5, Fig. 4, Fig. 9;
* :mod:`~reveal_lab.studies._case_studies`: the lab dataset's case studies.
"""

from reveal_lab.crosshost import own_core_view  # re-exported: the studies' own-core view
from reveal_lab.studies._case_studies import (
    crosshost_study,
    packet_loss_study,
    packet_loss_summary,
    storage_burst_example,
)
from reveal_lab.studies._claim_tables import (
    ANOMALOUS_TIME_COLUMNS,
    PAPER_GROUPS,
    anomalous_time,
    correlation_groups,
    metric_family,
)
from reveal_lab.studies._claims import (
    CLAIM_COLUMNS,
    CLAIM_KINDS,
    CLAIM_STATUSES,
    CLAIMS,
    SETTING_COLUMNS,
    Claim,
    ClaimContext,
    Reading,
    claim_counts,
    claim_status,
    counts_line,
    dataset_machine,
    paper_vs_reproduced,
    write_paper_vs_reproduced,
)
from reveal_lab.studies._settings import SETTINGS, policy_table, setting_arguments
from reveal_lab.studies._crosshost import crosshost_subsystem
from reveal_lab.studies._data import (
    crop_run,
    iter_study_runs,
    load_study_runs,
    parse_list,
    resolve_data,
    run_table,
    select_runs,
    synthetic_runs,
)
from reveal_lab.studies._detection import (
    baseline_runs,
    causes_per_window,
    dataset_episodes,
    is_fault_free,
    study_pruning,
    detection_summary,
    detector_window_counts,
    method_list,
    run_detection,
    top_windows,
    traces_around,
    window_flags,
)
from reveal_lab.studies._dtw import (
    DTWStudy,
    collect_traces,
    dtw_distance,
    dtw_reproducibility,
    dtw_to_median,
    median_trace,
    one_sided_test,
    resample,
    signed_rank_test,
    znormalize,
)
from reveal_lab.studies._granularity import (
    GRANULARITIES,
    detect_windows,
    detection_windows,
    granularity_comparison,
    granularity_intervals,
    granularity_label,
    granularity_table,
)
from reveal_lab.studies._intervals import (
    as_intervals,
    hit_rate_count,
    hit_rate_length,
    intersection_length,
    interval_iou,
    merge_intervals,
    merge_windows,
    total_length,
    union_length,
)
from reveal_lab.studies._measure import (
    OVERHEAD_COLUMNS,
    RUNTIME_COLUMNS,
    machine_info,
    machine_label,
    measure_collector_overhead,
    measure_runtimes,
    overhead_comparison,
)
from reveal_lab.studies._output import save_table, study_dirs, to_markdown
from reveal_lab.studies._overhead import OVERHEAD_RESULTS, collector_bytes_table, collector_overhead_table
from reveal_lab.studies._paper_tables import evidence_by_subsystem, flag_timelines, labelled_episodes, paper_table4
from reveal_lab.studies._projections import project, window_feature_table
from reveal_lab.studies._usage import USAGE_QUANTITIES, ecdf, usage_labels, usage_columns, usage_samples, usage_summary

__all__ = [
    "crosshost_study",
    "own_core_view",
    "packet_loss_study",
    "packet_loss_summary",
    "storage_burst_example",
    "ANOMALOUS_TIME_COLUMNS",
    "PAPER_GROUPS",
    "anomalous_time",
    "correlation_groups",
    "metric_family",
    "CLAIM_COLUMNS",
    "CLAIM_KINDS",
    "CLAIM_STATUSES",
    "CLAIMS",
    "SETTING_COLUMNS",
    "Claim",
    "ClaimContext",
    "Reading",
    "claim_counts",
    "claim_status",
    "counts_line",
    "dataset_machine",
    "paper_vs_reproduced",
    "write_paper_vs_reproduced",
    "SETTINGS",
    "policy_table",
    "setting_arguments",
    "evidence_by_subsystem",
    "OVERHEAD_COLUMNS",
    "RUNTIME_COLUMNS",
    "machine_info",
    "machine_label",
    "measure_collector_overhead",
    "measure_runtimes",
    "overhead_comparison",
    "flag_timelines",
    "labelled_episodes",
    "paper_table4",
    "OVERHEAD_RESULTS",
    "collector_bytes_table",
    "collector_overhead_table",
    "crosshost_subsystem",
    "resolve_data",
    "run_table",
    "select_runs",
    "iter_study_runs",
    "load_study_runs",
    "crop_run",
    "synthetic_runs",
    "parse_list",
    "run_detection",
    "baseline_runs",
    "is_fault_free",
    "study_pruning",
    "window_flags",
    "dataset_episodes",
    "method_list",
    "detector_window_counts",
    "causes_per_window",
    "detection_summary",
    "top_windows",
    "traces_around",
    "DTWStudy",
    "collect_traces",
    "dtw_distance",
    "dtw_reproducibility",
    "dtw_to_median",
    "median_trace",
    "resample",
    "signed_rank_test",
    "one_sided_test",
    "znormalize",
    "GRANULARITIES",
    "detect_windows",
    "detection_windows",
    "granularity_comparison",
    "granularity_intervals",
    "granularity_label",
    "granularity_table",
    "as_intervals",
    "hit_rate_count",
    "hit_rate_length",
    "intersection_length",
    "interval_iou",
    "merge_intervals",
    "merge_windows",
    "total_length",
    "union_length",
    "save_table",
    "study_dirs",
    "to_markdown",
    "project",
    "window_feature_table",
    "USAGE_QUANTITIES",
    "usage_labels",
    "ecdf",
    "usage_columns",
    "usage_samples",
    "usage_summary",
]

