"""Cross-host deviation: each host against the cluster baseline, static metrics included
(the paper's HugePages case study), and against the job's fault-free runs
(:func:`baseline_deviation`: hosts whose roles differ are not flagged for their role)."""

from reveal_lab.crosshost._deviation import (
    BASELINE_COLUMNS,
    DEVIATION_SCHEMA,
    baseline_deviation,
    deviation,
    judge_deviation,
)
from reveal_lab.crosshost._views import own_core_view

__all__ = ["own_core_view", "deviation", "DEVIATION_SCHEMA", "baseline_deviation", "judge_deviation", "BASELINE_COLUMNS"]
