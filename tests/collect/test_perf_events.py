"""The perf probe's in-process counters (``perf_event_open``) and its fall-back chain.

Real syscalls on this machine (software events, which every Linux kernel has); denial is
simulated by injecting an opener that fails the way the kernel does, never by changing
``perf_event_paranoid``."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import time

import numpy as np
import pytest

from reveal_lab.collect import collect
from reveal_lab.collect._probe import ProbeContext
from reveal_lab.collect.probes._perf import Perf, PerfEvents, PerfStat, online_cpus, parse_perf_csv_line
from reveal_lab.collect.probes._perfevent import PerfEventError, open_counters, perf_event_open
from reveal_lab.io import read_collector_run

SW = ("task-clock", "context-switches", "cpu-migrations", "page-faults")


def _can_open_system_wide() -> bool:
    try:
        groups, _, _ = open_counters(("task-clock",), [online_cpus()[0]])
    except OSError:
        return False
    for g in groups:
        g.close()
    return True


needs_perf_events = pytest.mark.skipif(
    not _can_open_system_wide(), reason="perf_event_open is not permitted here (paranoid / no CAP_PERFMON)"
)


def _denied(attr: bytes, pid: int, cpu: int, group_fd: int, flags: int) -> int:  # noqa: ARG001
    raise PerfEventError(errno.EACCES, "Permission denied")


def test_task_clock_of_a_busy_loop_matches_its_cpu_time():
    try:
        groups, ok, _ = open_counters(("task-clock", "page-faults"), [-1], pid=0)
    except OSError as exc:
        pytest.skip(f"perf_event_open refused even for this thread: {exc}")
    (g,) = groups
    assert ok == ["task-clock", "page-faults"]
    try:
        v0, c0 = g.read(), time.thread_time_ns()
        x = 0
        while time.thread_time_ns() - c0 < 200_000_000:  # 0.2 s of this thread's CPU
            x += 1
        v1, c1 = g.read(), time.thread_time_ns()
        _ = [bytearray(1 << 16) for _ in range(64)]  # touch fresh pages
        v2 = g.read()
    finally:
        g.close()
    task_ns, cpu_ns = v1[0] - v0[0], c1 - c0
    assert 0.5 * cpu_ns < task_ns < 1.5 * cpu_ns, (task_ns, cpu_ns)
    assert np.all(v1 >= v0) and np.all(v2 >= v1)


@needs_perf_events
def test_system_wide_counts_do_not_decrease_and_cover_the_elapsed_time():
    cpus = online_cpus()
    groups, ok, _ = open_counters(SW, cpus)
    try:
        assert ok == list(SW) and len(groups) == len(cpus)  # one software group per CPU
        first = [g.read() for g in groups]
        t0 = time.monotonic_ns()
        reads = []
        for _ in range(5):
            time.sleep(0.03)
            reads.append([g.read() for g in groups])
        elapsed = time.monotonic_ns() - t0
    finally:
        for g in groups:
            g.close()
    prev = first
    for r in reads:
        for a, b in zip(prev, r, strict=True):
            assert np.all(b >= a)
        prev = r
    # a CPU's task-clock counts all of its time (idle included): about the elapsed time
    for a, b in zip(first, reads[-1], strict=True):
        assert 0.5 * elapsed < b[0] - a[0] < 1.5 * elapsed + 50e6


def test_open_counters_reports_unknown_and_denied_events():
    with pytest.raises(PerfEventError) as ei:
        open_counters(("task-clock",), [0], opener=_denied)
    assert ei.value.errno == errno.EACCES and "denied" in str(ei.value)

    def no_hw(attr, pid, cpu, group_fd, flags):  # a VM without a PMU
        if int.from_bytes(attr[:4], "little") == 0:
            raise PerfEventError(errno.ENOENT, "No such file or directory")
        return perf_event_open(attr, pid, cpu, group_fd, flags)

    try:
        groups, ok, bad = open_counters(("cycles", "task-clock", "ls_dc_accesses"), [-1], opener=no_hw, pid=0)
    except PerfEventError as exc:
        pytest.skip(f"perf_event_open refused even for this thread: {exc}")
    for g in groups:
        g.close()
    assert ok == ["task-clock"]
    assert set(bad) == {"cycles", "ls_dc_accesses"}


@needs_perf_events
@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_column_names_equal_the_perf_stat_child_probe():
    ctx = ProbeContext(host="h", interval_s=0.1, perf_events=SW)
    ev, st = PerfEvents(), PerfStat()
    ev.open(ctx)
    try:
        st.open(ctx)
    except Exception as exc:  # noqa: BLE001
        ev.close()
        pytest.skip(f"the perf stat child cannot count here: {exc}")
    try:
        assert [c.name("h") for c in ev.channels] == [c.name("h") for c in st.channels]
        assert [c.dataset_name("h") for c in ev.channels] == [c.dataset_name("h") for c in st.channels]
        assert ev.channels[0].name("h") == "Perf:Task_Clock.0.h[ms]"
    finally:
        ev.close()
        st.close()


@needs_perf_events
def test_collector_uses_perf_event_open_and_records_it(tmp_path):
    res = collect(tmp_path / "r", interval_s=0.05, duration_s=0.6, probes="perf", perf_events=SW,
                  host="h", handle_signals=False)  # fmt: skip
    assert res.samples >= 5
    run = read_collector_run(tmp_path / "r", view="raw")
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    assert meta["probe_info"]["perf"]["backend"] == "perf_event_open"
    col = run.frame["Perf:Task_Clock.0.h[ms]"].drop_nulls().to_numpy()
    assert len(col) >= 5 and np.all(np.diff(col) >= 0) and col[-1] > col[0]
    ds = read_collector_run(tmp_path / "r").frame
    assert "Perf:Context_Switches.h[count]" in ds.columns  # the all-core sum of the dataset view


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_denied_perf_event_open_falls_back_to_the_perf_stat_child(tmp_path):
    p = Perf()
    ctx = ProbeContext(host="h", interval_s=0.1, perf_events=SW, options={"perf_opener": _denied})
    try:
        p.open(ctx)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"the perf stat child cannot count here either: {exc}")
    try:
        assert p.info["backend"] == "perf stat"
        assert "Permission denied" in p.info["perf_event_open_error"]
        assert isinstance(p.impl, PerfStat)
    finally:
        p.close()


def test_denied_everywhere_skips_the_probe_with_one_reason(tmp_path, monkeypatch, caplog):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no perf binary: the child cannot start
    with caplog.at_level("INFO", logger="reveal_lab.collect"):
        res = collect(tmp_path / "r", interval_s=0.05, duration_s=0.3, probes="cpu,perf", host="h",
                      options={"perf_opener": _denied}, handle_signals=False)  # fmt: skip
    assert res.samples >= 1
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    why = meta["probes_skipped"]["perf"]
    assert "perf_event_open" in why and "Permission denied" in why and "not installed" in why
    assert "perf" not in meta["probes_used"]
    assert len([r for r in caplog.records if "probe perf skipped" in r.getMessage()]) == 1


def test_forcing_a_bad_backend_is_a_clear_error():
    with pytest.raises(ValueError, match="perf back-end 'nope'"):
        Perf().open(ProbeContext(host="h", interval_s=0.1, options={"perf_backend": "nope"}))


def test_online_cpus_matches_the_kernel():
    cpus = online_cpus()
    assert len(cpus) == len(set(cpus)) and len(cpus) <= (os.cpu_count() or 1)


@needs_perf_events
@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_in_process_task_clock_agrees_with_perf_stat_over_the_same_interval():
    """``perf stat -a -A`` runs inside the window between two reads of our counters: per
    CPU, our task-clock covers perf's interval plus its start and exit, never less."""
    cpus = online_cpus()
    groups, _, _ = open_counters(("task-clock",), cpus)
    try:
        before = {g.cpu: g.read()[0] / 1e6 for g in groups}
        res = subprocess.run(["perf", "stat", "-x,", "-a", "-A", "-e", "task-clock", "--", "sleep", "0.5"],
                             capture_output=True, timeout=60)  # fmt: skip
        after = {g.cpu: g.read()[0] / 1e6 for g in groups}
    finally:
        for g in groups:
            g.close()
    theirs = {}
    for line in res.stderr.splitlines():
        p = parse_perf_csv_line(line, interval=False)
        if p is not None and p[2] is not None:
            theirs[int(p[0])] = p[2]
    if not theirs:
        pytest.skip(f"perf stat counted nothing here: {res.stderr[-200:]!r}")
    for c, ms in theirs.items():
        ours = after[c] - before[c]
        assert ms * 0.95 <= ours <= ms + 2000, (c, ours, ms)  # ours spans perf's whole run


@needs_perf_events
def test_compiled_loop_reads_the_counters_itself(tmp_path):
    """With perf_event_open the perf probe needs no Python on its ticks: every tick runs in
    the compiled loop (no partial ticks), and each CPU's task-clock advances with the
    monotonic clock (a CPU's system-wide task-clock counts all of its time)."""
    pytest.importorskip("numba")
    res = collect(tmp_path / "r", interval_s=0.05, duration_s=1.0, probes="cpu,perf", perf_events=SW,
                  host="h", handle_signals=False)  # fmt: skip
    hot = res.meta["hot_loop"]
    if hot.get("burst_calls", 0) == 0:
        pytest.skip(f"the compiled loop did not run here: {hot}")
    assert hot["partial_ticks"] == 0 and hot["compiled_ticks"] >= 10, hot
    raw = read_collector_run(tmp_path / "r", view="raw").frame
    ts = raw["timestamp"]
    span_ms = (ts[-1] - ts[0]).total_seconds() * 1000  # sample times (ms resolution)
    for c in online_cpus():
        tc = raw[f"Perf:Task_Clock.{c}.h[ms]"].to_numpy()
        assert not np.isnan(tc).any() and np.all(np.diff(tc) >= 0)
        assert abs((tc[-1] - tc[0]) - span_ms) < 0.1 * span_ms + 20, (tc[-1] - tc[0], span_ms)
