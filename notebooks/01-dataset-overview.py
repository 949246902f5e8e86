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
# # 01 · Dataset overview: runs and CDFs of key resource usage
#
# Which runs the studies see, and how busy the machines were: CDFs of CPU busy,
# memory utilization, network bytes and GPU utilization (where GPUs are present).
# Parameters are scalars; `reveal-lab reproduce` sets them from `notebooks/manifest.yml`.

# %% tags=["parameters"]
data = ""  # dataset folder; empty: the bundled data/lab; synth: seeded synthetic runs
out_dir = "../out/lab"  # figures/ and tables/ are written below this folder
smoke = False  # a tiny, fast subset
workloads = ""  # comma-separated workload names; empty: all
max_runs_per_workload = 0  # 0: all runs of each workload
max_runs = 0  # total runs, taking the workloads in turn; 0: all
max_seconds = 0.0  # crop each run to its first seconds; 0: whole runs
max_samples_per_run = 2000  # samples per run and quantity entering the CDFs
platform = "all"  # gpu, cpu: one platform's runs; all: every run
workers = 0  # per-run work on a local Dask cluster of this many processes; 0: in this process
scheduler = ""  # per-run work on this Dask scheduler (tcp://HOST:PORT) instead

# %%
import warnings

import polars as pl

from reveal_lab import plots, scale, studies
from reveal_lab.telemetry import TelemetryWarning

# loader warnings are kept on each run (n_warnings below); do not repeat them here
warnings.simplefilter("ignore", TelemetryWarning)

refs = scale.study_refs(data, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                        max_runs=max_runs, platform=platform)
mapped = scale.map_runs(studies.overview_piece, refs, max_samples_per_run, max_seconds=max_seconds,
                        workers=workers, scheduler=scheduler, desc="01 overview")
problems = scale.dataset_problems(data)  # files no study can use: damaged, or named by meta_*.csv but absent
scale.record_skipped(out_dir, "01-dataset-overview", pl.concat([problems, mapped.skipped]))
overview, samples = studies.reduce_overview(mapped.pieces)
studies.save_table(overview, out_dir, "dataset_runs")
print(f"{len(mapped.run_ids)} runs ({scale.engine_label(workers, scheduler)}), "
      f"{mapped.skipped.height} skipped")
overview.group_by("workload").len().sort("workload")

# %%
summary = studies.usage_summary(samples)
studies.save_table(summary, out_dir, "usage_summary")
summary

# %%
fig = plots.plot_usage_cdfs(samples, studies.usage_labels())
plots.save_figure(fig, out_dir, "usage_cdfs")
fig
