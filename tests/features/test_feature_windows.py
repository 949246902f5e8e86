"""Sliding windows by time: gaps, jitter, under-filled windows, short runs."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest

from reveal_lab.config import WindowConfig
from reveal_lab.features import make_windows
from reveal_lab.telemetry import TelemetryError, TelemetryWarning

T0 = dt.datetime(2025, 5, 11, 12, 0, 0)
CFG = WindowConfig(window_s=3.0, stride_s=1.0, interval_s=0.1, min_fill=0.5)


def frame_at(ms: np.ndarray) -> pl.DataFrame:
    ts = pl.Series("timestamp", [T0 + dt.timedelta(milliseconds=int(m)) for m in ms]).cast(pl.Datetime("ms"))
    return pl.DataFrame({"timestamp": ts, "CPU:Busy%.-.h1[%]": np.arange(len(ms), dtype=float)})


def test_regular_grid_counts_rows_by_time():
    w = make_windows(frame_at(np.arange(100) * 100), CFG)  # 10 s at 100 ms
    # last window must end by t_last + interval = 10 s: starts 0..7 s
    assert w["window_id"].to_list() == list(range(8))
    assert (w["n_samples"] == 30).all()
    assert w["row_start"].to_list() == [10 * k for k in range(8)]
    assert (w["end"] - w["start"]).dt.total_milliseconds().unique().to_list() == [3000]
    assert w.columns == ["window_id", "start", "end", "row_start", "row_end", "n_samples"]


def test_jitter_assigns_rows_by_timestamp_not_position():
    rng = np.random.default_rng(3)
    ms = np.arange(100) * 100 + rng.integers(-30, 31, 100)  # ±30 ms jitter, still increasing
    ms[0] = 0
    w = make_windows(frame_at(ms), CFG)
    t = ms.astype(np.int64)
    for r in w.iter_rows(named=True):
        s = int((r["start"] - T0).total_seconds() * 1000)
        inside = np.flatnonzero((t >= s) & (t < s + 3000))
        assert (r["row_start"], r["row_end"]) == (inside[0], inside[-1] + 1)
        assert r["n_samples"] == inside.size


def test_gap_drops_and_reports_underfilled_windows():
    ms = np.concatenate([np.arange(0, 4000, 100), np.arange(9000, 15000, 100)])  # 5 s gap
    f = frame_at(ms)
    with pytest.warns(TelemetryWarning, match="windows dropped"):
        w = make_windows(f, CFG)
    with pytest.warns(TelemetryWarning):
        everything = make_windows(f, CFG, include_dropped=True)
    dropped = everything.filter(~pl.col("kept"))
    assert dropped.height > 0
    assert (dropped["n_samples"] < 15).all()
    assert set(w["window_id"]).isdisjoint(set(dropped["window_id"]))
    assert w.height + dropped.height == everything.height
    # window ids stay on the stride grid across the gap
    assert ((w["start"] - T0).dt.total_milliseconds() == w["window_id"] * 1000).all()


def test_run_shorter_than_one_window_is_a_clear_error():
    with pytest.raises(TelemetryError, match="shorter than one 3 s window"):
        make_windows(frame_at(np.arange(20) * 100), CFG)  # 2 s


def test_coarse_sampling_is_detected_and_said():
    ms = np.arange(200) * 60_000  # one sample a minute
    cfg = WindowConfig(window_s=1800, stride_s=600, interval_s=0.1)
    with pytest.warns(TelemetryWarning, match="median step is 60000 ms"):
        w = make_windows(frame_at(ms), cfg)
    assert (w["n_samples"] == 30).all()


def test_non_increasing_timestamps_are_rejected():
    with pytest.raises(TelemetryError, match="strictly increasing"):
        make_windows(frame_at(np.array([0, 100, 100, 200] + list(range(300, 5000, 100)))), CFG)


def test_lazyframe_gives_the_same_windows():
    f = frame_at(np.arange(100) * 100)
    assert make_windows(f.lazy(), CFG).equals(make_windows(f, CFG))
