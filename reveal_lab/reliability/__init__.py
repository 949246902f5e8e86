"""Reliability at cluster scale (Kokolis et al., HPCA 2025, arXiv 2410.21680): MTTF of a
job against its size, the expected effective training time ratio (ETTR) and the optimal
checkpoint interval in closed form, a vectorised Monte-Carlo simulator of checkpointed
jobs, lemon hosts ranked from our own telemetry, and the paper's quoted scenarios
against ours (:func:`paper_claims`)."""

from reveal_lab.reliability._lemon import (
    LEMON_COLUMNS,
    flag_hosts,
    host_run_table,
    lab_lemon_hosts,
    lemon_hosts,
    mttf_without_host,
    scan_lemon_hosts,
    wilson_interval,
)
from reveal_lab.reliability._model import (
    FAILURE_RATES,
    GPUS_PER_NODE,
    expected_ettr,
    job_failure_rate,
    mttf_hours,
    optimal_interval,
    renewal_ettr,
    resolve_failure_rate,
)
from reveal_lab.reliability._claims import (
    CLAIM_KEYS,
    MEASURED_MTTF,
    SCENARIOS,
    STATUSES,
    agreement_grid,
    interval_for_target,
    paper_claims,
)
from reveal_lab.reliability._plots import (
    ettr_optima,
    plot_closed_vs_simulated,
    plot_ettr_vs_interval,
    plot_lemon_hosts,
    plot_mttf_scaling,
)
from reveal_lab.reliability._simulate import SimulationResult, simulate_ettr

__all__ = [
    "FAILURE_RATES",
    "GPUS_PER_NODE",
    "resolve_failure_rate",
    "job_failure_rate",
    "mttf_hours",
    "expected_ettr",
    "renewal_ettr",
    "optimal_interval",
    "SimulationResult",
    "simulate_ettr",
    "SCENARIOS",
    "MEASURED_MTTF",
    "CLAIM_KEYS",
    "STATUSES",
    "agreement_grid",
    "interval_for_target",
    "paper_claims",
    "LEMON_COLUMNS",
    "wilson_interval",
    "host_run_table",
    "flag_hosts",
    "lemon_hosts",
    "scan_lemon_hosts",
    "mttf_without_host",
    "lab_lemon_hosts",
    "ettr_optima",
    "plot_mttf_scaling",
    "plot_ettr_vs_interval",
    "plot_closed_vs_simulated",
    "plot_lemon_hosts",
]
