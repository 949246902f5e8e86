"""Cross-host deviation: each host against the cluster baseline, static metrics included
(the paper's HugePages case study)."""

from reveal_lab.crosshost._deviation import DEVIATION_SCHEMA, deviation

__all__ = ["deviation", "DEVIATION_SCHEMA"]
