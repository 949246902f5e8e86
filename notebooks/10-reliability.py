# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python (reveal-lab)
#     language: python
#     name: reveal-lab
# ---

# %% [markdown]
# # 10 · Reliability at cluster scale (Kokolis et al., arXiv 2410.21680)
#
# What failures cost a training job at scale: the mean time to failure of a job on N
# nodes, 1/(N·r_f), with the paper's node failure rates (6.50 and 2.34 failures per
# 1,000 node-days on RSC-1 and RSC-2, 8 GPUs per node); the expected effective training
# time ratio (useful training over wall-clock time) under checkpointing,
# E[ETTR] ≈ (1 − N·r_f·(u₀ + Δ/2)) / (1 + w/Δ), and the interval that maximises it;
# a Monte-Carlo simulator of checkpointed jobs to check the closed form; the paper's
# quoted scenarios against ours; and lemon hosts ranked from our own telemetry
# (`reveal_lab.reliability`). The quoted numbers come from the issue; the paper's text
# could not be read here to confirm them (see the `note` column of the last table).

# %% tags=["parameters"]
data = ""  # dataset folder for the lemon-host part; empty: the bundled data/lab
out_dir = "../out/lab"
smoke = False
restart_min = 5.0  # restart overhead u0 of the ETTR curves, minutes
write_s = 30.0  # checkpoint write time w of the ETTR curves, seconds
n_jobs = 20000  # simulated jobs per grid point
work_h = 24.0  # useful training per simulated job, hours
seed = 0
lemon_max_runs = 0  # multi-host runs scored for lemon hosts (0: all)
lemon_preset = "paper"
mttf_gpus = 1024  # job size of the "remove the worst host" projection

# %%
from pathlib import Path

import polars as pl

from reveal_lab import plots, reliability, studies

sizes = (1024, 8192, 16384, 100_000)
mttf = pl.DataFrame({
    "gpus": [g for g, _, _ in reliability.MEASURED_MTTF],
    "paper_hours": [h for _, h, _ in reliability.MEASURED_MTTF],
    "paper_kind": ["measured" if m else "projected" for _, _, m in reliability.MEASURED_MTTF],
}).with_columns(
    pl.Series(f"ours_{c}_hours", [reliability.mttf_hours(g, c) for g, _, _ in reliability.MEASURED_MTTF])
    for c in ("rsc1", "rsc2")
)
studies.save_table(mttf, out_dir, "reliability_mttf")
plots.save_figure(reliability.plot_mttf_scaling(), out_dir, "reliability_mttf_scaling")
mttf

# %% [markdown]
# ETTR against the checkpoint interval for 1k / 8k / 16k / 100k GPUs on both clusters'
# rates: the closed form (solid), the exact value of the simulator's model (dashed) and
# the optimum of the closed form (dot).

# %%
optima = reliability.ettr_optima(sizes, ("rsc1", "rsc2"), restart_min / 60, write_s / 3600)
studies.save_table(optima, out_dir, "reliability_ettr_optima")
fig = reliability.plot_ettr_vs_interval(sizes, ("rsc1", "rsc2"), restart_min / 60, write_s / 3600)
plots.save_figure(fig, out_dir, "reliability_ettr_interval")
optima

# %% [markdown]
# The closed form against the simulator across a grid of job sizes, intervals and
# restart costs (RSC-1, w = 0); the largest relative gap is marked in each regime.

# %%
grid = reliability.agreement_grid(n_jobs=n_jobs, work_h=work_h, seed=seed)
studies.save_table(grid, out_dir, "reliability_closed_vs_simulated")
plots.save_figure(reliability.plot_closed_vs_simulated(grid), out_dir, "reliability_closed_vs_simulated")
grid.group_by("regime").agg(pl.len().alias("points"), pl.col("rel_gap").max().alias("largest_rel_gap"))

# %% [markdown]
# The paper's quoted numbers against ours.

# %%
claims = pl.DataFrame(reliability.paper_claims(n_jobs=n_jobs, seed=seed))
studies.save_table(claims, out_dir, "reliability_paper_vs_ours")
claims.select("claim_id", "paper_value", "ours", "unit", "status")

# %% [markdown]
# Lemon hosts from our telemetry: on the lab dataset's two-host DDP runs, a host is
# flagged in a run when the detectors flag a clearly larger share of its windows than of
# its peer's. With two hosts this is thin evidence: a DDP job runs in lock step, so a
# fault on one host slows (and flags) both, and a dozen runs give 95 % intervals some
# 0.2–0.3 wide. The MTTF projection below assumes node failure rates proportional to
# the lemon share: an illustration of the arithmetic, not a measurement.

# %%
root = Path(str(studies.resolve_data(data)))
if (root / "meta_lab.csv").exists():
    flags, ranking = reliability.lab_lemon_hosts(root, max_runs=lemon_max_runs, preset=lemon_preset)
else:
    flags = pl.DataFrame({"note": [f"{root} has no meta_lab.csv: no multi-host lab runs to rank"]})
    ranking = reliability.lemon_hosts(pl.DataFrame(schema={"run": pl.String, "host": pl.String,
                                                           "flagged": pl.Boolean}))
if ranking.height >= 2:
    m = reliability.mttf_without_host(ranking, mttf_gpus)
    removal = pl.DataFrame([{k: v for k, v in m.items() if k != "mttf_after_ci"}
                            | {"mttf_after_ci_low": m["mttf_after_ci"][0],
                               "mttf_after_ci_high": m["mttf_after_ci"][1]}])
else:
    removal = pl.DataFrame({"note": ["fewer than two ranked hosts: nothing to remove"]})
studies.save_table(flags, out_dir, "reliability_lemon_runs")
studies.save_table(ranking, out_dir, "reliability_lemon_hosts")
studies.save_table(removal, out_dir, "reliability_lemon_mttf")
plots.save_figure(reliability.plot_lemon_hosts(ranking), out_dir, "reliability_lemon_hosts")
ranking
