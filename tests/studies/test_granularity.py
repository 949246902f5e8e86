import datetime as dt

import numpy as np
import polars as pl
import pytest

from reveal_lab.config import WindowConfig, get_preset
from reveal_lab.studies import GRANULARITIES, granularity_comparison, granularity_intervals, granularity_table
from reveal_lab.telemetry import TIMESTAMP_DTYPE, Run, RunMeta


def _run(run_id, seconds=60.0):
    n = int(seconds * 10)
    ts = [dt.datetime(2025, 1, 1) + dt.timedelta(milliseconds=100 * i) for i in range(n)]
    frame = pl.DataFrame(
        {"timestamp": ts, "Perf:IPC.h1[-]": np.zeros(n)}, schema_overrides={"timestamp": TIMESTAMP_DTYPE}
    )
    return Run(RunMeta(run_id, hosts=("h1",), workload="w"), frame)


def _truth_detector(episodes):
    """Flags every window that overlaps a known episode: a real, exact detector for the test."""

    def detect(run, wc: WindowConfig):
        starts = np.arange(0, 60 - wc.window_s + 1e-9, wc.stride_s)
        ends = starts + wc.window_s
        flags = np.array(
            [
                any(s < e1 and e > s1 for s1, e1 in episodes[run.meta.run_id])
                for s, e in zip(starts, ends, strict=True)
            ]
        )
        return pl.DataFrame({"host": "h1", "start_s": starts, "end_s": ends, "anomalous": flags})

    return detect


def test_granularity_study_on_known_episodes():
    episodes = {"r1": [(20.0, 21.0)], "r2": [], "r3": [(10.0, 10.5), (40.0, 45.0)]}
    runs = [_run(r) for r in episodes]
    iv = granularity_intervals(runs, GRANULARITIES, detect=_truth_detector(episodes))
    r1 = iv.filter(pl.col("run_id") == "r1")
    # 3 s windows with 1 s stride overlapping (20, 21): windows starting 18, 19, 20 -> interval 18..23
    assert r1.filter(pl.col("granularity") == "3s/1s").select("start_s", "end_s").rows() == [(18.0, 23.0)]
    # 1.5 s / 0.5 s: windows starting 19.0 .. 20.5 -> 19.0..22.0
    assert r1.filter(pl.col("granularity") == "1.5s/0.5s").select("start_s", "end_s").rows() == [(19.0, 22.0)]
    # r2 has no anomalies: one null row per granularity
    assert iv.filter(pl.col("run_id") == "r2")["start_s"].null_count() == 3
    comp = granularity_comparison(iv)
    assert set(comp["pair"]) == {"3s/1s vs 1.5s/0.5s", "3s/1s vs 5s/2s", "1.5s/0.5s vs 5s/2s"}
    c = comp.filter((pl.col("run_id") == "r1") & (pl.col("pair") == "3s/1s vs 1.5s/0.5s")).row(0, named=True)
    assert c["iou"] == pytest.approx(3 / 5)
    assert c["hit_count"] == 1.0
    assert c["hit_length"] == pytest.approx(3 / 5)
    # r2: both empty -> IoU undefined, left out of Table 2 but counted
    t2 = granularity_table(comp)
    row = t2.filter((pl.col("pair") == "3s/1s vs 1.5s/0.5s") & (pl.col("measure") == "iou")).row(
        0, named=True
    )
    assert row["n"] == 2
    assert 0 < row["mean"] <= 1 and row["std"] >= 0


def test_the_study_detects_with_the_papers_decision_not_the_lone_run_defaults():
    """``detect_windows`` counts every window over a threshold and leaves the sentinel rule out
    (the paper's Table 2 compares the detectors' own decisions), while ``detect_run``'s defaults
    for a run alone drop a one-sample spike (8 windows in a row) and add the sentinel rule."""
    from reveal_lab.pipeline import detect_run
    from reveal_lab.studies import detect_windows, granularity_policy
    from reveal_lab.synth import make_run

    run = make_run(60, 40, seed=5).run
    col = [c for c in run.frame.columns if c != "timestamp"][3]
    vals = run.frame[col].to_numpy().copy()
    vals[200] = 1e9  # one sample, t = 20 s
    run = Run(run.meta, run.frame.with_columns(pl.Series(col, vals)), [])
    wc = WindowConfig(window_s=3.0, stride_s=1.0)
    win = detect_windows(run, wc, preset="smoke", policy=granularity_policy(trim=False))
    spike = (win["start_s"] <= 20.0) & (win["end_s"] > 20.0)
    assert win.filter(spike)["anomalous"].any()
    det = detect_run(run, preset=get_preset("smoke"), prune=False, trim=False)
    assert det.config["min_run_windows"] == 8 and det.config["sentinel_rule"] == "lone"
    assert det.summary["short_runs_dropped"] >= 1
