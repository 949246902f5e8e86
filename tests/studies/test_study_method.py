"""The studies score the reproduction's pruned space (fitted once, saved, reused), trimmed,
with thresholds calibrated on the workload's other fault-free runs."""

from __future__ import annotations

import polars as pl

from reveal_lab import studies
from reveal_lab.pipeline import POLICIES, load_pruning
from reveal_lab.telemetry import parse_metric_name


def test_pruned_space_is_fitted_once_and_reaches_the_detection_study(tmp_path):
    runs = studies.synthetic_runs(n_workloads=2, runs_per_workload=3, n_seconds=30.0, n_channels=40)
    space = studies.study_pruning(runs, tmp_path)
    path = tmp_path / "pruning.json"
    assert path.exists() and load_pruning(path).selected == space.selected
    assert len(space.params["fitted_on"]) == 6 and space.params["trim"]
    # a later study reads the saved file instead of refitting (the file is the contract)
    path.write_text(path.read_text().replace(space.selected[0], space.selected[0] + "X"))
    again = studies.study_pruning(runs, tmp_path, prune="pruning.json")
    assert again.selected[0] == space.selected[0] + "X"
    assert studies.study_pruning(runs, tmp_path, prune="") is None
    windows, evidence = studies.run_detection(runs, preset="smoke", pruning=space)
    keys = {parse_metric_name(m).key() for m in evidence["metric"].unique()}
    assert keys and keys <= set(space.selected)
    # three runs per workload: each run is fitted on its two siblings, calibrated
    assert set(windows["fit_mode"]) == {"calibrated"}
    _, ev_all = studies.run_detection(
        runs[:1], preset="smoke", pruning=None, policy=POLICIES["default"].with_(thresholds="self")
    )
    all_keys = {parse_metric_name(m).key() for m in ev_all["metric"].unique()}
    assert not all_keys <= set(space.selected)  # every metric: some outside the pruned space


def test_baselines_are_the_other_fault_free_runs_of_the_workload():
    runs = studies.synthetic_runs(n_workloads=2, runs_per_workload=3, n_seconds=20.0, n_channels=40)
    base = studies.baseline_runs(runs[0], runs)
    assert [r.meta.run_id for r in base] == [r.meta.run_id for r in runs[1:3]]
    faulty = runs[1]
    faulty.meta.extra["fault"] = "storage_read@512"
    assert not studies.is_fault_free(faulty)
    assert [r.meta.run_id for r in studies.baseline_runs(runs[0], runs)] == [runs[2].meta.run_id]
    windows, _ = studies.run_detection(runs[:3], preset="smoke", pruning=None)
    # one fault-free sibling is not enough for calibrated thresholds: robust on the run itself
    assert windows.filter(pl.col("run_id") == runs[0].meta.run_id)["fit_mode"][0] == "robust"


def test_window_flags_and_dataset_episodes_for_per_host_timelines():
    runs = studies.synthetic_runs(n_workloads=1, runs_per_workload=3, n_seconds=20.0, n_channels=40)
    windows, _ = studies.run_detection(runs, preset="smoke", pruning=None)
    flags = studies.window_flags(windows)
    dets = [c.removeprefix("flag_") for c in flags.columns if c.startswith("flag_")]
    assert len(dets) >= 3 and all(flags.schema[f"flag_{d}"] == pl.Boolean for d in dets)
    assert flags.columns[:6] == ["run_id", "workload", "host", "window_id", "start", "end"]
    for d in dets:  # a flag is a score above the detector's threshold, as the windows say
        assert (flags[f"flag_{d}"] == windows[f"label_{d}"].cast(pl.Boolean)).all()
    eps = studies.dataset_episodes()
    from reveal_lab.config import data_dir

    n_labels = pl.read_csv(data_dir() / "labels.csv").height
    assert eps.height == n_labels > 0 and set(eps["scope"]) == {"episode", "run"}
    assert studies.dataset_episodes("synth").height == 0


def test_the_paper_setting_fits_each_run_on_its_workloads_other_fault_free_runs(monkeypatch):
    """Per workload (paper §4.3): each run scored by detectors fitted on the other fault-free
    runs of its workload pooled, never on itself; a workload with one run falls back to the
    run itself and says so in the resolved policy's departures."""
    import reveal_lab.pipeline as pipeline

    runs = studies.synthetic_runs(n_workloads=2, runs_per_workload=3, n_seconds=20.0, n_channels=30)
    seen: dict[str, list[str]] = {}
    departures: dict[str, list[str]] = {}
    real = pipeline.detect_run

    def spy(run, baseline=None, **kw):  # noqa: ANN001, ANN003, ANN202
        seen[run.meta.run_id] = [b.meta.run_id for b in baseline or []]
        det = real(run, baseline=baseline, **kw)
        departures[run.meta.run_id] = [d["field"] for d in det.config["policy"]["departures"]]
        return det

    monkeypatch.setattr(pipeline, "detect_run", spy)
    paper = studies.setting_policy("paper")
    windows, _ = studies.run_detection(runs[:4], preset="smoke", pruning=None, policy=paper)
    for r in runs[:3]:  # the three runs of the first workload: the two others each time
        others = [o.meta.run_id for o in runs[:3] if o is not r]
        assert seen[r.meta.run_id] == others
        assert "thresholds" not in departures[r.meta.run_id]
    assert set(windows.filter(pl.col("run_id") != runs[3].meta.run_id)["fit_mode"]) == {"baseline"}
    # the fourth run is alone in its workload among the runs given: fitted on itself, a departure
    assert seen[runs[3].meta.run_id] == []
    assert windows.filter(pl.col("run_id") == runs[3].meta.run_id)["fit_mode"][0] == "self"
    assert "thresholds" in departures[runs[3].meta.run_id]
    # the paper's agreement score is in the windows table and grows with the agreeing detectors
    w = windows.sort("agreement_score")
    assert w["agreement"].to_list() == sorted(w["agreement"].to_list())
