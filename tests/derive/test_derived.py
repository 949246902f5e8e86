"""Derived metrics (Appendix B) and the single-host detection view."""

from __future__ import annotations

import datetime as dt
import warnings

import numpy as np
import polars as pl
import pytest

from reveal_lab.config import fixtures_dir
from reveal_lab.derive import add_derived, derive_plan, detection_view, is_cumulative
from reveal_lab.telemetry import TelemetryWarning, catalogue, classify, validate_frame

T0 = dt.datetime(2025, 4, 26, 13, 38, 18)


def frame(cols: dict[str, list[float] | np.ndarray], step_ms: int = 100) -> pl.DataFrame:
    n = len(next(iter(cols.values())))
    ts = pl.Series("timestamp", [T0 + dt.timedelta(milliseconds=step_ms * i) for i in range(n)]).cast(
        pl.Datetime("ms")
    )
    return pl.DataFrame({"timestamp": ts, **{k: np.asarray(v, dtype=float) for k, v in cols.items()}})


def test_perf_ratios_equal_their_definitions():
    rng = np.random.default_rng(0)
    cyc = rng.uniform(1e8, 3e8, 50)
    cyc[7] = 0.0
    ins = cyc * rng.uniform(0.5, 2.5, 50)
    br = rng.uniform(1e6, 1e7, 50)
    brm = br * rng.uniform(0.001, 0.05, 50)
    cr = rng.uniform(1e6, 1e7, 50)
    cm = cr * rng.uniform(0.01, 0.5, 50)
    l3 = cyc * 0.1
    f = frame(
        {
            "Perf:Instructions.htc-g004[count]": ins,
            "Perf:Cycles.htc-g004[count]": cyc,
            "Perf:Branches.htc-g004[count]": br,
            "Perf:Branch_Misses.htc-g004[count]": brm,
            "Perf:Cache_References.htc-g004[count]": cr,
            "Perf:Cache_Misses.htc-g004[count]": cm,
            "Perf:Cycle_activity_stalls_l3_miss.htc-g004[count]": l3,
        }
    )
    out = validate_frame(add_derived(f), strict_names=True)
    ipc = out["Derived:IPC.htc-g004[-]"].to_numpy()
    ok = cyc > 0
    assert np.allclose(ipc[ok], ins[ok] / cyc[ok], rtol=1e-15)
    assert out["Derived:IPC.htc-g004[-]"].null_count() == 1  # cycles == 0: undefined, not inf
    assert np.allclose(out["Derived:BranchMissRate.htc-g004[-]"].to_numpy(), brm / br)
    assert np.allclose(out["Derived:CacheMissRatio.htc-g004[-]"].to_numpy(), cm / cr)
    assert np.allclose(out["Derived:L3StallRatio.htc-g004[-]"].to_numpy()[ok], 0.1)
    # per-interval perf counts go up and down: not mistaken for cumulative counters
    assert "Perf:Instructions.htc-g004[count]" in out.columns
    assert classify("Derived:IPC.htc-g004[-]").subsystem == "cpu"
    assert classify("Derived:L3StallRatio.htc-g004[-]").subsystem == "memory"
    assert classify("Derived:CPUUtilization.-.h[%]").priority < classify("Derived:IPC.h[-]").priority


def test_cumulative_counters_become_diff_columns_and_utilizations():
    n = 40
    rng = np.random.default_rng(1)
    idle = np.cumsum(rng.integers(0, 5, n)).astype(float) + 1e6
    user = np.cumsum(rng.integers(0, 5, n)).astype(float) + 2e6
    system = np.cumsum(rng.integers(0, 2, n)).astype(float) + 5e5
    rx = np.cumsum(rng.integers(0, 10**6, n)).astype(float) + 1e12
    tx = np.cumsum(rng.integers(0, 10**6, n)).astype(float) + 3e11
    f = frame(
        {
            "CPU:user.-.n1[jiffies]": user,
            "CPU:system.-.n1[jiffies]": system,
            "CPU:idle.-.n1[jiffies]": idle,
            "NetworkInterStat:rx_bytes.ib0.n1[Bytes]": rx,
            "NetworkInterStat:tx_bytes.ib0.n1[Bytes]": tx,
            "Memory:MemTotal.n1[kB]": np.full(n, 1000.0),
            "Memory:MemAvailable.n1[kB]": np.linspace(900, 100, n),
            "Vmstat:nr_free_pages.n1[count]": np.arange(n, dtype=float),  # a level, though it only rises here
        }
    )
    plan = derive_plan(f, link_speed_mbps={"ib0": 100_000})
    out = add_derived(f, link_speed_mbps={"ib0": 100_000})
    assert set(plan["column"]) <= set(out.columns)
    assert "CPU:idle.-.n1[jiffies]" not in out.columns  # replaced by its differences
    assert np.allclose(out["CPU_diff:idle.-.n1[jiffies]"].to_numpy()[1:], np.diff(idle))
    assert out["CPU_diff:idle.-.n1[jiffies]"][0] is None
    assert "Vmstat:nr_free_pages.n1[count]" in out.columns
    d = {k: np.diff(v) for k, v in (("u", user), ("s", system), ("i", idle))}
    tot = d["u"] + d["s"] + d["i"]
    want = np.where(tot > 0, 100 * (1 - d["i"] / np.where(tot > 0, tot, 1)), np.nan)
    got = out["Derived:CPUUtilization.-.n1[%]"].fill_null(np.nan).to_numpy()[1:]
    assert np.allclose(got, want, equal_nan=True)
    mem = out["Memory:MemoryUtilization.n1[%]"].to_numpy()
    assert np.allclose(mem, 100 * (1000 - np.linspace(900, 100, n)) / 1000)
    net = out["NetworkInterStat_diff:NetworkUtilization.ib0.n1[%]"].to_numpy()[1:]
    assert np.allclose(net, 100 * 8 * (np.diff(rx) + np.diff(tx)) / (100_000 * 1e6 * 0.1))
    assert classify("NetworkInterStat_diff:NetworkUtilization.ib0.n1[%]").subsystem == "network"


def test_existing_columns_are_never_overwritten_and_diff_columns_left_alone():
    f = frame(
        {
            "Memory:MemTotal.h[kB]": [10.0] * 5,
            "Memory:MemAvailable.h[kB]": [5.0] * 5,
            "Memory:MemoryUtilization.h[%]": [1.0, 2.0, 3.0, 4.0, 5.0],
            "Storage_diff:sectors_read.h[sectors]": [0.0, 1.0, 2.0, 3.0, 4.0],
        }
    )
    out = add_derived(f)
    assert out["Memory:MemoryUtilization.h[%]"].to_list() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert out["Storage_diff:sectors_read.h[sectors]"].to_list() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert derive_plan(f).height == 0


def test_is_cumulative_rules():
    up = np.arange(10.0)
    assert is_cumulative("Storage:sectors_read.h[sectors]", up)
    assert not is_cumulative("Storage_diff:sectors_read.h[sectors]", up)
    assert not is_cumulative("Storage:sectors_read.h[sectors]", up[::-1])
    assert not is_cumulative("Turbostat:Busy%.-.h[%]", up)
    assert not is_cumulative("Vmstat:nr_dirty.h[count]", up)


def test_detection_view_reports_every_drop():
    f = frame(
        {
            "CPU:Busy%.-.h[%]": [1.0, 3.0, 2.0, 5.0],
            "Memory:Hugepagesize.h[kB]": [2048.0] * 4,
            "GPU: utilization.gpu.1.h[%]": [np.nan] * 4,
            "Turbostat:SMI.-.h[count]": [0.0] * 4,
            "Perf:IPC.h[-]": [np.nan, 0.7, np.nan, 0.9],
            "Collector:lag.h[us]": [120.0, 90.0, 4000.0, 110.0],
        }
    )
    view, cat = detection_view(f)
    assert view.columns == ["timestamp", "CPU:Busy%.-.h[%]", "Perf:IPC.h[-]"]
    reasons = dict(zip(cat["column"], cat["reason"], strict=True))
    assert reasons == {
        "CPU:Busy%.-.h[%]": None,
        "Memory:Hugepagesize.h[kB]": "static metric",
        "GPU: utilization.gpu.1.h[%]": "all values missing",
        "Turbostat:SMI.-.h[count]": "constant over the run",
        "Perf:IPC.h[-]": None,
        # the collector's own lag moves, but it is the instrument's state, not the host's
        "Collector:lag.h[us]": "instrument metric",
    }
    assert cat["used"].to_list() == [True, False, False, False, True, False]
    assert {"subsystem", "kind", "priority"} <= set(cat.columns)


def test_on_the_public_dataset_fixture():
    io = pytest.importorskip("reveal_lab.io")
    ds = io.open_dataset(fixtures_dir() / "reveal_sample")
    gpu = ds.index.filter(pl.col("platform") == "gpu")["run_id"][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        run = ds.load(gpu)
    out = add_derived(run.frame)
    host = run.meta.hosts[0]
    ins, cyc = run.frame[f"Perf:Instructions.{host}[count]"], run.frame[f"Perf:Cycles.{host}[count]"]
    ipc = out[f"Derived:IPC.{host}[-]"].to_numpy()
    ok = (cyc.to_numpy() > 0) & np.isfinite(ins.to_numpy())
    assert ok.any()
    assert np.allclose(ipc[ok], (ins / cyc).to_numpy()[ok])
    # GPU hosts store cumulative Storage counters: turned into per-interval differences
    storage = [c for c in out.columns if c.startswith("Storage")]
    assert storage and all(c.startswith("Storage_diff:") for c in storage)
    view, cat = detection_view(out)
    assert cat.filter(~pl.col("used")).height > 0 and (cat["reason"].is_null() == cat["used"]).all()
    assert set(view.columns) - {"timestamp"} == set(cat.filter(pl.col("used"))["column"])
    assert catalogue(view.columns).filter(pl.col("kind") == "static").height == 0
