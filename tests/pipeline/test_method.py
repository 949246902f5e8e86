"""The paper's method around the detectors: the trimming rule, the pruned space reaching
detection (fitted, saved, reused), and thresholds that do not flag a fixed share."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl
import pytest

from reveal_lab.config import data_dir, get_preset
from reveal_lab.io import load_run
from reveal_lab.pipeline import (
    TrimRule,
    detect_run,
    fit_pruning,
    load_pruning,
    recorded_span,
    robust_threshold,
    save_pruning,
    trim_run,
)
from reveal_lab.synth import make_run
from reveal_lab.telemetry import Run, RunMeta, parse_metric_name

FAST = get_preset("paper", detect=get_preset("smoke").detect)
LAB = data_dir()


def _util_run(idle_s: float = 10.0, busy_s: float = 30.0, tail_s: float = 8.0) -> Run:
    """CPU busy 5 % while idle, 90 % while the workload runs, 5 % after: 100 ms samples."""
    n0, n1, n2 = int(idle_s * 10), int(busy_s * 10), int(tail_s * 10)
    rng = np.random.default_rng(0)
    busy = np.r_[np.full(n0, 5.0), np.full(n1, 90.0), np.full(n2, 5.0)] + rng.normal(0, 1, n0 + n1 + n2)
    t0 = dt.datetime(2025, 1, 1)
    ts = [t0 + dt.timedelta(milliseconds=100 * i) for i in range(busy.size)]
    frame = pl.DataFrame(
        {"timestamp": ts, "CPU:Busy%.-.h[%]": busy, "Memory:Dirty.h[kB]": rng.normal(size=busy.size)}
    ).with_columns(pl.col("timestamp").cast(pl.Datetime("ms")))
    return Run(RunMeta(run_id="util", hosts=("h",)), frame, [])


def _lab_file(fault: str) -> tuple[str, dict]:
    meta = pl.read_csv(LAB / "meta_lab.csv", infer_schema_length=0)
    row = meta.filter(pl.col("fault").str.starts_with(fault) & (pl.col("host") == "labA")).row(0, named=True)
    return str(LAB / row["source_file"].removeprefix("./")), row


# ----------------------------------------------------------------------------- trimming
def test_active_span_from_utilisation_with_a_margin():
    run = _util_run()
    kept, trim = trim_run(run)
    assert trim.how.startswith("active span")
    # busy from 10 s to 40 s; the 1 s smoothing moves the edges by at most half a second
    assert trim.cut_start_s == pytest.approx(10.0 + 3.0, abs=0.6)
    assert trim.cut_end_s == pytest.approx(8.0 + 3.0, abs=0.6)
    assert kept.frame["CPU:Busy%.-.h[%]"].min() > 50  # no idle sample left
    # a configurable margin
    _, t0 = trim_run(run, TrimRule(margin_s=0.0))
    assert t0.cut_start_s == pytest.approx(10.0, abs=0.6)


def test_no_idle_phase_keeps_the_run_less_the_margin_and_short_runs_stay_whole():
    run = _util_run(idle_s=0.0, tail_s=0.0)
    kept, trim = trim_run(run)
    assert "no idle phase" in trim.how
    assert trim.cut_start_s == pytest.approx(3.0, abs=0.15) and trim.cut_end_s == pytest.approx(3.0, abs=0.15)
    short = _util_run(idle_s=1.0, busy_s=8.0, tail_s=1.0)
    kept, trim = trim_run(short)
    assert kept.frame.height == short.frame.height and trim.how.startswith("not trimmed")


def test_lab_runs_are_trimmed_to_their_recorded_workload_span():
    path, row = _lab_file("none")
    run = load_run(path)
    a = dt.datetime.fromisoformat(row["workload_start"])
    b = dt.datetime.fromisoformat(row["workload_end"])
    assert recorded_span(run) == (a, b)
    kept, trim = trim_run(run)
    assert trim.how == "recorded workload span"
    ts = kept.frame["timestamp"]
    assert ts.min() >= a and ts.max() <= b
    assert trim.cut_start_s > 1.0 and trim.cut_end_s > 1.0  # start-up and teardown left out


# ----------------------------------------------------------------------------- pruning
def test_pruned_space_is_fitted_saved_and_reaches_detection(tmp_path):
    base = [make_run(60, 80, seed=s, profile_seed=1).run for s in (1, 2)]
    run = make_run(60, 80, seed=3, profile_seed=1).run
    pr = fit_pruning(base)
    assert 0 < len(pr.selected) < 80 and pr.params["threshold"] == 0.5
    path = save_pruning(pr, tmp_path / "pruning.json")
    assert json.loads(path.read_text())["selected"] == pr.selected
    assert load_pruning(path).selected == pr.selected
    full = detect_run(run, baseline=base, preset=FAST, prune=False, trim=False)
    for prune in (True, pr, str(path)):  # fitted on the baseline, given, read from the file
        det = detect_run(run, baseline=base, preset=FAST, prune=prune, trim=False)
        assert det.config["pruning"]["applied"] and det.config["pruning"]["n_selected"] == len(pr.selected)
        keys = {parse_metric_name(m).key() for m in det.evidence["metric"].unique()}
        # every scored metric is a selected key (the evidence names the metrics seen)
        assert keys and keys <= set(pr.selected), keys - set(pr.selected)
    assert not full.config["pruning"]["applied"]
    with pytest.raises(ValueError, match="not a pruning file"):
        load_pruning(tmp_path / "missing.json")


# ----------------------------------------------------------------------------- thresholds
def test_robust_threshold_known_answer():
    s = np.r_[np.zeros(80) + np.linspace(-1, 1, 80), np.full(20, 10.0)]
    thr = robust_threshold(s, 0.01, 3)
    med = np.median(s)
    mad = 1.4826 * np.median(np.abs(s - med))
    assert thr == pytest.approx(med + 2.7131 * mad, rel=1e-3)
    assert (s > thr).sum() == 20  # the 20 % fault is flagged whole, the calm 80 % not at all


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="issue #17 item 3, not met on the v2 lab data: robust single-run thresholds flag 0.25 of "
    "the storage-burst windows of its first run (goal >= 0.6; it was 0.74 on the v1 recording)",
)
def test_a_lone_fault_run_is_flagged_over_most_of_its_fault_and_attributed():
    """A recorded O_DIRECT read burst run, detected alone (no baseline): robust thresholds
    should flag most fault windows and name storage; the paper's fixed share flags one
    window per detector. Strict xfail: when it passes, the goal is met and the mark goes."""
    path, row = _lab_file("storage_read")
    run = load_run(path)
    labels = pl.read_csv(LAB / "labels.csv", try_parse_dates=True).filter(
        (pl.col("run") == row["run"]) & (pl.col("host") == "labA")
    )

    def coverage(det):  # noqa: ANN001, ANN202
        w = det.windows
        inside = pl.lit(False)
        for lab in labels.iter_rows(named=True):
            inside = inside | ((pl.col("end") > lab["start"]) & (pl.col("start") < lab["end"]))
        w = w.with_columns(inside=inside, flag=pl.col("agreement") >= 1)
        fault = w.filter("inside")
        return fault["flag"].mean(), w.filter(pl.col("flag") & pl.col("inside"))["top_subsystem"]

    det = detect_run(run)
    assert det.fit_mode == "robust" and det.config["pruning"]["applied"]
    cov, tops = coverage(det)
    assert cov >= 0.6, cov
    assert tops.value_counts(sort=True)["top_subsystem"][0] == "storage"
    paper, _ = coverage(detect_run(run, thresholds="self"))
    assert paper < cov


@pytest.mark.slow
def test_lone_fault_free_runs_flag_less_than_a_fault_run():
    """Fault-free recorded runs, alone: robust thresholds do not flag a fixed share (the
    share differs from run to run). Measured on the v2 recording (quiet machine, 90 s runs):
    0.375-0.425 of the windows of the first three fault-free labA runs (on v1: 0.10-0.37),
    far from the 1 % budget (issue #17 item 3, not met). The bound guards against a worse
    regression; it is not the goal."""
    meta = pl.read_csv(LAB / "meta_lab.csv", infer_schema_length=0)
    rows = meta.filter((pl.col("fault") == "none") & (pl.col("host") == "labA")).head(3)
    shares = []
    for r in rows.iter_rows(named=True):
        det = detect_run(load_run(str(LAB / r["source_file"].removeprefix("./"))))
        shares.append(det.summary["anomalous_share"])
    assert len(set(shares)) > 1  # not a fixed share
    assert max(shares) <= 0.45, shares
