"""The collector on this machine's real procfs: rows, timestamps, CPU busy, probes
skipped, channel names and classification."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import polars as pl
import pytest
from collect_helpers import net_interfaces, run_collect

from reveal_lab.collect import collect, resolve_probes
from reveal_lab.io._collector import read_collector_run
from reveal_lab.telemetry import TelemetryError, catalogue, parse_metric_name, validate_frame

PROCFS = "procfs,-psi" if not os.path.exists("/proc/pressure") else "procfs"


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("c") / "run"
    res = run_collect(
        out,
        "--interval",
        "100ms",
        "--duration",
        "2s",
        "--probes",
        f"{PROCFS},gpu,cgroup",
        "--host",
        "node.a",
        "--cgroup-root",
        "/nonexistent/cgroup",
    )
    assert res.returncode == 0, res.stderr
    return out, res


@pytest.mark.slow
def test_rows_and_monotonic_timestamps(short_run):
    out, _ = short_run
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete"
    run = read_collector_run(out)
    frame = run.frame
    validate_frame(frame, strict_names=True)
    # 2 s at 100 ms is 20 deadlines; every one is either a row or a counted missed tick
    assert frame.height + meta["missed_ticks"] == 20
    # how many of them a loaded machine misses is a benchmark figure, not a test's
    assert frame.height == meta["samples"] > 0
    steps = frame.get_column("timestamp").diff().dt.total_milliseconds().drop_nulls()
    assert (steps > 0).all()
    # the steps are the interval, give or take scheduling jitter
    assert 90 <= steps.median() <= 110
    assert run.meta.hosts == ("node-a",)
    assert run.warnings == []


def test_unavailable_probes_are_reported_not_fatal(short_run):
    out, res = short_run
    meta = json.loads((out / "meta.json").read_text())
    skipped = meta["probes_skipped"]
    assert "cgroup" in skipped and "/nonexistent/cgroup" in skipped["cgroup"]
    if "gpu" in meta["probes_used"]:
        pytest.skip("this machine has a GPU")
    assert "gpu" in skipped and skipped["gpu"]
    # one clear log line per skipped probe
    assert sum("probe gpu skipped" in line for line in res.stderr.splitlines()) == 1
    assert {"cpu", "meminfo", "diskstats"} <= set(meta["probes_used"])
    # netdev needs an interface besides lo (absent in a network-less sandbox): then it is skipped
    if net_interfaces():
        assert "netdev" in meta["probes_used"]
    else:
        assert "netdev" in skipped and "lo" in skipped["netdev"], skipped
    for key in ("host", "kernel", "cpu_model", "interval_ms", "start_time", "clock", "gpu_models"):
        assert key in meta


def test_names_follow_the_public_grammar_and_classify(short_run):
    out, _ = short_run
    frame = read_collector_run(out).frame
    cols = frame.columns[1:]
    assert all(parse_metric_name(c) is not None for c in cols)
    assert "CPU:Busy%.-.node-a[%]" in cols and "Memory:MemTotal.node-a[kB]" in cols
    assert "NetworkTCPRetrans_diff:TcpRetransSegs.node-a[count]" in cols
    assert "NetworkProtocolCounts:TCP.node-a[count]" in cols
    assert any(c.startswith("Storage_diff:sectors_read.node-a") for c in cols)
    # per-interface columns exactly when this namespace has an interface besides lo
    assert any(c.startswith("NetworkInterStat_diff:rx_bytes.") for c in cols) == bool(net_interfaces())
    cat = catalogue(cols)
    assert cat.filter(~pl.col("known")).height == 0, cat.filter(~pl.col("known"))
    want = {
        "CPU": "cpu",
        "Memory": "memory",
        "Storage_diff": "storage",
        "NetworkInterStat_diff": "network",
        "NetworkTCPRetrans_diff": "network",
        "Nstat_diff": "network",
        "Interrupts_diff": "cpu",
        "Collector": "system",
    }
    if not net_interfaces():
        del want["NetworkInterStat_diff"]  # no interface besides lo: no per-interface columns
    for src, sub in want.items():
        got = set(cat.filter(pl.col("source") == src).get_column("subsystem"))
        assert got == {sub}, (src, got)


def test_raw_view_keeps_cumulative_counters(short_run):
    out, _ = short_run
    raw = read_collector_run(out, view="raw").frame
    ds = read_collector_run(out, view="dataset").frame
    c = "CPU:ctxt.node-a[count]"
    cum = raw.get_column(c)
    assert (cum.diff().drop_nulls() >= 0).all() and cum[0] > 0
    assert ds.get_column("CPU_diff:ctxt.node-a[count]").slice(1).to_list() == cum.diff().slice(1).to_list()
    # percentages add up per core
    parts = [
        f"CPU:{f}%.-.node-a[%]"
        for f in ("User", "Nice", "System", "Idle", "Iowait", "Irq", "Softirq", "Steal")
    ]
    total = ds.select(pl.sum_horizontal(parts)).to_series().slice(1)
    assert ((total - 100).abs() < 1e-6).all()


def _busy_loop(limit_s: float) -> subprocess.Popen:
    """A busy loop pinned to core 0 that prints the wall time it starts spinning at; it
    spins until killed (``limit_s`` only bounds it if the test dies first)."""
    code = (
        "import os,time\nos.sched_setaffinity(0,{0})\nt0=time.time()\nprint(t0,flush=True)\n"
        f"while time.time()<t0+{limit_s}: pass"
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_cpu_busy_rises_while_a_busy_loop_runs(tmp_path):
    out = tmp_path / "busy"
    child = None
    spawned = spinning = float("nan")

    import threading

    def start_busy():
        nonlocal child, spawned, spinning
        # collect() may take a second or more (JIT, a loaded machine) before its first sample:
        # wait for the run to start (channels.json), then leave it 1 s of samples before the loop
        deadline = time.monotonic() + 60
        while not (out / "channels.json").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(1.0)
        spawned = time.time()
        child = _busy_loop(60)
        spinning = float(child.stdout.readline())  # after the interpreter's start-up, however slow

    th = threading.Thread(target=start_busy)
    th.start()
    try:
        res = collect(out, interval_s=0.1, duration_s=3.0, probes="cpu", host="b", handle_signals=False)
    finally:
        th.join()
        if child is not None:
            child.kill()
            child.wait()
            child.stdout.close()
    assert res.status == "complete"
    f = read_collector_run(out).frame
    # select rows by the times they cover, not by row number: on a loaded machine ticks are
    # missed (rows shift) and the child's interpreter may take a while to start spinning
    t = f.get_column("timestamp").dt.epoch("ms").to_numpy() / 1000
    prev = np.concatenate([[np.nan], t[:-1]])
    busy = f.get_column("CPU:Busy%.0.b[%]").to_numpy()
    before = busy[(prev >= t[0]) & (t <= spawned)]  # whole intervals before the child existed
    during = busy[prev >= spinning + 0.01]  # whole intervals while it spun (it spins past the end)
    assert len(before) >= 3 and len(during) >= 3, (t[0], t[-1], spawned, spinning)
    before, during = before.mean(), during.mean()
    # the loop is pinned to core 0: that core goes (close to) fully busy
    assert during >= min(before + 20, 90), (before, during)
    assert during >= 85


def test_bad_arguments_raise_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown probe or group 'nosuch'"):
        resolve_probes("procfs,nosuch")
    with pytest.raises(ValueError, match="below the 10 ms minimum"):
        collect(tmp_path / "x", interval_s=0.001, duration_s=1)
    with pytest.raises(TelemetryError, match="meta.json is missing"):
        read_collector_run(tmp_path)


def test_existing_run_is_not_overwritten(tmp_path):
    out = tmp_path / "r"
    collect(out, interval_s=0.05, duration_s=0.2, probes="loadavg", handle_signals=False)
    with pytest.raises(FileExistsError):
        collect(out, interval_s=0.05, duration_s=0.2, probes="loadavg", handle_signals=False)
