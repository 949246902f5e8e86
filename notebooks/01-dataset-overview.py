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
# Each platform of the data (GPU, CPU hosts) is studied apart, as in the paper: its rows carry
# its `platform`, its figures are `NAME--PLATFORM`; a one-platform dataset gives one section.
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
platform = "each"  # each: every platform apart (one platform: as all); gpu, cpu: one platform's runs; all: every run
workers = 0  # per-run work on a local Dask cluster of this many processes; 0: in this process
scheduler = ""  # per-run work on this Dask scheduler (tcp://HOST:PORT) instead

# %%
import warnings

import polars as pl

from reveal_lab import plots, scale, studies
from reveal_lab.telemetry import TelemetryWarning

# loader warnings are kept on each run (n_warnings below); do not repeat them here
warnings.simplefilter("ignore", TelemetryWarning)

# each platform of the data studied apart (one platform: every run together), a map + reduce each
sections = scale.section_refs(data, platform, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                              max_runs=max_runs)
parts, skipped = {}, [scale.dataset_problems(data)]  # files no study can use: damaged, or named by meta_*.csv
for section, refs in sections.items():
    mapped = scale.map_runs(studies.overview_piece, refs, max_samples_per_run, max_seconds=max_seconds,
                            workers=workers, scheduler=scheduler, desc=f"01 overview ({section})")
    skipped.append(mapped.skipped)
    parts[section] = studies.reduce_overview(mapped.pieces)
    print(studies.runs_used(section, len(mapped.run_ids), len(refs), "every selected run"),
          f"({scale.engine_label(workers, scheduler)}), {mapped.skipped.height} skipped")
scale.record_skipped(out_dir, "01-dataset-overview", pl.concat(skipped))
overview = studies.by_platform({s: o for s, (o, _) in parts.items()})
studies.save_table(overview, out_dir, "dataset_runs")
overview.group_by("workload").len().sort("workload")

# %%
summary = studies.by_platform({s: studies.usage_summary(samples) for s, (_, samples) in parts.items()})
studies.save_table(summary, out_dir, "usage_summary")
summary

# %%
for section, (_, samples) in parts.items():
    fig = plots.plot_usage_cdfs(samples, studies.usage_labels())
    plots.save_figure(fig, out_dir, studies.section_figure(out_dir, "usage_cdfs", section, sections))
    display(fig)  # noqa: F821 - IPython's
