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
# # 03 · Detection: windows per detector and host (Fig. 2), causes per window (Fig. 3), Table 4
#
# Every run goes through `reveal_lab.pipeline.detect_run` (3 s / 1 s windows, Z-score,
# PCA-Mahalanobis and Isolation Forest) in the pruned metric space of notebook 02, on the
# workload's span only (trimmed), fitted on the workload's other fault-free runs with
# calibrated thresholds (`thresholds = "self"`: the paper's fit on the run itself, which
# flags a fixed top 1 % of each run's windows per detector).

# %% tags=["parameters"]
data = ""  # dataset folder; empty: the bundled data/lab; synth: seeded synthetic runs
out_dir = "../out/lab"
smoke = False
workloads = ""  # comma-separated workload names; empty: all
max_runs_per_workload = 0  # 0: all runs of each workload
max_runs = 0  # total runs, taking the workloads in turn; 0: all
max_seconds = 0.0
preset = "full"  # detector settings: reveal_lab.config presets (paper, full, smoke)
window_s = 3.0
stride_s = 1.0
min_agreement = 1  # detectors that must agree for a window to count as anomalous
pruning = "pruning.json"  # the reproduction's pruned space (02 writes it in out_dir); "": every metric
thresholds = "auto"  # auto: calibrated on the workload's other fault-free runs; self: the paper's
trim = True  # score the workload's span only (recorded span of lab runs; active span otherwise)

# %%
import warnings
from pathlib import Path

import polars as pl

from reveal_lab import plots, studies
from reveal_lab.lab import read_labels
from reveal_lab.telemetry import TelemetryWarning

warnings.simplefilter("ignore", TelemetryWarning)  # kept on each run (see 01)

runs = studies.load_study_runs(data, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                               max_runs=max_runs, max_seconds=max_seconds)
space = studies.study_pruning(runs, out_dir, prune=pruning)
windows, evidence = studies.run_detection(runs, preset=preset, window_s=window_s, stride_s=stride_s,
                                          min_agreement=min_agreement, pruning=space, trim=trim,
                                          thresholds=thresholds)
f"{len(runs)} runs, {windows.height} windows, {int(windows['anomalous'].sum())} anomalous"

# %%
counts = studies.detector_window_counts(windows)
studies.save_table(counts, out_dir, "fig2_detector_windows")
fig = plots.plot_detector_windows(counts)
plots.save_figure(fig, out_dir, "fig2_detector_windows")
fig

# %% [markdown]
# Fig. 2 as in the paper: per run and host, the windows each detector flags along the run,
# labelled fault episodes (the lab dataset's `labels.csv`) shaded.

# %%
labels_csv = Path(str(studies.resolve_data(data))) / "labels.csv"
timelines = studies.flag_timelines(windows)
episodes = studies.labelled_episodes(read_labels(labels_csv) if labels_csv.exists() else pl.DataFrame(),
                                     timelines["run"].unique().to_list())
fig = plots.plot_flag_timelines(timelines, episodes)
plots.save_figure(fig, out_dir, "fig2_flag_timelines")
fig

# %%
causes = studies.causes_per_window(windows)
studies.save_table(causes, out_dir, "fig3_causes_per_window")
fig = plots.plot_causes_per_window(causes)
plots.save_figure(fig, out_dir, "fig3_causes_per_window")
fig

# %%
table4 = studies.detection_summary(windows, evidence)
studies.save_table(table4, out_dir, "table4_detection_summary")
table4

# %% [markdown]
# Table 4 as in the paper: the strongest anomalous windows with their detectors, subsystem,
# metric–feature and the evidence-based claim; and (§5.6) which subsystems the metric–feature
# pairs of anomalous windows belong to.

# %%
studies.save_table(studies.evidence_by_subsystem(evidence), out_dir, "evidence_by_subsystem")
report4 = studies.paper_table4(evidence, max_rows=20, min_agreement=min_agreement)
studies.save_table(report4, out_dir, "table4_anomaly_report")
report4
