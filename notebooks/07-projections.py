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
# # 07 · Projections of window features (UMAP and t-SNE)
#
# Window features (`reveal_lab.features.window_features`) of every run, on the
# metric–feature pairs all runs share, projected to 2-D; coloured by workload and by
# whether the detectors flagged the window.

# %% tags=["parameters"]
data = ""  # dataset folder; empty: the bundled data/lab; synth: seeded synthetic runs
out_dir = "../out/lab"
smoke = False
workloads = ""  # comma-separated workload names; empty: all
max_runs_per_workload = 0  # 0: all runs of each workload
max_runs = 0  # total runs, taking the workloads in turn; 0: all
max_seconds = 0.0
preset = "paper"
max_windows_per_run = 80  # windows per run entering the projections (evenly spaced)
seed = 0
pruning = "pruning.json"  # the reproduction's pruned space (02 writes it in out_dir); "": every metric
thresholds = "auto"  # auto: calibrated on the workload's other fault-free runs; self: the paper's
trim = True  # score the workload's span only (recorded span of lab runs; active span otherwise)

# %%
import warnings

from reveal_lab import plots, studies
from reveal_lab.config import get_preset
from reveal_lab.telemetry import TelemetryWarning

warnings.simplefilter("ignore", TelemetryWarning)  # kept on each run (see 01)

runs = studies.load_study_runs(data, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                               max_runs=max_runs, max_seconds=max_seconds)
space = studies.study_pruning(runs, out_dir, prune=pruning)
windows, _ = studies.run_detection(runs, preset=preset, pruning=space, trim=trim, thresholds=thresholds)
anom = windows.filter("anomalous").select("run_id", "window_id")
flagged = {(r, int(w)): True for r, w in anom.iter_rows()}
X, rows = studies.window_feature_table(runs, get_preset(preset).window, anomalous=flagged,
                                       max_windows_per_run=max_windows_per_run)
X.shape

# %%
emb = studies.project(X, "umap", seed=seed)
fig = plots.plot_projection(emb, rows, title="UMAP")
plots.save_figure(fig, out_dir, "projection_umap")
fig

# %%
emb = studies.project(X, "tsne", seed=seed)
fig = plots.plot_projection(emb, rows, title="t-SNE")
plots.save_figure(fig, out_dir, "projection_tsne")
fig
