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
# # 05 · DTW reproducibility (§5.4)
#
# Are runs of one workload closer to their own workload's median trace than to other
# workloads' median traces? For each workload and metric: z-normalize each run's trace,
# resample it to `length` points, take the DTW distance (exact, dtaidistance's C code,
# optional Sakoe–Chiba radius `band`) of each run to its workload's median trace (leave-one-out)
# and to every other workload's median trace, and test the pairs with a two-sided Wilcoxon
# signed-rank test. The paper reports 99.75 % of workload–metric pairs with p < 0.05.
# See `reveal_lab.studies._dtw` for the exact pairing.

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

# %%
import warnings

from reveal_lab import plots, studies
from reveal_lab.telemetry import TelemetryWarning

warnings.simplefilter("ignore", TelemetryWarning)  # kept on each run (see 01)

runs = studies.load_study_runs(data, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                               max_runs=max_runs, max_seconds=max_seconds, fault_free=fault_free)
traces = studies.collect_traces(runs, by_phase=by_phase, metrics=studies.parse_list(metrics),
                                max_metrics=max_metrics or None)
result = studies.dtw_reproducibility(traces, length=length, window=band or None, alpha=alpha, pairing=pairing)
studies.save_table(result.pairs, out_dir, "dtw_pairs")
summary = result.summary()
studies.save_table(summary, out_dir, "dtw_summary")
summary

# %%
fig = plots.plot_dtw_distances(result.distances, result.pairs, alpha=alpha)
plots.save_figure(fig, out_dir, "dtw_distances")
fig
