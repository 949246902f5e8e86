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
# whether the detectors flagged the window. Each platform of the data is projected apart
# (figures: `NAME--PLATFORM`), on at most `max_windows` windows spread evenly over its runs.

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
max_windows = 2000  # windows per platform entering the projections, spread over its runs; 0: no budget
seed = 0
pruning = "pruning.json"  # the reproduction's pruned space (02 writes it in out_dir); "": every metric
thresholds = "auto"  # auto: calibrated on the workload's other fault-free runs; self: the paper's
trim = True  # score the workload's span only (recorded span of lab runs; active span otherwise)
platform = "each"  # each: every platform apart (one platform: as all); gpu, cpu: one platform's runs; all: every run
workers = 0  # per-run work on a local Dask cluster of this many processes; 0: in this process
scheduler = ""  # per-run work on this Dask scheduler (tcp://HOST:PORT) instead

# %%
import warnings

import polars as pl

from reveal_lab import plots, scale, studies
from reveal_lab.config import get_preset
from reveal_lab.telemetry import TelemetryWarning

warnings.simplefilter("ignore", TelemetryWarning)  # kept on each run (see 01)

engine = {"max_seconds": max_seconds, "workers": workers, "scheduler": scheduler}
flags = studies.setting_policy("default", trim=trim).with_(thresholds=thresholds)
# each platform of the data apart, in its own pruned space and feature pairs (one platform: every run together)
sections = scale.section_refs(data, platform, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                              max_runs=max_runs)
parts, skipped = {}, []
for section, refs in sections.items():
    space = scale.study_space(refs, out_dir, prune=studies.section_file(pruning, section, sections), **engine)
    detections, mapped = scale.detect_runs(refs, {"flags": flags}, preset=preset, pruning=space, **engine)
    windows, _ = detections["flags"]
    anom = windows.filter("anomalous").select("run_id", "window_id")
    flagged = {(r, int(w)): True for r, w in anom.iter_rows()}
    # per run: the features of (at most max_windows_per_run) windows, fewer when the platform's budget
    # (max_windows) would be passed, so the projections hold a bounded matrix whatever the runs; the pairs
    # every run has are projected
    per_run = min(max_windows_per_run, max(1, max_windows // len(refs))) if max_windows and refs else max_windows_per_run
    fold = studies.WindowFeatureFold()  # each run's windows kept on the pairs shared so far, as they come
    features = scale.map_runs(studies.window_feature_piece, refs, get_preset(preset).window,
                              per_run, desc=f"07 features ({section})", fold=fold, **engine)
    skipped.append(pl.concat([mapped.skipped, features.skipped]).unique())
    parts[section] = fold.result(flagged)
    print(studies.runs_used(section, len(features.run_ids), len(refs), "every selected run, detected as in 03"),
          f"({scale.engine_label(workers, scheduler)}), at most {per_run} windows per run")
scale.record_skipped(out_dir, "07-projections", pl.concat(skipped))
{s: X.shape for s, (X, _) in parts.items()}

# %%
for section, (X, rows) in parts.items():
    emb = studies.project(X, "umap", seed=seed)
    fig = plots.plot_projection(emb, rows, title="UMAP" if len(sections) == 1 else f"UMAP, {section.upper()} hosts")
    plots.save_figure(fig, out_dir, studies.section_figure(out_dir, "projection_umap", section, sections))
    display(fig)  # noqa: F821 - IPython's

# %%
for section, (X, rows) in parts.items():
    emb = studies.project(X, "tsne", seed=seed)
    fig = plots.plot_projection(emb, rows, title="t-SNE" if len(sections) == 1 else f"t-SNE, {section.upper()} hosts")
    plots.save_figure(fig, out_dir, studies.section_figure(out_dir, "projection_tsne", section, sections))
    display(fig)  # noqa: F821 - IPython's
