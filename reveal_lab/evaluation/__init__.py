"""Scoring detections against ground-truth fault labels (the lab dataset's ``labels.csv``).

:func:`evaluate_dataset` runs the pipeline over a labelled dataset and returns an
:class:`Evaluation` (windows, episodes, the per-fault-type table); the scoring functions
(:func:`score_episodes`, :func:`summarize`, :func:`false_alarms`) work on any frames of
windows and labels.
"""

from reveal_lab.evaluation._crosshost import crosshost_deviations, crosshost_episodes, crosshost_false_alarms
from reveal_lab.evaluation._evaluate import (
    COMPARISON_COLUMNS,
    FIT_MODES,
    Evaluation,
    compare_spaces,
    detection_windows,
    evaluate_dataset,
    fault_free_refs,
    recall_at_false_alarms,
    table_markdown,
    write_comparison,
)
from reveal_lab.evaluation._evidence import (
    EVIDENCE_COLUMNS,
    episode_evidence,
    evidence_summary,
    span_envelope,
)
from reveal_lab.evaluation._json import JSON_FIELDS, evaluation_json, write_evaluation_json
from reveal_lab.evaluation._score import (
    EPISODE_COLUMNS,
    OVERALL_BY_METHOD,
    OVERALL_DETECTORS_ONLY,
    TABLE_COLUMNS,
    false_alarms,
    persistent,
    score_episodes,
    summarize,
)

__all__ = [
    "EVIDENCE_COLUMNS",
    "episode_evidence",
    "evidence_summary",
    "span_envelope",
    "COMPARISON_COLUMNS",
    "compare_spaces",
    "recall_at_false_alarms",
    "write_comparison",
    "EPISODE_COLUMNS",
    "OVERALL_BY_METHOD",
    "OVERALL_DETECTORS_ONLY",
    "JSON_FIELDS",
    "evaluation_json",
    "write_evaluation_json",
    "FIT_MODES",
    "TABLE_COLUMNS",
    "crosshost_episodes",
    "crosshost_deviations",
    "crosshost_false_alarms",
    "Evaluation",
    "detection_windows",
    "evaluate_dataset",
    "fault_free_refs",
    "false_alarms",
    "persistent",
    "score_episodes",
    "summarize",
    "table_markdown",
]
