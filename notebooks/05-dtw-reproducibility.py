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
# # 05 · DTW reproducibility (§5.4)
#
# Are runs of one workload closer to their own workload's median trace than to other
# workloads' median traces? For each workload and metric: z-normalize each run's trace,
# resample it to `length` points, take the DTW distance (exact, dtaidistance's C code,
# optional Sakoe–Chiba radius `band`) of each run to its workload's median trace (leave-one-out)
# and to the median traces of `max_other_workloads` other workloads (one seeded sample per platform,
# so that a run's cost does not grow with the number of workloads: a departure from §5.4, see
# docs/METHOD.md; the `n_others` column of `dtw_pairs` says how many), and test the pairs
# with a two-sided Wilcoxon signed-rank test. The paper reports 99.75 % of workload–metric pairs with p < 0.05.
# See `reveal_lab.studies._dtw` for the exact pairing. Each platform of the data is studied apart
# (rows: `platform`; figures: `NAME--PLATFORM`).

# %% tags=["parameters"]
data = ""  # dataset folder; empty: the bundled data/lab; synth: seeded synthetic runs
out_dir = "../out/lab"
smoke = False
workloads = ""  # comma-separated workload names; empty: all
max_runs_per_workload = 0  # 0: all runs of each workload
max_runs = 0  # total runs, taking the workloads in turn; 0: all
max_seconds = 0.0
fault_free = True  # leave out runs with an injected fault (lab dataset); reproducibility is about normal runs
by_phase = True  # train and infer runs of one model are different workloads
metrics = ""  # comma-separated host-free metric keys; empty: every dynamic metric all workloads share
max_metrics = 0  # keep the first n metrics (sorted); 0: all
length = 256  # resampled trace length
band = 0  # Sakoe-Chiba radius in samples of the resampled traces; 0: unconstrained
pairing = "auto"  # run, run_x_workload, or auto (run where a workload has 6+ runs); see the module
alpha = 0.05
max_other_workloads = 32  # compare each run with this many other workloads' medians; 0: all of them
platform = "each"  # each: every platform apart (one platform: as all); gpu, cpu: one platform's runs; all: every run
workers = 0  # per-run work on a local Dask cluster of this many processes; 0: in this process
scheduler = ""  # per-run work on this Dask scheduler (tcp://HOST:PORT) instead

# %%
import warnings

import polars as pl

from reveal_lab import plots, scale, studies
from reveal_lab.telemetry import TelemetryWarning

warnings.simplefilter("ignore", TelemetryWarning)  # kept on each run (see 01)

# per run: each metric's trace z-normalized and resampled to `length`; the test runs on those.
# Each platform of the data apart (one platform: every run together), a map + reduce each
sections = scale.section_refs(data, platform, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                              max_runs=max_runs, fault_free=fault_free)
parts, skipped = {}, []
rule = ("fault-free runs; " if fault_free else "") + {
    "auto": "tested per run where a workload has 6+ runs, per (run, other workload) pair elsewhere",
    "run": "tested per run: a workload-metric pair needs 6+ runs",
    "run_x_workload": "tested per (run, other workload) pair"}.get(pairing, pairing)
for section, refs in sections.items():
    mapped = scale.map_runs(studies.dtw_piece, refs, by_phase, length, max_seconds=max_seconds,
                            fault_free=fault_free, workers=workers, scheduler=scheduler,
                            desc=f"05 DTW traces ({section})")
    skipped.append(mapped.skipped)
    traces = studies.reduce_dtw(mapped.pieces, metrics=studies.parse_list(metrics),
                                max_metrics=max_metrics or None)
    parts[section] = studies.dtw_reproducibility(traces, length=length, window=band or None, alpha=alpha,
                                                 pairing=pairing, prepared=True,
                                                 max_other_workloads=max_other_workloads or None)
    print(studies.runs_used(section, len(mapped.run_ids), len(refs), rule),
          f"({scale.engine_label(workers, scheduler)}), {mapped.skipped.height} skipped")
scale.record_skipped(out_dir, "05-dtw-reproducibility", pl.concat(skipped))
studies.save_table(studies.by_platform({s: r.pairs for s, r in parts.items()}), out_dir, "dtw_pairs")
studies.save_table(studies.by_platform({s: r.by_metric for s, r in parts.items()}), out_dir, "dtw_by_metric")
summary = studies.by_platform({s: r.summary() for s, r in parts.items()})
studies.save_table(summary, out_dir, "dtw_summary")
summary

# %% [markdown]
# **Two-sided vs one-sided.** `share_significant_pct` is the paper's measure: the share of
# workload–metric pairs whose two-sided test gives p < `alpha`. A two-sided test also counts
# pairs whose runs are *farther* from their own workload than from the others
# (`significant_wrong_direction`), and with `pairing="auto"` most pairs pool every
# (run, other workload) pair, which are not independent (each run enters once per other
# workload). The hypothesis is one-sided (closer to its own workload), so
# `share_one_sided_pct` tests it on one value per run (`p_one_sided`, exact Wilcoxon, with
# the rank-biserial `effect_size`: +1 when every run is closer to its own workload). With 4
# runs per workload the smallest possible one-sided p is 1/16 > 0.05, so no single
# workload–metric pair can reach significance: `share_metrics_one_sided_pct` pools, per
# metric, one value per run over all workloads (`dtw_by_metric`), independent units in the
# hypothesised direction. Distances are exact and finite (a constant trace, z-normalized to
# zeros, used to come back as `inf` from dtaidistance's default pruning).

# %%
for section, result in parts.items():
    fig = plots.plot_dtw_distances(result.distances, result.pairs, alpha=alpha)
    plots.save_figure(fig, out_dir, studies.section_figure(out_dir, "dtw_distances", section, sections))
    display(fig)  # noqa: F821 - IPython's
