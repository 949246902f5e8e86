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
# # 00 · A first look: one faulty run, detected with the defaults
#
# One lab run with injected faults, detected alone with `reveal_lab.pipeline.detect_run`
# and its defaults (the run's workload span, the pruned metric space fitted on the run
# itself, 3 s windows every 1 s, robust thresholds, sustained flags). Below: each
# detector's score along the run with the labelled fault episodes shaded, the evidence
# behind the anomalous windows, and the subsystem they point to beside the one the fault
# was injected into. `reveal-lab detect RUN --out DIR` writes the same as a report.

# %% tags=["parameters"]
data = ""  # dataset folder; empty: the bundled data/lab
out_dir = "../out/lab"
smoke = False
fault = "cpu_contention"  # the injected fault of the run to look at (labels.csv's fault_type)
phase = "infer"  # train or infer
top_evidence = 10  # rows of the evidence table

# %%
import warnings
from pathlib import Path

import polars as pl
from IPython.display import Image

from reveal_lab import plots, studies
from reveal_lab.io import load_run, open_dataset, read_labels, read_meta
from reveal_lab.pipeline import detect_run
from reveal_lab.telemetry import TelemetryWarning

warnings.simplefilter("ignore", TelemetryWarning)  # kept on the run (run.warnings)

root = Path(str(studies.resolve_data(data)))
if (root / "meta_lab.csv").exists():  # the lab dataset: the first single-host run with this fault
    meta = read_meta(root / "meta_lab.csv").filter(
        pl.col("fault").str.contains(fault, literal=True) & (pl.col("phase") == phase) & (pl.col("world_size") == 1)
    )
    if meta.height == 0:
        raise ValueError(f"{root / 'meta_lab.csv'}: no single-host {phase} run with fault {fault!r}")
    row = meta.row(0, named=True)
    run = load_run(root / row["source_file"])
    labels = read_labels(root / "labels.csv")
    episodes = labels.filter((pl.col("run") == row["run"]) & (pl.col("host") == row["host"]))
else:  # a dataset without labels: its first run, nothing shaded
    ds = open_dataset(root)
    run = ds.load(ds.index["run_id"][0])
    episodes = None
run

# %%
det = detect_run(run)
host = det.windows["host"][0]
s = det.summary
f"{s['windows']} windows, {s['anomalous']} anomalous ({s['anomalous_share']:.0%}); thresholds: {det.fit_mode}"

# %% [markdown]
# Each detector's score per window (line) with its threshold (dashed) and the windows it
# flags (dots); the labelled fault episodes (`labels.csv`) shaded.

# %%
fig = plots.plot_score_timeline(det.windows.filter(pl.col("host") == host), det.thresholds[host], episodes,
                                methods=det.methods, title=f"{det.run_id} · {host}")
png = plots.save_figure(fig, out_dir, "first_look_timeline")[0]
Image(filename=str(png))  # the figure as written to out_dir/figures

# %% [markdown]
# The evidence behind the anomalous windows: the metric–feature pairs named most often,
# with how many anomalous windows name each and their largest deviation (|z| against the
# run's own fit data).

# %%
evidence = (
    det.evidence.group_by("subsystem", "metric", "feature")
    .agg(pl.col("window_id").n_unique().alias("windows"), pl.col("z").abs().max().alias("max_abs_z"))
    .sort(["windows", "max_abs_z", "metric", "feature"], descending=[True, True, False, False])
    .head(top_evidence)
)
studies.save_table(evidence, out_dir, "first_look_evidence")
evidence

# %% [markdown]
# The verdict: the subsystem each anomalous window points to first, beside the subsystem
# the labelled fault was injected into.

# %%
anomalous = det.windows.filter(pl.col("anomalous"))
verdict = (
    anomalous.group_by("top_subsystem").agg(pl.len().alias("windows"))
    .with_columns((pl.col("windows") / max(det.windows.height, 1)).alias("share_of_run"))
    .sort(["windows", "top_subsystem"], descending=[True, False])
    .rename({"top_subsystem": "subsystem"})
)
expected = sorted(set(episodes["expected_subsystem"])) if episodes is not None and episodes.height else []
verdict = verdict.with_columns(pl.col("subsystem").is_in(expected).alias("labelled"))
studies.save_table(verdict, out_dir, "first_look_verdict")
verdict
