"""Scoring detections against ground-truth fault labels (the lab dataset's ``labels.csv``).

:func:`evaluate_dataset` runs the pipeline over a labelled dataset and returns an
:class:`Evaluation` (windows, episodes, the per-fault-type table); the scoring functions
(:func:`score_episodes`, :func:`summarize`, :func:`false_alarms`) work on any frames of
windows and labels.
"""

from reveal_lab.evaluation._evaluate import (
    FIT_MODES,
    Evaluation,
    crosshost_episodes,
    detection_windows,
    evaluate_dataset,
    table_markdown,
)
from reveal_lab.evaluation._json import JSON_FIELDS, evaluation_json, write_evaluation_json
from reveal_lab.evaluation._score import (
    EPISODE_COLUMNS,
    TABLE_COLUMNS,
    false_alarms,
    persistent,
    score_episodes,
    summarize,
)

__all__ = [
    "EPISODE_COLUMNS",
    "JSON_FIELDS",
    "evaluation_json",
    "write_evaluation_json",
    "FIT_MODES",
    "TABLE_COLUMNS",
    "crosshost_episodes",
    "Evaluation",
    "detection_windows",
    "evaluate_dataset",
    "false_alarms",
    "persistent",
    "score_episodes",
    "summarize",
    "table_markdown",
]
