"""Attribution (paper §4.4): metric–feature pairs behind each detector's decision,
(joint) subsystems, the host, and a claim in words."""

from reveal_lab.attribution._attribute import (
    EVIDENCE_SCHEMA,
    RULES,
    SUBSYSTEM_BY,
    WINDOW_SCHEMA,
    Attribution,
    attribute,
    metric_deviation,
)
from reveal_lab.attribution._words import FEATURE_WORDS, READABLE, claim, format_value, readable_metric

__all__ = [
    "Attribution",
    "attribute",
    "metric_deviation",
    "RULES",
    "SUBSYSTEM_BY",
    "claim",
    "readable_metric",
    "format_value",
    "READABLE",
    "FEATURE_WORDS",
    "EVIDENCE_SCHEMA",
    "WINDOW_SCHEMA",
]
