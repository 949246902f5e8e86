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
# # 09 · Evaluation on the labelled lab dataset
#
# Detection scored against the injected faults of the bundled lab dataset
# (`labels.csv`): episode recall, window precision, top-1/top-3 attribution to the
# expected subsystem, and false alarms on fault-free runs, per fault type
# (`reveal_lab.evaluation.evaluate_dataset`). Needs a labelled dataset; on a public
# dataset copy the tables say so.

# %% tags=["parameters"]
data = ""  # dataset folder; empty: the bundled data/lab
out_dir = "../out/lab"
smoke = False
# mode: as `reveal-lab evaluate`, fit on the workload's other fault-free runs with out-of-sample
# thresholds; baseline: in-sample thresholds; self: the paper's fit on the run itself
mode = "calibrated"
false_alarm_rate = 0.01  # calibrated mode: share of fault-free windows any detector may flag
pruning = "pruning.json"  # the reproduction's pruned space (02 writes it in out_dir); "": every metric
preset = "paper"
min_agreement = 2  # detectors that must agree, as `reveal-lab evaluate` (1: any detector)
calibration = "trimmed"  # calibrated thresholds: pooled left-out runs less the most extreme (or pooled/median)
max_runs = 0  # evaluate only the first runs of meta_lab.csv (baselines still from all); 0: all
crosshost = True  # also score the configuration faults with cross-host deviation

# %%
from pathlib import Path

import polars as pl

from reveal_lab import studies

root = Path(str(studies.resolve_data(data)))
labelled = (root / "meta_lab.csv").exists() and (root / "labels.csv").exists()
if labelled:
    from reveal_lab.evaluation import evaluate_dataset
    from reveal_lab.io import read_meta
    from reveal_lab.pipeline import POLICIES

    subset = read_meta(root / "meta_lab.csv")["run"].unique(maintain_order=True).to_list()[:max_runs] \
        if max_runs else None
    saved = bool(pruning) and (Path(out_dir) / pruning).exists()  # 02's space, else fitted here
    space = studies.study_pruning([], out_dir, prune=pruning) if saved else bool(pruning)
    policy = POLICIES["default"].with_(min_agreement=min_agreement, false_alarm_rate=false_alarm_rate,
                                       prune=space, calibration=calibration)
    ev = evaluate_dataset(root, mode=mode, preset=preset, policy=policy, runs=subset, crosshost=crosshost)
    table, episodes, alarms = ev.table, ev.episodes, ev.baseline_by_workload
    by_repeat = ev.false_alarms_by_repeat if ev.false_alarms_by_repeat is not None else \
        pl.DataFrame({"note": ["the runs have no repeat number"]})
else:
    note = f"{root} has no meta_lab.csv/labels.csv: not a labelled dataset"
    table = episodes = alarms = by_repeat = pl.DataFrame({"note": [note]})
studies.save_table(table, out_dir, "evaluation_by_fault")
studies.save_table(episodes, out_dir, "evaluation_episodes")
studies.save_table(alarms, out_dir, "evaluation_false_alarms")
studies.save_table(by_repeat, out_dir, "evaluation_false_alarms_by_repeat")
table

# %% [markdown]
# ## Cross-host deviation: how often it flags a host where nothing was wrong
#
# The whole-run configuration differences are scored by cross-host deviation against the job's
# other fault-free runs (`reveal_lab.crosshost.baseline_deviation`). Every multi-host run is
# judged, the fault-free ones too (each against the other fault-free runs), so the rule's false
# alarms are counted: fault-free hosts flagged, and the unlabelled hosts of the runs with a
# whole-run label (a slow rank slows its peers, so these are shown, not counted as false alarms).

# %%
xh = ev.crosshost_false_alarms if labelled else None
if xh:
    crosshost_alarms = pl.DataFrame([{k: v for k, v in xh.items() if k != "flagged_runs"}])
else:
    crosshost_alarms = pl.DataFrame({"note": ["cross-host deviation did not run (crosshost off, or no "
                                              "whole-run label, or not a labelled dataset)"]})
studies.save_table(crosshost_alarms, out_dir, "evaluation_crosshost_false_alarms")
crosshost_alarms

# %% [markdown]
# ## Was the fault in the telemetry?
#
# A missed episode is either invisible in the telemetry or visible and not picked up by the
# detectors. `episode_evidence` tells them apart without any detector: for each episode and
# each host of its run, the metrics whose mean over the episode lies beyond every equally long
# span of the workload's fault-free runs on that host (and not already in the run's own calm
# span). Per fault type and magnitude: the episodes, those the detectors found, those visible
# on their own host and only on a peer; then the strongest metric of each missed one.

# %%
if labelled:
    from reveal_lab.evaluation import episode_evidence, evidence_summary

    evidence = episode_evidence(root, runs=subset)
    key = ["run", "host", "start", "fault_type"]
    top = evidence.filter(pl.col("rank") == 1)
    seen = top.select(*key, at_host=pl.col("evidence_host") == pl.col("host")).group_by(key).agg(
        pl.col("at_host").any())
    found = episodes.filter((pl.col("method") == "windows") & (pl.col("scope") == "episode")).select(
        "run", "host", pl.col("start").cast(pl.Datetime("ms")), "fault_type", "magnitude", "detected")
    visible = found.join(seen, on=key, how="left").with_columns(
        visible_at_host=pl.col("at_host").fill_null(False),
        visible_on_peer_only=pl.col("at_host").is_not_null() & ~pl.col("at_host").fill_null(False))
    evidence_table = visible.group_by("fault_type", "magnitude").agg(
        episodes=pl.len(), detected=pl.col("detected").cast(pl.Boolean).sum(),
        visible_at_host=pl.col("visible_at_host").sum(),
        visible_on_peer_only=pl.col("visible_on_peer_only").sum()).sort("fault_type", "magnitude")
    cols = ["fault_type", "magnitude", "host", "evidence_host", "metric", "episode_mean", "faultfree_max"]
    strongest = evidence_summary(evidence, found)["missed_visible"]  # each missed episode's top metric
    missed = pl.DataFrame([{c: m[c] for c in cols} for m in strongest], schema=cols) \
        .sort("fault_type", "magnitude")
else:
    evidence_table = missed = pl.DataFrame({"note": [f"{root} is not a labelled dataset"]})
studies.save_table(evidence_table, out_dir, "evaluation_evidence")
studies.save_table(missed, out_dir, "evaluation_missed_evidence")
evidence_table

# %%
missed
