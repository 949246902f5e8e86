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
platform = "each"  # each: every platform apart (one platform: as all); gpu, cpu: one platform's runs; all: every run
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
# pruned space is fitted (trimmed, derived metrics added); summed per workload. Each platform of the
# data apart (its own channels), a map + reduce each
sections = scale.section_refs(data, platform, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                              max_runs=max_runs)
parts, skipped = {}, []
for section, refs in sections.items():
    fold = studies.PruningFold()  # each run's piece summed into its workload's accumulators as it comes
    mapped = scale.map_runs(studies.pruning_piece, refs, max_seconds=max_seconds, workers=workers,
                            scheduler=scheduler, desc=f"02 pruning ({section})", fold=fold)
    skipped.append(mapped.skipped)
    parts[section] = fold.result(threshold, method=method)
    print(studies.runs_used(section, len(mapped.run_ids), len(refs),
                            "every selected run; the pruned space is fitted on the fault-free ones"),
          f"({scale.engine_label(workers, scheduler)}), {mapped.skipped.height} skipped")
scale.record_skipped(out_dir, "02-pruning", pl.concat(skipped))
curves = {s: pruning.pruning_curve({}, [float(t) for t in studies.parse_list(thresholds)], method=method,
                                   spaces=result.spaces) for s, (result, _) in parts.items()}
curve = studies.by_platform(curves)
studies.save_table(curve, out_dir, "fig4_pruning_curve")
curve.filter(pl.col("workload") == "all") if "all" in curve["workload"] else curve

# %%
for section, c in curves.items():
    fig = plots.plot_pruning_curve(c)
    plots.save_figure(fig, out_dir, studies.section_figure(out_dir, "fig4_pruning_curve", section, sections))
    display(fig)  # noqa: F821 - IPython's

# %%
kept = studies.by_platform({
    s: (result.clusters.filter(pl.col("is_representative"))
        .group_by("key", "subsystem").agg(pl.col("workload").n_unique().alias("n_workloads"))
        .sort("subsystem", "n_workloads", "key", descending=[False, True, False]))
    for s, (result, _) in parts.items()})
studies.save_table(kept, out_dir, "pruning_selected")
studies.save_table(studies.by_platform({s: studies.correlation_groups(result.spaces) for s, (result, _) in
                                        parts.items()}), out_dir, "pruning_correlation_groups")
{s: f"threshold {threshold}: {len(result.union)} metrics in the diagnostic space" for s, (result, _) in
 parts.items()}

# %% [markdown]
# The diagnostic space every later study scores (03-09): pruned at `threshold` on the
# fault-free runs only, each trimmed to its workload span and with its derived metrics,
# saved as `pruning.json` in the output folder with its parameters (one per platform,
# `pruning--PLATFORM.json`, when the data has several: each platform's studies score in its own).

# %%
for section, (_, space) in parts.items():
    pipeline.save_pruning(space, Path(out_dir) / studies.section_file("pruning.json", section, sections))
    print(f"{studies.section_file('pruning.json', section, sections)}: {len(space.selected)} metrics, "
          f"fitted on {len(space.params['fitted_on'])} fault-free runs")
