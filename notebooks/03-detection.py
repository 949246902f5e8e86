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
# PCA-Mahalanobis and Isolation Forest) once per detection setting (`policies`): `paper`, the
# paper's method as written (each run scored by detectors fitted on the other fault-free runs
# of its workload pooled, the top 1 % of their scores per detector flagged, the standardized
# Z-score, any detector, no clip, no sentinel rule, the whole recording, the space of notebook
# 02's runs, each whole, pruned pairwise, `pruning-pairwise-untrimmed.json`; a workload with no
# other fault-free run is fitted on the run itself), and `default`, reveal-lab's (in notebook
# 02's pruned space, on the workload's span only, fitted on the workload's other fault-free
# runs with calibrated thresholds where there are two or more). Every table has a `policy` column saying which
# setting made each row; the figures show the first setting. Each platform of the data is
# detected apart (rows: `platform`; figures: `NAME--PLATFORM`). Against `labels.csv`, each
# setting's recall and precision, in its pruned space and (`unpruned`) in every metric.

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
platform = "each"  # each: every platform apart (one platform: as all); gpu, cpu: one platform's runs; all: every run
workers = 0  # per-run work on a local Dask cluster of this many processes; 0: in this process
scheduler = ""  # per-run work on this Dask scheduler (tcp://HOST:PORT) instead
unpruned = True  # also detect in every metric: recall and precision with and without pruning (§4.1)

# %%
import warnings
from pathlib import Path

import polars as pl

from reveal_lab import plots, scale, studies
from reveal_lab.io import read_labels
from reveal_lab.telemetry import TelemetryWarning

warnings.simplefilter("ignore", TelemetryWarning)  # kept on each run (see 01)

engine = {"max_seconds": max_seconds, "workers": workers, "scheduler": scheduler}
settings = studies.setting_policies(studies.parse_list(policies), min_agreement=min_agreement, trim=trim)
labels_csv = Path(str(studies.resolve_data(data))) / "labels.csv"
labels = read_labels(labels_csv) if labels_csv.exists() else pl.DataFrame()
# each platform of the data apart, in its own pruned space (one platform: every run together); per run:
# detected where it is loaded, with its workload's other fault-free runs as its baseline
sections = scale.section_refs(data, platform, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                              max_runs=max_runs)
parts, every, skipped = {}, {}, []
for section, refs in sections.items():
    # each setting in its own cut of the section's pruned space (the paper's: pairwise, on the whole recordings)
    spaces = scale.setting_spaces(refs, out_dir, studies.section_file(pruning, section, sections), settings, **engine)
    detections, mapped = scale.detect_runs(refs, settings, preset=preset, window_s=window_s, stride_s=stride_s,
                                           pruning=spaces, **engine)
    skipped.append(mapped.skipped)
    parts[section] = (detections, {f["run_id"]: f["fault"] for f in mapped.pieces})
    if unpruned and labels.height:
        every[section], again = scale.detect_runs(refs, settings, preset=preset, window_s=window_s,
                                                  stride_s=stride_s, pruning=None, **engine)
        skipped.append(again.skipped)
    print(studies.runs_used(section, len(mapped.run_ids), len(refs), "every selected run; the baseline of a "
                            "run: its workload's other fault-free runs on the same hosts"),
          f"({scale.engine_label(workers, scheduler)})")
    for p, (w, _) in detections.items():
        print(f"  {p}: {w.height} windows, {int(w['anomalous'].sum())} anomalous")
scale.record_skipped(out_dir, "03-detection", pl.concat(skipped))


def per_section(table) -> pl.DataFrame:  # noqa: ANN001 - table(detections, faults) of one section
    return studies.by_platform({s: table(d, f) for s, (d, f) in parts.items()})


def save_figures(name: str, draw) -> object:  # noqa: ANN001 - draw(windows of the first setting)
    for section, (d, _) in parts.items():
        fig = draw(d[next(iter(settings))][0])
        plots.save_figure(fig, out_dir, studies.section_figure(out_dir, name, section, sections))
        display(fig)  # noqa: F821 - IPython's


# %%
counts = per_section(lambda d, _: studies.policy_table({p: studies.detector_window_counts(w)
                                                        for p, (w, _) in d.items()}))
studies.save_table(counts, out_dir, "fig2_detector_windows")
save_figures("fig2_detector_windows", lambda w: plots.plot_detector_windows(studies.detector_window_counts(w)))

# %% [markdown]
# Fig. 2 as in the paper: per run and host, the windows each detector flags along the run,
# labelled fault episodes (the lab dataset's `labels.csv`) shaded.

# %%
def flag_figure(windows: pl.DataFrame) -> object:
    timelines = studies.flag_timelines(windows)
    return plots.plot_flag_timelines(timelines, studies.labelled_episodes(labels, timelines["run"].unique().to_list()))


save_figures("fig2_flag_timelines", flag_figure)

# %%
causes = per_section(lambda d, _: studies.policy_table({p: studies.causes_per_window(w) for p, (w, _) in d.items()}))
studies.save_table(causes, out_dir, "fig3_causes_per_window")
save_figures("fig3_causes_per_window", lambda w: plots.plot_causes_per_window(studies.causes_per_window(w)))

# %%
table4 = per_section(lambda d, _: studies.policy_table({p: studies.detection_summary(w, e)
                                                        for p, (w, e) in d.items()}))
studies.save_table(table4, out_dir, "table4_detection_summary")
table4

# %% [markdown]
# Table 4 as in the paper: the strongest anomalous windows with their detectors, subsystem,
# metric–feature and the evidence-based claim; (§5.6) which subsystems the metric–feature
# pairs of anomalous windows belong to; and how long each metric family is part of a run's
# anomalous windows (the seconds §5.6 and §6 quote).

# %%
by_subsystem = per_section(lambda d, _: studies.policy_table({p: studies.evidence_by_subsystem(e)
                                                              for p, (_, e) in d.items()}))
studies.save_table(by_subsystem, out_dir, "evidence_by_subsystem")
report4 = per_section(lambda d, _: studies.policy_table({
    p: studies.paper_table4(e, max_rows=20, agreement_at_least=min_agreement) for p, (_, e) in d.items()}))
studies.save_table(report4, out_dir, "table4_anomaly_report")
seconds = per_section(lambda d, faults: studies.policy_table({p: studies.anomalous_time(w, e, faults)
                                                              for p, (w, e) in d.items()}))
studies.save_table(seconds, out_dir, "anomalous_time")
report4

# %% [markdown]
# Detection against `labels.csv` (the claims' recall and precision rows: §4.1's "pruning improves
# detection accuracy", the "five hardware configuration issues"): per setting and labelled fault
# kind, the episodes at least one anomalous window overlaps (recall) and the anomalous windows
# that overlap an episode (precision; `(all)`: every run, fault-free ones included), in the
# setting's pruned space and in every metric.

# %%
def vs_labels(detections: dict, space: str) -> pl.DataFrame:  # noqa: ANN001 - one section's detections
    return studies.policy_table({p: studies.label_detection(w, labels).with_columns(space=pl.lit(space))
                                 for p, (w, _) in detections.items()})


# without labels.csv (the public dataset) only the (all) rows: no episode, recall n/a
by_label = studies.by_platform({s: pl.concat([vs_labels(d, "pruned")]
                                             + ([vs_labels(every[s], "every metric")] if s in every else []))
                                for s, (d, _) in parts.items()})
studies.save_table(by_label, out_dir, "detection_vs_labels")
by_label
