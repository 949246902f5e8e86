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
# workload's span only (trimmed), once per detection setting (`policies`): `paper`, the
# paper's method (each run fitted on itself, the top 1 % per detector flagged, any detector,
# no clip, no sentinel rule), and `default`, reveal-lab's (fitted on the workload's other
# fault-free runs with calibrated thresholds where there are two or more). Every table has a
# `policy` column saying which setting made each row; the figures show the first setting.

# %% tags=["parameters"]
data = ""  # dataset folder; empty: the bundled data/lab; synth: seeded synthetic runs
out_dir = "../out/lab"
smoke = False
workloads = ""  # comma-separated workload names; empty: all
max_runs_per_workload = 0  # 0: all runs of each workload
max_runs = 0  # total runs, taking the workloads in turn; 0: all
max_seconds = 0.0
preset = "paper"  # window and detector settings: reveal_lab.config presets (paper, smoke)
window_s = 3.0
stride_s = 1.0
policies = "paper,default"  # detection settings (studies.SETTINGS), comma-separated; the first is drawn
min_agreement = 0  # detectors that must agree under the default setting; 0: its own (2 calibrated, else 1)
pruning = "pruning.json"  # the reproduction's pruned space (02 writes it in out_dir); "": every metric
trim = True  # score the workload's span only (recorded span of lab runs; active span otherwise)
platform = "all"  # gpu, cpu: one platform's runs; all: every run
workers = 0  # per-run work on a local Dask cluster of this many processes; 0: in this process
scheduler = ""  # per-run work on this Dask scheduler (tcp://HOST:PORT) instead

# %%
import warnings
from pathlib import Path

import polars as pl

from reveal_lab import plots, scale, studies
from reveal_lab.lab import read_labels
from reveal_lab.telemetry import TelemetryWarning

warnings.simplefilter("ignore", TelemetryWarning)  # kept on each run (see 01)

refs = scale.study_refs(data, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                        max_runs=max_runs, platform=platform)
engine = {"max_seconds": max_seconds, "workers": workers, "scheduler": scheduler}
space = scale.study_space(refs, out_dir, prune=pruning, **engine)
settings = studies.parse_list(policies)
# per run: detected where it is loaded, with its workload's other fault-free runs as its baseline
detections, mapped = scale.detect_runs(
    refs, {p: {"trim": trim, **studies.setting_arguments(p, min_agreement=min_agreement)} for p in settings},
    preset=preset, window_s=window_s, stride_s=stride_s, pruning=space, **engine)
scale.record_skipped(out_dir, "03-detection", mapped.skipped)
windows, evidence = detections[settings[0]]
{p: f"{len(mapped.run_ids)} runs ({scale.engine_label(workers, scheduler)}), {w.height} windows, "
    f"{int(w['anomalous'].sum())} anomalous" for p, (w, _) in detections.items()}

# %%
counts = studies.policy_table({p: studies.detector_window_counts(w) for p, (w, _) in detections.items()})
studies.save_table(counts, out_dir, "fig2_detector_windows")
fig = plots.plot_detector_windows(studies.detector_window_counts(windows))
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
causes = studies.policy_table({p: studies.causes_per_window(w) for p, (w, _) in detections.items()})
studies.save_table(causes, out_dir, "fig3_causes_per_window")
fig = plots.plot_causes_per_window(studies.causes_per_window(windows))
plots.save_figure(fig, out_dir, "fig3_causes_per_window")
fig

# %%
table4 = studies.policy_table({p: studies.detection_summary(w, e) for p, (w, e) in detections.items()})
studies.save_table(table4, out_dir, "table4_detection_summary")
table4

# %% [markdown]
# Table 4 as in the paper: the strongest anomalous windows with their detectors, subsystem,
# metric–feature and the evidence-based claim; (§5.6) which subsystems the metric–feature
# pairs of anomalous windows belong to; and how long each metric family is part of a run's
# anomalous windows (the seconds §5.6 and §6 quote).

# %%
by_subsystem = studies.policy_table({p: studies.evidence_by_subsystem(e) for p, (_, e) in detections.items()})
studies.save_table(by_subsystem, out_dir, "evidence_by_subsystem")
report4 = studies.policy_table({p: studies.paper_table4(e, max_rows=20, agreement_at_least=min_agreement)
                                for p, (_, e) in detections.items()})
studies.save_table(report4, out_dir, "table4_anomaly_report")
faults = {f["run_id"]: f["fault"] for f in mapped.pieces}
seconds = studies.policy_table({p: studies.anomalous_time(w, e, faults) for p, (w, e) in detections.items()})
studies.save_table(seconds, out_dir, "anomalous_time")
report4
