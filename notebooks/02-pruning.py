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
# # 02 · Correlation pruning (§4.1, Fig. 4)
#
# Per workload, metrics whose mean correlation over the workload's runs reaches the
# threshold are clustered; one representative per cluster is kept (most interpretable
# first, then the largest variance), and the union over workloads is the diagnostic
# space. Fig. 4 shows, against the threshold, the share of metrics kept and how well the
# kept metrics explain the pruned ones (`reveal_lab.pruning.pruning_curve`).

# %% tags=["parameters"]
data = ""  # dataset folder; empty: the bundled data/lab; synth: seeded synthetic runs
out_dir = "../out/lab"
smoke = False
workloads = ""  # comma-separated workload names; empty: all
max_runs_per_workload = 0  # 0: all runs of each workload
max_runs = 0  # total runs, taking the workloads in turn; 0: all
max_seconds = 0.0
thresholds = "0.3,0.4,0.5,0.6,0.7,0.8,0.9,0.95"
threshold = 0.5  # the threshold of the diagnostic space (the paper: 0.5)
method = "complete"  # complete linkage, or connected components
platform = "all"  # gpu, cpu: one platform's runs; all: every run
workers = 0  # per-run work on a local Dask cluster of this many processes; 0: in this process
scheduler = ""  # per-run work on this Dask scheduler (tcp://HOST:PORT) instead

# %%
import warnings

import polars as pl

from pathlib import Path

from reveal_lab import pipeline, plots, pruning, scale, studies
from reveal_lab.telemetry import TelemetryWarning

warnings.simplefilter("ignore", TelemetryWarning)  # kept on each run (see 01)

# per run and host: the correlation matrix and variances of its metrics, as recorded and as the
# pruned space is fitted (trimmed, derived metrics added); summed per workload
refs = scale.study_refs(data, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                        max_runs=max_runs, platform=platform)
mapped = scale.map_runs(studies.pruning_piece, refs, max_seconds=max_seconds, workers=workers,
                        scheduler=scheduler, desc="02 pruning")
scale.record_skipped(out_dir, "02-pruning", mapped.skipped)
result, space = studies.reduce_pruning(mapped.pieces, threshold, method=method)
print(f"{len(mapped.run_ids)} runs ({scale.engine_label(workers, scheduler)}), "
      f"{mapped.skipped.height} skipped")
curve = pruning.pruning_curve({}, [float(t) for t in studies.parse_list(thresholds)], method=method,
                              spaces=result.spaces)
studies.save_table(curve, out_dir, "fig4_pruning_curve")
curve.filter(pl.col("workload") == "all") if "all" in curve["workload"] else curve

# %%
fig = plots.plot_pruning_curve(curve)
plots.save_figure(fig, out_dir, "fig4_pruning_curve")
fig

# %%
kept = (result.clusters.filter(pl.col("is_representative"))
        .group_by("key", "subsystem").agg(pl.col("workload").n_unique().alias("n_workloads"))
        .sort("subsystem", "n_workloads", "key", descending=[False, True, False]))
studies.save_table(kept, out_dir, "pruning_selected")
studies.save_table(studies.correlation_groups(result.spaces), out_dir, "pruning_correlation_groups")
f"threshold {threshold}: {len(result.union)} metrics in the diagnostic space"

# %% [markdown]
# The diagnostic space every later study scores (03-09): pruned at `threshold` on the
# fault-free runs only, each trimmed to its workload span and with its derived metrics,
# saved as `pruning.json` in the output folder with its parameters.

# %%
pipeline.save_pruning(space, Path(out_dir) / "pruning.json")
f"pruning.json: {len(space.selected)} metrics, fitted on {len(space.params['fitted_on'])} fault-free runs"
