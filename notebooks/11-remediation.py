# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (reveal-lab)
#     language: python
#     name: reveal-lab
# ---

# %% [markdown]
# # 11 · Remediation: before/after case studies
#
# The paper judges a fix by how much less often the telemetry looks anomalous and how much
# faster the job runs ("Busy % anomalies −59 %, 3.1 % faster"). For each case study of the
# lab dataset, side A is the healthy configuration (fault-free DDP runs: every host's network
# processing on its own core, one thread per rank, no loss) and side B the faulty one
# (IRQ/softirq imbalance, a host with 4 threads, packet loss); `reveal_lab.compare.compare_runs`
# gives per subsystem and per metric the share of anomalous windows on each side and the
# throughput, with bootstrap intervals over runs. A dataset without the v2 `case` column (the
# v1 data) falls back to its fault-free DDP runs against its packet-loss and CPU-quota runs.

# %% tags=["parameters"]
data = ""  # dataset folder; empty: the bundled data/lab
out_dir = "../out/lab"
smoke = False
before = "ddp:before"  # meta_lab.csv `case` of side A
cases = "irq:after;threads:after;loss:after"  # `case` of each side B, ';'-separated
fallback_model = "DDPCNN"  # data without such cases (v1): this model's fault-free runs are side A ...
fallback_faults = "packet_loss;config_cpu_quota"  # ... and its runs whose `fault` starts with each, side B
reference = "a"  # a: fit on side A's runs; self: each run on itself
preset = "paper"
n_boot = 2000
max_runs_per_side = 0  # 0: all runs of each side

# %%
import polars as pl

from reveal_lab import plots, studies
from reveal_lab.compare import case_study_runs, combine_cases, compare_cases

root = studies.resolve_data(data)
pairs = case_study_runs(
    root,
    before=f"case={before}",
    after=[f"case={c}" for c in cases.split(";") if c],
    fallback_before=f"model={fallback_model},fault=none",
    fallback_after=[f"fault^={f}" for f in fallback_faults.split(";") if f],
    max_runs_per_side=max_runs_per_side,
)
# side A's runs are scored once for every case
comparisons = compare_cases(pairs, reference=reference, preset=preset, n_boot=n_boot, a_label=before)
table = combine_cases(comparisons)
summary = table.filter(pl.col("level").is_in(["any", "subsystem", "throughput"]))
studies.save_table(table, out_dir, "remediation_details")
studies.save_table(summary, out_dir, "remediation_cases")
fig_table = summary.with_columns(name=pl.col("case") + ": " + pl.col("name")).drop("case")
fig = plots.plot_comparison(fig_table, title=f"side A: {before if pairs else 'no case-study runs'}")
plots.save_figure(fig, out_dir, "remediation")
summary
