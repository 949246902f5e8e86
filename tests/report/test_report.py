"""The report files: exact CSV columns, summary, Markdown/HTML, and the no-anomaly case."""

from __future__ import annotations

import json

import polars as pl
import pytest

from reveal_lab.config import get_preset
from reveal_lab.pipeline import detect_run
from reveal_lab.report import ANOMALIES_COLUMNS, REPORT_FILES, write_report
from reveal_lab.synth import Anomaly, make_run

FAST = get_preset("paper", detect=get_preset("smoke").detect)
EXPECTED = [
    "window_id",
    "start",
    "end",
    "host",
    "methods",
    "agreement",
    "subsystem",
    "metric",
    "feature",
    "score",
    "claim",
]


@pytest.fixture(scope="module")
def detections():
    base = make_run(200, 120, seed=50, profile_seed=7).run
    run, _ = make_run(
        150,
        120,
        seed=8,
        profile_seed=7,
        anomalies=[Anomaly("network", 60, 68, magnitude=8), Anomaly("cpu", 100, 106, "variance")],
    )
    clean = make_run(150, 120, seed=60, profile_seed=7).run
    return (
        detect_run(run, baseline=[base], preset=FAST),
        detect_run(clean, baseline=[base], preset=FAST, min_agreement=3),
    )


def test_report_files_and_exact_columns(detections, tmp_path):
    det, _ = detections
    paths = write_report(det, tmp_path / "rep")
    # the four files, and episodes.csv when the run has anomalous episodes
    assert sorted(paths) == sorted([*REPORT_FILES, "episodes.csv"] if det.episodes.height else REPORT_FILES)
    assert all(p.exists() for p in paths.values())
    assert list(ANOMALIES_COLUMNS) == EXPECTED
    csv = pl.read_csv(paths["anomalies.csv"])
    assert csv.columns == EXPECTED
    assert csv.height == det.evidence.height > 0
    assert set(csv["subsystem"]) >= {"network", "cpu"}
    assert csv["claim"].str.contains("baseline").all()
    assert csv["methods"].str.split("+").list.len().to_list() == csv["agreement"].to_list()
    s = json.loads(paths["summary.json"].read_text())
    run = s["runs"][0]
    assert run["windows"] == det.windows.height == s["windows"]
    assert set(run["per_detector"]) == {"zscore", "mahalanobis", "iforest"}
    assert {"network", "cpu"} <= set(run["per_subsystem"])
    assert run["per_detector"]["zscore"]["share"] == pytest.approx(det.windows["label_zscore"].mean())
    assert s["no_anomaly"] is False
    md = paths["report.md"].read_text()
    assert "| window_id | start | end | host | methods |" in md and "Per-subsystem breakdown" in md
    assert "Network" in md
    html = paths["report.html"].read_text()
    assert html.startswith("<!doctype html>") and "<table" in html and "Per-subsystem breakdown" in html


def test_no_anomaly_is_reported_clearly(detections, tmp_path):
    _, clean = detections
    assert clean.summary["anomalous"] == 0  # measured: agreement never reaches 3 on this clean run
    paths = write_report(clean, tmp_path / "none")
    csv = pl.read_csv(paths["anomalies.csv"])
    assert csv.columns == EXPECTED and csv.height == 0
    assert "No anomaly found" in paths["report.md"].read_text()
    assert "No anomaly found" in paths["report.html"].read_text()
    s = json.loads(paths["summary.json"].read_text())
    assert s["no_anomaly"] is True and s["runs"][0]["no_anomaly"] is True and s["evidence_rows"] == 0


def test_several_runs_in_one_report(detections, tmp_path):
    paths = write_report(list(detections), tmp_path / "both")
    s = json.loads(paths["summary.json"].read_text())
    assert s["n_runs"] == 2 and [r["run_id"] for r in s["runs"]] == ["synth_seed8", "synth_seed60"]
    md = paths["report.md"].read_text()
    assert "## Run synth_seed8" in md and "## Run synth_seed60" in md
    with pytest.raises(ValueError, match="at least one"):
        write_report([], tmp_path / "x")


def test_multi_host_detection_carries_cross_host_deviation(tmp_path):
    from reveal_lab.synth import Anomaly

    run, truth = make_run(
        60,
        80,
        hosts=["a", "b", "c"],
        seed=1,
        anomalies=[Anomaly("memory", 0, 0, kind="static", host="b", n_columns=1)],
    )
    det = detect_run(run, preset=FAST)
    assert det.crosshost is not None
    paths = write_report(det, tmp_path / "x")
    xh = pl.read_csv(paths["crosshost.csv"])
    flagged = xh.filter(pl.col("persistent"))
    assert flagged.select("metric", "host").rows() == truth.select("column", "host").rows()
    md = paths["report.md"].read_text()
    assert "1 persistent deviation(s)" in md and flagged["claim"][0] in md


def test_html_embeds_timelines_and_traces_of_the_top_evidence(detections, tmp_path):
    """Broken variants: no images, traces of metrics other than the top evidence, episodes ignored."""
    import re

    det, _ = detections
    run = make_run(
        150,
        120,
        seed=8,
        profile_seed=7,
        anomalies=[Anomaly("network", 60, 68, magnitude=8), Anomaly("cpu", 100, 106, "variance")],
    )[0]
    start = det.windows["start"].min()
    episodes = pl.DataFrame(
        {"run": [det.run_id], "host": [det.windows["host"][0]], "start": [start], "end": [start]}
    )
    paths = write_report(det, tmp_path / "figs", runs={det.run_id: run}, episodes=episodes)
    page = paths["report.html"].read_text()
    hosts = det.windows["host"].n_unique()
    assert page.count('src="data:image/png;base64,') == 2 * hosts
    assert "1 labelled fault episode(s) shaded" in page
    ev = pl.read_csv(paths["anomalies.csv"])
    top = (
        ev.group_by("metric").agg(pl.col("score").sum()).sort(["score", "metric"], descending=[True, False])
        .filter(pl.col("metric").is_in(run.frame.columns))["metric"].head(4).to_list()
    )
    shown = re.search(r"metrics with the most evidence \(([^)]*)\)", page).group(1).split(", ")
    assert shown == top
    bare = write_report(det, tmp_path / "bare", figures=False)["report.html"].read_text()
    assert "data:image/png" not in bare
    with pytest.raises(ValueError, match="missing columns"):
        write_report(det, tmp_path / "bad", episodes=pl.DataFrame({"run": ["x"]}))
