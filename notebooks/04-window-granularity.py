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
# # 04 · Window granularity (§5.5): Table 2 and Fig. 6
#
# Each run is detected at 3 s/1 s (the paper's setting), 1.5 s/0.5 s and 5 s/2 s; the
# anomalous windows are merged into intervals and compared pairwise per run and host:
# length-based IoU, hit rate by count (share of the reference's intervals that the other
# setting also touches) and by length (share of the reference's anomalous time covered).
# Each run is detected alone in each detection setting (`policies`: `paper`, the paper's
# method; `default`, reveal-lab's for a run alone); the tables have a `policy` column and
# Fig. 6 shows the first setting. Each platform of the data is studied apart (rows: `platform`;
# figures: `NAME--PLATFORM`).

# %% tags=["parameters"]
data = ""  # dataset folder; empty: the bundled data/lab; synth: seeded synthetic runs
out_dir = "../out/lab"
smoke = False
workloads = ""  # comma-separated workload names; empty: all
max_runs_per_workload = 0  # 0: all runs of each workload
max_runs = 0  # total runs, taking the workloads in turn; 0: all
max_seconds = 0.0
preset = "paper"
granularities = "3/1,1.5/0.5,5/2"  # window/stride pairs in seconds; the first is the reference
policies = "paper,default"  # detection settings (studies.SETTINGS), comma-separated; the first is drawn
min_agreement = 0  # detectors that must agree under the default setting; 0: its own (2 calibrated, else 1)
timeline_runs = 4  # runs shown in Fig. 6
pruning = "pruning.json"  # the reproduction's pruned space (02 writes it in out_dir); "": every metric
trim = True  # score the workload's span only (recorded span of lab runs; active span otherwise)
platform = "each"  # each: every platform apart (one platform: as all); gpu, cpu: one platform's runs; all: every run
workers = 0  # per-run work on a local Dask cluster of this many processes; 0: in this process
scheduler = ""  # per-run work on this Dask scheduler (tcp://HOST:PORT) instead

# %%
import warnings

import polars as pl

from reveal_lab import plots, scale, studies
from reveal_lab.telemetry import TelemetryWarning

warnings.simplefilter("ignore", TelemetryWarning)  # kept on each run (see 01)

grans = [tuple(float(x) for x in g.split("/")) for g in studies.parse_list(granularities)]
engine = {"max_seconds": max_seconds, "workers": workers, "scheduler": scheduler}
settings = studies.setting_policies(studies.parse_list(policies), min_agreement=min_agreement, trim=trim)
# each platform of the data apart, in its own pruned space (one platform: every run together); per run:
# its merged anomalous intervals at every granularity and setting, detected alone (the paper's setting: fitted
# on its workload's other fault-free runs)
sections = scale.section_refs(data, platform, workloads=workloads, max_runs_per_workload=max_runs_per_workload,
                              max_runs=max_runs)
parts, skipped = {}, []
for section, refs in sections.items():
    # each setting in its own cut of the section's pruned space (the paper's: pairwise, on the whole recordings)
    spaces = scale.setting_spaces(refs, out_dir, studies.section_file(pruning, section, sections), settings, **engine)
    mapped = scale.granularity_runs(refs, grans, settings, preset, spaces,
                                    desc=f"04 granularity ({section})", **engine)
    skipped.append(mapped.skipped)
    parts[section] = studies.reduce_granularity(mapped.pieces, settings)
    print(studies.runs_used(section, len(mapped.run_ids), len(refs), "every selected run, each detected alone "
                            "(the paper's setting: on its workload's other fault-free runs)"),
          f"({scale.engine_label(workers, scheduler)}), {mapped.skipped.height} skipped")
scale.record_skipped(out_dir, "04-window-granularity", pl.concat(skipped))
comparison = {s: {p: studies.granularity_comparison(iv) for p, iv in intervals.items()}
              for s, intervals in parts.items()}
studies.save_table(studies.by_platform({s: studies.policy_table(c) for s, c in comparison.items()}), out_dir,
                   "granularity_per_run")

# %%
table2 = studies.by_platform({s: studies.policy_table({p: studies.granularity_table(c) for p, c in cs.items()})
                              for s, cs in comparison.items()})
studies.save_table(table2, out_dir, "table2_window_granularity")
table2

# %%
for section, intervals in parts.items():
    fig = plots.plot_granularity_timelines(intervals[next(iter(settings))], max_runs=timeline_runs)
    plots.save_figure(fig, out_dir, studies.section_figure(out_dir, "fig6_granularity_timelines", section, sections))
    display(fig)  # noqa: F821 - IPython's
