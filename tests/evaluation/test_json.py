"""``evaluate --json``: the JSON object, per fault type and magnitude, on detections with known answers."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

from reveal_lab.evaluation import JSON_FIELDS, evaluation_json, score_episodes, summarize

T0 = dt.datetime(2026, 11, 21, 20, 0, 0)


def t(s: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=s)


def _windows(run, flagged, *, n=60, baseline=False, workload="W", combined=None):
    return pl.DataFrame(
        [
            {
                "run": run,
                "host": "labA",
                "window_id": i,
                "start": t(i),
                "end": t(i + 3),
                "flagged": i in flagged,
                "baseline": baseline,
                "workload": workload,
                "share_cpu": 1.0 if i in flagged else None,
                "combined": (combined or {}).get(i, 0.0),
            }
            for i in range(n)
        ],
        schema_overrides={"share_cpu": pl.Float64},
    )


def _labels(rows):
    return pl.DataFrame(
        [
            {
                "run": r,
                "host": "labA",
                "fault_type": "cpu_contention",
                "start": t(a),
                "end": t(b),
                "expected_subsystem": "cpu",
                "magnitude": m,
                "scope": "episode",
            }
            for r, a, b, m in rows
        ]
    )


@pytest.fixture
def scored():
    # two runs, each with a magnitude-1 and a magnitude-2 episode; the magnitude-2 episodes are
    # always caught, the magnitude-1 episode only in run r1; one false alarm in 60 baseline windows
    labels = _labels([("r1", 10, 20, 1.0), ("r1", 35, 45, 2.0), ("r2", 10, 20, 1.0), ("r2", 35, 45, 2.0)])
    hi = {i: 5.0 for i in range(34, 45)}
    w = pl.concat(
        [
            _windows("r1", {12, 13, 40, 41, 50}, combined={**hi, 12: 4.0}),
            _windows("r2", {38, 39}, combined=hi),
            _windows("b1", {5}, baseline=True),
            _windows("b2", set(), baseline=True, workload="other"),
        ]
    )
    ep = score_episodes(w, labels)
    return ep, w, summarize(ep, w, labels)


def test_json_has_every_field_overall_per_type_and_per_magnitude(scored):
    ep, w, table = scored
    obj = evaluation_json(ep, w, table, {"mode": "calibrated", "persist": 1})
    assert obj["settings"] == {"mode": "calibrated", "persist": 1}
    for part in (obj["overall"], obj["fault_types"]["cpu_contention"]):
        assert set(JSON_FIELDS) <= set(part)
    assert obj["overall"]["episodes"] == 4 and obj["overall"]["episode_recall"] == 0.75
    assert obj["overall"]["false_alarm_share"] == pytest.approx(1 / 120)  # every fault-free window
    # per fault type: the fault-free windows of its runs' workload only (b1, not b2)
    assert obj["fault_types"]["cpu_contention"]["false_alarm_share"] == pytest.approx(1 / 60)
    mags = obj["by_magnitude"]["cpu_contention"]
    assert set(mags) == {"1", "2"}
    assert mags["2"]["episodes"] == 2 and mags["2"]["episode_recall"] == 1.0
    assert mags["1"]["episode_recall"] == 0.5 and mags["1"]["top1_accuracy"] == 1.0
    # precision per magnitude ignores windows on the other magnitude's episodes: for magnitude 2,
    # r1's hits 40, 41 count, window 50 is a miss; r1's windows 12, 13 (magnitude 1) are left out
    assert mags["2"]["window_precision"] == pytest.approx(4 / 5)
    assert mags["2"]["score_auc"] > mags["1"]["score_auc"]
    json.dumps(obj)  # serializable as it is


def test_json_without_magnitudes_has_no_magnitude_part(scored):
    ep, w, table = scored
    obj = evaluation_json(ep.drop("magnitude"), w, table)
    assert "by_magnitude" not in obj and obj["settings"] == {}


@pytest.mark.slow
def test_evaluate_cli_writes_json(tmp_path, capsys):
    from reveal_lab.cli import main
    from reveal_lab.config import data_dir
    from reveal_lab.io import read_labels

    labels = read_labels(data_dir() / "labels.csv")
    run = labels.filter(pl.col("fault_type") == "storage_read")["run"][0]
    out = tmp_path / "ev.json"
    argv = ["evaluate", "--mode", "self", "--runs", run, "--out", str(tmp_path), "--json", str(out)]
    assert main(argv) == 0
    obj = json.loads(out.read_text())
    assert obj["settings"]["mode"] == "self" and obj["settings"]["runs_scored"] == 1
    assert obj["settings"]["z_clip"] is None  # fitted on the run itself: never clipped
    mine = labels.filter(pl.col("run") == run)
    assert obj["overall"]["episodes"] == mine.height and set(obj["fault_types"]) == {"storage_read"}
    assert set(JSON_FIELDS) <= set(obj["fault_types"]["storage_read"])
    assert set(obj["by_magnitude"]["storage_read"]) == {f"{m:g}" for m in mine["magnitude"]}


def test_evaluate_cli_z_clip_reaches_the_calibrated_settings(tmp_path):
    """``evaluate --z-clip 5`` (calibrated, one run, every metric) is the clip in force, as
    the JSON settings say; ``none`` turns it off."""
    from reveal_lab.cli import main
    from reveal_lab.config import data_dir
    from reveal_lab.io import read_labels

    run = read_labels(data_dir() / "labels.csv").filter(pl.col("fault_type") == "storage_read")["run"][0]
    for flag, want in (("5", 5.0), ("none", None)):
        out = tmp_path / f"ev_{flag}.json"
        argv = ["evaluate", "--runs", run, "--no-prune", "--z-clip", flag, "--out", str(tmp_path), "--json", str(out)]
        assert main(argv) == 0
        settings = json.loads(out.read_text())["settings"]
        assert settings["mode"] == "calibrated" and settings["z_clip"] == want, settings
