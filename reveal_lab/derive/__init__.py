"""Derived metrics (paper Appendix B) and the single-host detection view.

* :func:`add_derived`: cumulative counters → per-interval ``_diff`` columns; IPC,
  branch-miss rate, cache-miss ratio, L3-stall ratio (``Derived:`` source);
  CPU, memory and network utilizations where their inputs exist.
* :func:`detection_view`: leaves static, all-missing and constant columns out of
  single-host detection and says which and why.
"""

from reveal_lab.derive._cores import FOLDS, PER_CORE_SOURCES, CoreFamily, core_families, fold_cores, folded_family, with_cores
from reveal_lab.derive._derive import (
    CONSTANT_REASON,
    CUMULATIVE_SOURCES,
    DERIVED_SOURCE,
    DerivedPlan,
    add_derived,
    derive_plan,
    detection_view,
    is_cumulative,
    plan_derived,
)

__all__ = [
    "FOLDS",
    "PER_CORE_SOURCES",
    "CoreFamily",
    "core_families",
    "fold_cores",
    "folded_family",
    "with_cores",
    "DerivedPlan",
    "plan_derived",
    "CONSTANT_REASON",
    "CUMULATIVE_SOURCES",
    "DERIVED_SOURCE",
    "add_derived",
    "derive_plan",
    "detection_view",
    "is_cumulative",
]
