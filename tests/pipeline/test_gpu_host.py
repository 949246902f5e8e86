"""A run alone on the real GPU host (``data/gpu-host``: an H200 training host, 16 cores, a
bf16 Transformer job, CPU contention and a GPU co-tenant; an idle host with two GPU phases):
what ``detect``'s defaults find, what they name, and what they leave out."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from reveal_lab.derive import with_cores
from reveal_lab.io import load_run, read_collector_run, read_job_pace
from reveal_lab.pipeline import collector_startup, detect_run, episode_pace, unexplained_slowdowns
from reveal_lab.telemetry import Run

SET = Path(__file__).resolve().parents[2] / "data" / "gpu-host"
JOB = SET / "host_separated" / "host_TransformerforTraining_bf16_2026-11-28T07-02-03_vm.parquet"


def _labels(kind: str | None = None) -> pl.DataFrame:
    lab = pl.read_csv(SET / "labels.csv", try_parse_dates=True)
    return lab if kind is None else lab.filter(pl.col("fault_type") == kind)


def _overlap(w: pl.DataFrame, labels: pl.DataFrame) -> pl.Expr:
    inside = pl.lit(False)
    for e in labels.iter_rows(named=True):
        inside = inside | ((pl.col("end") > e["start"]) & (pl.col("start") < e["end"]))
    return inside


@pytest.fixture(scope="module")
def job_detection():
    return detect_run(load_run(str(JOB)))


def test_the_co_tenant_that_halves_the_job_is_found_over_its_span_and_named_gpu(job_detection):
    det = job_detection
    w = det.windows
    co = w.filter(_overlap(w, _labels("gpu_cotenant")))
    assert co["anomalous"].mean() >= 0.5, co["anomalous"].mean()
    tops = co.filter("anomalous")["top_subsystem"].value_counts(sort=True)
    assert tops["top_subsystem"][0] == "gpu", tops
    cpu = w.filter(_overlap(w, _labels("cpu_contention")))
    assert cpu["anomalous"].any()
    assert cpu.filter("anomalous")["top_subsystem"].value_counts(sort=True)["top_subsystem"][0] == "cpu"


def test_fault_free_windows_of_the_job_stay_below_two_percent(job_detection):
    w = job_detection.windows
    calm = w.filter(~_overlap(w, _labels()))
    assert calm.height > 50
    assert calm["anomalous"].mean() <= 0.02, calm["anomalous"].mean()


def test_the_per_channel_rules_flag_a_third_of_the_calm_job(job_detection):
    """What the rules replace: per-core channels, the Z-score averaged over every feature and 4
    windows in a row flag a third of the job's fault-free windows (the test above: at most 2 %)."""
    run = load_run(str(JOB))
    old = detect_run(run, fold_cores=False, by_subsystem=False, min_run=4).windows
    calm = old.filter(~_overlap(old, _labels()))
    assert calm["anomalous"].mean() > 0.2


def test_the_episode_of_the_co_tenant_ranks_first_by_the_jobs_slowdown(job_detection):
    pace = read_job_pace(SET / "raw" / "gpu-a" / "steps.csv")
    eps = episode_pace(job_detection.episodes, pace)
    top = eps.sort("rank").row(0, named=True)
    assert top["subsystem"] == "gpu"
    assert 1.8 <= top["slowdown_low"] <= top["slowdown"] <= top["slowdown_high"] <= 2.3, top
    assert unexplained_slowdowns(pace, eps) == [] or all(r < 1.3 for *_, r in unexplained_slowdowns(pace, eps))


def test_the_collectors_start_up_is_found_and_never_flagged():
    """The raw recording scored whole: the first start's 4.9 s stall (48 missed ticks) is the
    collector's start-up, left out; no window inside it is scored."""
    run = read_collector_run(SET / "raw" / "gpu-a")
    s = collector_startup(run.frame)
    assert s.missed_ticks >= 40 and s.longest_gap_s > 4.0 and 10.0 < s.seconds < 30.0
    det = detect_run(run)
    assert det.windows["start"].min() >= s.end
    assert "collector's own start-up" in " ".join(det.warnings)
    assert det.config["trim"]["startup"]["missed_ticks"] == s.missed_ticks


@pytest.mark.parametrize("seconds", [12.0, 18.0])
def test_a_start_up_that_would_leave_less_than_a_window_is_kept_and_said(seconds):
    """The first 12 s (the start-up runs past the end) and 18 s (2 s after it) of a recording:
    scoring it without the start-up would leave less than a window (before: a numpy error on an
    empty frame), so the start-up is kept and the warning says so."""
    run = read_collector_run(SET / "raw" / "gpu-a")
    t0 = run.frame["timestamp"][0]
    short = Run(run.meta, run.frame.filter(pl.col("timestamp") < t0 + dt.timedelta(seconds=seconds)))
    s = collector_startup(short.frame)
    assert s.end is not None and (short.frame["timestamp"][-1] - s.end).total_seconds() < 3.0
    det = detect_run(short)
    assert det.windows.height > 0 and det.windows["start"].min() < s.end
    assert det.config["trim"]["startup"]["kept"] is True
    assert any("kept: less than one 3 s window" in w for w in det.warnings)


@pytest.mark.slow
def test_fault_free_windows_flagged_do_not_grow_with_the_cores():
    """Synthetic copies of the job's recording with 2, 16, 64 and 192 cores (per-core families
    copied, each copy shifted by up to 0.5 s): the share of fault-free windows flagged is the
    same at every size and at most 2 %."""
    run = load_run(str(JOB))
    shares = []
    for n in (2, 16, 64, 192):
        w = detect_run(Run(run.meta, with_cores(run.frame, n), run.warnings)).windows
        shares.append(float(w.filter(~_overlap(w, _labels()))["anomalous"].mean()))
    assert max(shares) <= 0.02, shares
    assert np.ptp(shares) <= 0.015, shares
