"""Reproduce's own measurements: run times per window on a real pipeline run, a short
live collector-overhead run, and the rows that say which machine they ran on."""

from __future__ import annotations

import shutil

import polars as pl
import pytest

from reveal_lab.features import make_windows
from reveal_lab.studies import (
    OVERHEAD_COLUMNS,
    OVERHEAD_REPEAT_COLUMNS,
    RUNTIME_COLUMNS,
    check_overhead,
    machine_info,
    machine_label,
    measure_collector_overhead,
    measure_runtimes,
    overhead_comparison,
    quiet_gate,
)
from reveal_lab.synth import make_run


def test_machine_label_names_model_cores_and_load():
    before = {"cpu_model": "CPU X", "cores": 2, "loadavg": [1.5, 1.0, 0.5]}
    after = {**before, "loadavg": [3.25, 1.0, 0.5]}
    assert machine_label(before, after) == "CPU X, 2 cores, load avg (1 min) 1.5 → 3.25"
    info = machine_info()
    assert info["cores"] >= 1 and len(info["loadavg"]) == 3 and info["cpu_model"]


def test_runtimes_rows_on_a_real_run():
    run = make_run(60, 90, seed=3).run
    n = min(make_windows(run.frame).height, 20)
    rt = measure_runtimes(run, max_windows=20, tsfresh_channels=4, tsfresh_windows=2)
    assert tuple(rt.columns) == RUNTIME_COLUMNS
    steps = dict(zip(rt["step"], rt["n"], strict=True))
    assert set(steps) == {
        "features_per_window", "parquet_per_window", "tsfresh_per_window", "zscore", "mahalanobis", "iforest",
        "end_to_end_per_window",
    }
    assert steps["features_per_window"] == steps["zscore"] == n and steps["tsfresh_per_window"] == 2
    assert (rt["seconds"] > 0).all()
    assert rt["machine"].str.contains(" cores, load avg").all()
    # every step repeated 5 times by default, each mean inside its interval, each spread inside its own
    assert (rt.filter(pl.col("step") != "tsfresh_per_window")["repeats"] == 5).all()
    assert ((rt["lo"] <= rt["seconds"]) & (rt["seconds"] <= rt["hi"])).all()
    assert ((rt["std_lo"] <= rt["std"]) & (rt["std"] <= rt["std_hi"])).all()
    assert rt["note"].str.contains("quiet gate passed|NOT quiet").all()


def _overhead(pct_100: float, pct_600: float, bytes_100: float = 5000.0) -> pl.DataFrame:
    return pl.DataFrame({"interval_ms": [100.0, 600.0], "process": ["collector"] * 2,
                         "pct_of_core": [pct_100, pct_600], "pct_lo": [pct_100 * 0.9, pct_600 * 0.9],
                         "pct_hi": [pct_100 * 1.1, pct_600 * 1.1], "bytes_per_s": [bytes_100, 900.0]})


def test_check_overhead_fails_on_impossible_figures():
    assert check_overhead(_overhead(0.5, 0.12)).height == 2
    # the collector's start-up inside the window: the same cost at 100 and 600 ms
    with pytest.raises(ValueError, match="at least 1.5x as much"):
        check_overhead(_overhead(12.5, 12.3))
    with pytest.raises(ValueError, match="no more than"):  # fewer bytes at the shorter interval
        check_overhead(_overhead(0.5, 0.12, bytes_100=800.0))
    with pytest.raises(ValueError, match="outside 0-"):  # a negative cost
        check_overhead(_overhead(0.5, -0.1))


def test_quiet_gate_says_when_the_machine_was_not_quiet():
    g = quiet_gate(-1.0, timeout_s=0.0)  # no load is at most -1 per core
    assert g["quiet"] is False and g["waited_s"] == 0.0 and g["limit"] < 0


def test_overhead_comparison_keeps_the_collector_and_perf_only():
    m = pl.DataFrame(
        {
            "interval_ms": [100.0, 600.0, 100.0],
            "process": ["collector", "collector", "perf stat"],
            "pct_of_core": [0.5, 0.1, None],
        }
    )
    s = pl.DataFrame(
        {
            "interval_ms": [100, 100, 200],
            "process": ["procfs", "loop", "perf"],
            "pct_of_core": [0.4, 0.05, 0.3],
        }
    )
    c = overhead_comparison(m, s, stored_label="stored")
    assert c.filter(pl.col("source") == "measured here")["pct_of_core"].to_list() == [0.5, 0.1]
    assert c.filter(pl.col("source") == "stored").select("process", "interval_ms").rows() == [
        ("collector", 100.0),
        ("perf stat", 200.0),
    ]


@pytest.mark.slow
def test_live_overhead_run_measures_the_collector():
    m = measure_collector_overhead(
        (100,), seconds=0.5, repeats=3, perf_interval_ms=100, start_timeout_s=180, quiet_timeout_s=0.0
    )
    df = m.table
    assert tuple(df.columns) == OVERHEAD_COLUMNS and tuple(m.repeats.columns) == OVERHEAD_REPEAT_COLUMNS
    col = df.filter(pl.col("process") == "collector").row(0, named=True)
    if col["pct_of_core"] is None:  # start-up not over within 180 s on a very loaded machine: said so
        assert "start-up not over" in col["note"]
        return
    assert col["pct_of_core"] > 0 and col["channels"] > 100 and col["bytes_per_s"] >= 0
    assert col["repeats"] == 3 and col["pct_lo"] <= col["pct_of_core"] <= col["pct_hi"]
    assert "settled" in col["note"] and col["quiet"] in (True, False)
    assert m.repeats.filter(pl.col("process") == "collector").height == 3
    perf = df.filter(pl.col("process") == "perf stat").row(0, named=True)
    if shutil.which("perf") is None:
        assert perf["pct_of_core"] is None and "not installed" in perf["note"]
    else:  # measured, or a row saying why perf could not run here
        assert perf["pct_of_core"] is not None or perf["note"]
