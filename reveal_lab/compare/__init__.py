"""Remediation comparison: anomalous-window shares and throughput of two run sets, with
bootstrap intervals over runs (``reveal-lab compare A... --vs B...``)."""

from reveal_lab.compare._compare import (
    COMPARE_COLUMNS,
    Comparison,
    RunSpec,
    bootstrap_compare,
    case_study_runs,
    combine_cases,
    compare_cases,
    compare_runs,
    resolve_runs,
    run_shares,
    table_markdown,
)

__all__ = [
    "COMPARE_COLUMNS",
    "Comparison",
    "RunSpec",
    "bootstrap_compare",
    "case_study_runs",
    "combine_cases",
    "compare_cases",
    "compare_runs",
    "resolve_runs",
    "run_shares",
    "table_markdown",
]
