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
# # 06 · Case studies: raw traces around flagged windows (Fig. 7/8), cross-host memory deviation (Fig. 9)
#
# Fig. 7 and 8 show the raw metrics that the attribution names for the two most
# anomalous windows (distinct runs first). Fig. 9 compares every host's memory metrics
# with the cluster median (`reveal_lab.crosshost.deviation`, static metrics such as
# HugePages included). On the bundled lab dataset the lab's own case studies follow:
# packet-loss retransmissions vs CPU/IRQ pressure, a storage burst, and a CPU-quota host.
# Each platform of the data is studied apart (rows: `platform`; figures: `NAME--PLATFORM`).

# %% tags=["parameters"]
data = ""  # dataset folder; empty: the bundled data/lab; synth: seeded synthetic runs
out_dir = "../out/lab"
smoke = False
workloads = ""  # comma-separated workload names; empty: all
max_runs_per_workload = 0  # 0: all runs of each workload
max_runs = 0  # total runs, taking the workloads in turn; 0: all
max_seconds = 0.0
preset = "paper"
pad_s = 15.0  # seconds of context before and after a flagged window
min_agreement = 2  # pick windows flagged by at least this many detectors when there are any
lab_cases = True  # run the lab dataset's case studies when the data has meta_lab.csv and labels.csv
pruning = "pruning.json"  # the reproduction's pruned space (02 writes it in out_dir); "": every metric
policy = "paper"  # detection setting of Fig. 7/8 (studies.SETTINGS): paper, the paper's method; default, ours
trim = True  # score the workload's span only (recorded span of lab runs; active span otherwise)
platform = "each"  # each: every platform apart (one platform: as all); gpu, cpu: one platform's runs; all: every run
workers = 0  # per-run work on a local Dask cluster of this many processes; 0: in this process
scheduler = ""  # per-run work on this Dask scheduler (tcp://HOST:PORT) instead

# %%
import warnings
from pathlib import Path

import polars as pl

from reveal_lab import plots, scale, studies
from reveal_lab.telemetry import TelemetryError, TelemetryWarning

warnings.simplefilter("ignore", TelemetryWarning)  # kept on each run (see 01)

engine = {"max_seconds": max_seconds, "workers": workers, "scheduler": scheduler}
setting = studies.setting_policies([policy], trim=trim)
# each platform of the data apart, in its own pruned space (one platform: every run together)
sections = scale.section_refs(data, platform, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                              max_runs=max_runs)
parts, skipped = {}, []
for section, refs in sections.items():
    # the setting's own cut of the section's pruned space (the paper's: pairwise, on the whole recordings)
    spaces = scale.setting_spaces(refs, out_dir, studies.section_file(pruning, section, sections), setting, **engine)
    detections, mapped = scale.detect_runs(refs, setting, preset=preset, pruning=spaces, **engine)
    skipped.append(mapped.skipped)
    runs = scale.lazy_runs(refs, mapped.pieces, max_seconds)  # each loaded when a study reads it, not kept
    parts[section] = (runs, studies.top_windows(detections[policy][1], 2, agreement_at_least=min_agreement))
    print(studies.runs_used(section, len(mapped.run_ids), len(refs), "every selected run, detected as in 03"),
          f"({scale.engine_label(workers, scheduler)})")
scale.record_skipped(out_dir, "06-case-studies", pl.concat(skipped))
studies.by_platform({s: top for s, (_, top) in parts.items()})

# %%
for section, (runs, top) in parts.items():
    by_id = {r.meta.run_id: r for r in runs}
    for i, name in enumerate(["fig7_raw_traces", "fig8_raw_traces"]):
        if i < top.height:
            w = top.row(i, named=True)
            tr = studies.traces_around(by_id[w["run_id"]], w["start"], w["end"], w["metrics"], pad_s=pad_s)
            fig = plots.plot_raw_traces(tr, title=f"{w['run_id']} @ {w['host']}, window {w['window_id']}")
        else:
            fig = plots.plot_message("fewer than two anomalous windows in these runs")
        plots.save_figure(fig, out_dir, studies.section_figure(out_dir, name, section, sections))
        display(fig)  # noqa: F821 - IPython's

# %%
devs = {s: studies.crosshost_subsystem(runs, "memory") for s, (runs, _) in parts.items()}
studies.save_table(studies.by_platform(devs), out_dir, "fig9_crosshost_memory")
for section, dev in devs.items():
    fig = plots.plot_crosshost_deviation(dev, x="host", y="z", group="key")
    plots.save_figure(fig, out_dir, studies.section_figure(out_dir, "fig9_crosshost_memory", section, sections))
    display(fig)  # noqa: F821 - IPython's

# %% [markdown]
# ## The lab dataset's case studies

# %%
root = Path(str(studies.resolve_data(data)))
is_lab = lab_cases and (root / "meta_lab.csv").exists() and (root / "labels.csv").exists()


def note(text: str) -> pl.DataFrame:
    return pl.DataFrame({"note": [text]})


loss = quota = note(f"{root} is not the labelled lab dataset (no meta_lab.csv/labels.csv)")
fig = plots.plot_message("the storage-burst case study needs the lab dataset")
if is_lab:
    # each case study needs particular runs; a dataset without them gets a note, not a failure
    try:
        loss = studies.packet_loss_summary(studies.packet_loss_study(root))
    except TelemetryError as exc:
        loss = note(f"packet-loss case study: {exc}")
    try:
        quota = studies.crosshost_study(root)["summary"]
    except TelemetryError as exc:
        quota = note(f"cross-host quota case study: {exc}")
    try:
        burst = studies.storage_burst_example(root, detect=not smoke)
        s = burst["series"]
        t0 = s.filter(pl.col("in_episode"))["timestamp"].min() or s["timestamp"].min()
        tr = s.select(((pl.col("timestamp") - t0).dt.total_milliseconds() / 1000).alias("t_s"), "metric",
                      "value", pl.col("in_episode").alias("in_window"))
        fig = plots.plot_raw_traces(tr, title="storage burst (labelled episode shaded)")
    except TelemetryError as exc:
        fig = plots.plot_message(f"storage-burst case study: {exc}")
studies.save_table(loss, out_dir, "case_packet_loss")
studies.save_table(quota, out_dir, "case_crosshost_quota")
plots.save_figure(fig, out_dir, "case_storage_burst")
loss
