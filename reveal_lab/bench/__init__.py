"""Benchmarks on labelled external data: readers, metrics, the labelled-server bench
and its separate scorer."""

from reveal_lab.bench._data import (
    InterpretationSegment,
    LabelledServer,
    label_runs,
    list_servers,
    load_server,
    read_interpretation_labels,
    read_matrix,
    read_point_labels,
    server_family,
)
from reveal_lab.bench._metrics import (
    average_precision,
    best_f1,
    best_f1_point_adjusted,
    decision_f1,
    hit_rate,
    ndcg,
    point_adjust_decisions,
    point_adjust_scores,
    random_hit_rate,
    random_ndcg,
    top_k,
)
from reveal_lab.bench._labelled import LabelledConfig, run_labelled
from reveal_lab.bench._score import format_server_table, format_table, score_folder, score_server

__all__ = [
    "LabelledConfig",
    "run_labelled",
    "format_server_table",
    "format_table",
    "score_folder",
    "score_server",
    "InterpretationSegment",
    "LabelledServer",
    "label_runs",
    "list_servers",
    "load_server",
    "read_interpretation_labels",
    "read_matrix",
    "read_point_labels",
    "server_family",
    "average_precision",
    "best_f1",
    "best_f1_point_adjusted",
    "decision_f1",
    "hit_rate",
    "ndcg",
    "point_adjust_decisions",
    "point_adjust_scores",
    "random_hit_rate",
    "random_ndcg",
    "top_k",
]
