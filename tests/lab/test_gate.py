"""The recorder's load gate, driven by handed-in readings (no timing, no live load)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from reveal_lab.lab import (
    GATE_EXIT_CODE,
    GateRefused,
    LoadGate,
    ProcInfo,
    busiest_others,
    own_load,
    read_process_table,
)


class FakeMachine:
    """A clock that only moves when the gate sleeps, a scripted load average and lab CPU time."""

    def __init__(self, loads, own_rate=0.0, others=None):
        self.t = 1000.0
        self.loads = list(loads)
        self.own_rate = own_rate  # cores the lab burns (its cgroups' CPU time grows at this rate)
        self.others = others or {}  # pid -> (comm, cores)
        self.sleeps = []

    def clock(self):
        return self.t

    def sleep(self, s):
        self.sleeps.append(s)
        self.t += s

    def load(self):
        return self.loads.pop(0) if len(self.loads) > 1 else self.loads[0]

    def own_cpu(self):
        return self.own_rate * self.t

    def procs(self):
        table = {os.getpid(): ProcInfo("python", 5.0 + self.own_rate * self.t, own=True)}
        for pid, (comm, cores) in self.others.items():
            table[pid] = ProcInfo(comm, cores * self.t)
        return table

    def gate(self, **kw):
        return LoadGate(
            read_load=self.load,
            read_processes=self.procs,
            own_cpu=self.own_cpu,
            clock=self.clock,
            sleep=self.sleep,
            **kw,
        )


def test_own_load_follows_the_kernels_weighting():
    hist = [(0.0, 0.0), (600.0, 1200.0)]  # two cores for ten minutes
    assert own_load(hist, 600.0) == pytest.approx(2.0, abs=1e-3)
    assert own_load(hist, 660.0) == pytest.approx(2.0 * 0.36788, rel=1e-3)  # one time constant later
    assert own_load(hist[:1], 600.0) == 0.0  # one sample: no rate known
    assert own_load([(0.0, 0.0), (10.0, 5.0), (20.0, 5.0)], 20.0) < own_load([(0.0, 0.0), (10.0, 5.0)], 10.0)


def test_gate_subtracts_the_labs_own_load():
    # load 2.0, all of it the lab's own (two cores busy for a long time): passes at once
    m = FakeMachine([2.0], own_rate=2.0)
    g = m.gate(gate=0.5)
    g.note()
    m.t += 3600
    g.note()  # a slot's worth of history: the lab ran at 2 cores for an hour
    r = g.wait()
    assert r["passed"] and r["waited_s"] == g.sample_s  # just the one sample
    assert r["own_load"] == pytest.approx(2.0, abs=0.01) and r["other_load"] < 0.5
    # the same load without the lab's history is someone else's: the gate waits, then refuses
    m2 = FakeMachine([2.0], own_rate=0.0, others={4242: ("make", 1.9)})
    with pytest.raises(GateRefused, match="--load-gate 0.5") as e:
        m2.gate(gate=0.5, max_wait_s=60, poll_s=10).wait()
    assert "make (4242): 1.90" in str(e.value)
    assert e.value.reading["passed"] is False and e.value.exit_code == GATE_EXIT_CODE == 75


def test_gate_waits_until_the_machine_calms_down():
    m = FakeMachine([1.5, 1.2, 0.9, 0.4], others={7: ("stress", 1.0)})
    r = m.gate(gate=0.5, max_wait_s=600, poll_s=10, sample_s=2).wait()
    assert r["passed"] and r["loadavg1"] == 0.4
    # four readings (2 s samples each) and three polls of 10 s between them
    assert m.sleeps == [2, 10, 2, 10, 2, 10, 2]
    assert r["waited_s"] == sum(m.sleeps) == 38
    assert r["top_other_processes"][0] == {"pid": 7, "comm": "stress", "cores": 1.0}


def test_gate_off_measures_but_never_waits():
    m = FakeMachine([9.0])
    r = m.gate(gate=None).wait()
    assert r["passed"] and r["gate"] is None and r["other_load"] == 9.0 and m.sleeps == [2.0]
    with pytest.raises(ValueError, match=">= 0"):
        LoadGate(gate=-1)


def test_busiest_others_skips_the_lab_and_counts_new_processes():
    before = {1: ProcInfo("a", 10.0), 2: ProcInfo("lab", 0.0, own=True)}
    after = {1: ProcInfo("a", 10.5), 2: ProcInfo("lab", 9.0, own=True), 3: ProcInfo("new", 1.0)}
    top = busiest_others(before, after, 1.0, n=5)
    assert [r["comm"] for r in top] == ["new", "a"] and top[1]["cores"] == 0.5
    # a pid reused by another program: its old time is not subtracted
    assert busiest_others({5: ProcInfo("x", 50.0)}, {5: ProcInfo("y", 1.0)}, 1.0)[0]["cores"] == 1.0
    with pytest.raises(ValueError):
        busiest_others(before, after, 0.0)


def test_process_table_marks_the_recorder_and_its_children_as_own():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        table = read_process_table()
        assert table[os.getpid()].own and table[child.pid].own
        assert table[1].own is False  # init is nobody's child of ours
    finally:
        child.kill()
        child.wait(timeout=10)


def test_record_cli_rejects_a_bad_gate(capsys):
    from reveal_lab.cli import main

    with pytest.raises(SystemExit):
        main(["record", "--load-gate", "busy", "--dry-run"])
    assert "expected a load" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["record", "--load-gate", "-1", "--dry-run"])


def test_gate_readings_reach_the_dataset_readme(tmp_path):
    import json

    from reveal_lab.lab._provenance import provenance_readme

    raw, out = tmp_path / "raw", tmp_path / "out"
    raw.mkdir()
    out.mkdir()
    reading = {
        "loadavg1": 1.9,
        "own_load": 1.7,
        "other_load": 0.2,
        "waited_s": 12.0,
        "top_other_processes": [{"pid": 9, "comm": "sshd", "cores": 0.05}],
    }
    slot = {"slot": 3, "runs": ["r"], "gate_reading": reading}
    sessions = [{"load_gate": 0.5, "argv": ["record"], "slots": [slot]}]
    (raw / "recording.json").write_text(json.dumps({"sessions": sessions}))
    (out / "meta_lab.csv").write_text("run,model,phase,world_size,fault\nr,MLP,train,1,none\n")
    (out / "labels.csv").write_text("run,host,fault_type,start,end,expected_subsystem,magnitude\n")
    text = provenance_readme(raw, out)
    assert "| 3 | recorded | 1.90 | 1.70 | 0.20 | 12 | sshd 0.05 |" in text
    assert "load gate: 0.5" in text and "0.20 to 0.20" in text
    assert "Warm-ups" not in text
    # warm-ups, one of them failed, are named in the provenance
    slots = [
        {**slot, "warmup": {"runs": ["w"], "wall_s": 20.0}},
        {"slot": 4, "runs": ["r2"], "gate_reading": reading, "warmup": {"error": "workload aborted (-6)"}},
    ]
    sessions = [{"load_gate": 0.5, "warmup_s": 15.0, "argv": ["record"], "slots": slots}]
    (raw / "recording.json").write_text(json.dumps({"sessions": sessions}))
    text = provenance_readme(raw, out)
    assert "a discarded fault-free run of 15 s" in text
    assert "2 warm-up(s), 1 failed" in text and "before slot 4: workload aborted (-6)" in text


def test_waiting_and_blocked_lab_tasks_count_beyond_their_cpu_time():
    from reveal_lab.lab import own_load_from_counts

    # a workload and two busy loops on one core for ten minutes: 1 core of CPU time, load 3
    m = FakeMachine([3.0], own_rate=1.0)
    counts = iter([3] * 1000)
    g = m.gate(gate=0.5, own_tasks=lambda: next(counts))
    g.note()
    for _ in range(600):  # the recorder samples about once a second while a slot runs
        m.t += 1
        g.sample_tasks()
    g.note()
    r = g.wait()
    assert r["passed"] and r["own_load"] == pytest.approx(3.0, abs=0.05)
    # by CPU time alone the lab would own only 1 of the 3: the gate would wait for nothing
    assert own_load(g.history, m.t) == pytest.approx(1.0, abs=0.05)
    assert own_load_from_counts([], 10.0) == 0.0


def test_record_cli_reads_its_default_waits_and_rejects_bad_ones(capsys):
    # the default --gate-wait ("10min") once failed to parse only after the dry run, at recording
    from reveal_lab.cli import build_parser

    args = build_parser().parse_args(["record"])
    assert args.gate_wait == 600.0 and args.gate_poll == 10.0
    with pytest.raises(SystemExit):
        build_parser().parse_args(["record", "--gate-wait", "soon"])
    assert "--gate-wait" in capsys.readouterr().err


def _cache_reader(m, mb_per_s, start_kb=2_000_000.0):
    """The page cache of a machine whose kernel frees (or fills) ``mb_per_s(t)`` MB/s."""
    state = {"kb": start_kb, "t": m.t}

    def read():
        while state["t"] < m.t:  # integrate the rate second by second up to the clock
            state["kb"] += mb_per_s(state["t"]) * 1024
            state["t"] += 1
        return state["kb"]

    return read


def test_settle_waits_while_the_kernel_frees_page_cache():
    # the kernel frees 20 MB/s for the first 60 s (the v3 recording's first slot), then nothing
    m = FakeMachine([0.1])
    freeing = _cache_reader(m, lambda t: -20.0 if t < 1060 else 0.0)
    g = m.gate(settle_s=30, settle_mb_s=2.0, poll_s=10, read_cache_kb=freeing)
    r = g.settle()
    assert r["passed"] and abs(r["drift_mb_s"]) <= 2.0
    assert 60 <= r["waited_s"] <= 90 and r["settle_s"] == 30
    # a quiet cache passes after one window, and off reads nothing
    m2 = FakeMachine([0.1])
    r2 = m2.gate(settle_s=30, read_cache_kb=_cache_reader(m2, lambda t: 0.5)).settle()
    assert r2["passed"] and r2["waited_s"] == 30 and r2["drift_mb_s"] == pytest.approx(0.5, abs=0.05)

    def never():
        raise AssertionError("settle off must not read the page cache")

    off = FakeMachine([0.1]).gate(settle_s=0, read_cache_kb=never).settle()
    assert off == {"settle_s": 0.0, "passed": True}


def test_settle_fills_its_window_with_readings_that_come_late():
    # a real clock: every reading comes a little after the poll (the first recording with
    # --settle waited 14 min for a window that exact-time tests had always filled)
    m = FakeMachine([0.1])
    late = m.sleep

    def sleep(s):
        late(s + 0.013)

    g = LoadGate(
        settle_s=30, poll_s=10, clock=m.clock, sleep=sleep, read_cache_kb=_cache_reader(m, lambda t: 0.1)
    )
    r = g.settle()
    assert r["passed"] and 30 <= r["waited_s"] < 41
    g2 = LoadGate(
        settle_s=30, poll_s=10, max_wait_s=45, clock=m.clock, sleep=sleep,
        read_cache_kb=_cache_reader(m, lambda t: -5.0),
    )
    with pytest.raises(GateRefused, match="still changing"):
        g2.settle()


def test_settle_refuses_a_cache_that_never_stops_moving():
    m = FakeMachine([0.1])
    g = m.gate(settle_s=30, max_wait_s=120, read_cache_kb=_cache_reader(m, lambda t: -20.0))
    with pytest.raises(GateRefused, match=r"page cache is still changing: -20\.0 MB/s") as e:
        g.settle()
    assert e.value.reading["passed"] is False and e.value.reading["waited_s"] >= 120
    assert "--settle 0" in str(e.value)
    with pytest.raises(ValueError, match="settle_mb_s"):
        LoadGate(settle_s=10, settle_mb_s=0)


def test_read_page_cache_kb_reads_meminfo(tmp_path):
    from reveal_lab.lab import read_page_cache_kb

    assert read_page_cache_kb() > 0  # this machine's /proc/meminfo
    f = tmp_path / "meminfo"
    f.write_text("MemTotal: 100 kB\nCached:     2048 kB\n")
    assert read_page_cache_kb(str(f)) == 2048.0
    f.write_text("MemTotal: 100 kB\n")
    with pytest.raises(ValueError, match="no 'Cached:' line"):
        read_page_cache_kb(str(f))


def test_record_cli_settle_flags(capsys):
    from reveal_lab.cli import build_parser

    args = build_parser().parse_args(["record"])
    assert args.settle == 30.0 and args.settle_rate == 2.0 and args.note is None
    assert build_parser().parse_args(["record", "--settle", "off"]).settle == 0.0
    with pytest.raises(SystemExit):
        build_parser().parse_args(["record", "--settle-rate", "0"])
    assert "--settle-rate" in capsys.readouterr().err


def test_a_slot_recorded_again_supersedes_the_earlier_runs(tmp_path):
    import json

    from reveal_lab.lab import recorded_slots, supersede_runs
    from reveal_lab.lab._provenance import provenance_readme

    raw, out = tmp_path / "raw", tmp_path / "out"
    raw.mkdir()
    out.mkdir()
    old, new = "train_X_2026-01-01T00-00-00", "train_X_2026-01-02T00-00-00"
    other = "infer_Y_2026-01-01T00-00-00"
    for stem in (old, other):
        (raw / f"{stem}.run.json").write_text("{}")
        (raw / f"{stem}_labA").mkdir()
        (raw / f"{stem}_labA" / "metrics.parquet").write_bytes(b"x")
        (raw / f"{stem}_labA.collector.log").write_text("log")
    moved = supersede_runs(raw, [old])
    assert sorted(moved) == sorted([f"{old}.run.json", f"{old}_labA", f"{old}_labA.collector.log"])
    assert (raw / "superseded" / f"{old}_labA" / "metrics.parquet").read_bytes() == b"x"  # kept
    assert sorted(p.name for p in raw.glob("*.run.json")) == [f"{other}.run.json"]  # the other slot stays
    reading = {"loadavg1": 0.3, "own_load": 0.0, "other_load": 0.3, "waited_s": 2.0}
    reading["top_other_processes"] = []
    first = [
        {"slot": 0, "runs": [old], "gate_reading": reading},
        {"slot": 1, "runs": [other], "gate_reading": reading},
    ]
    settle = {"settle_s": 30.0, "settle_mb_s": 2.0, "drift_mb_s": -0.4, "waited_s": 30.0, "passed": True}
    again = [{"slot": 0, "runs": [new], "supersedes": [old], "gate_reading": reading}]
    sessions = [
        {"argv": ["record"], "slots": first},
        {"argv": ["record"], "note": "slot 0 ran during reclaim", "settle": settle, "slots": again},
    ]
    assert recorded_slots(sessions) == {0: [new], 1: [other]}
    (raw / "recording.json").write_text(json.dumps({"sessions": sessions}))
    (out / "meta_lab.csv").write_text("run,model,phase,world_size,fault\nr,MLP,train,1,none\n")
    (out / "labels.csv").write_text("run,host,fault_type,start,end,expected_subsystem,magnitude\n")
    text = provenance_readme(raw, out)
    assert "| 0 | superseded (recorded again later) |" in text and "| 1 | recorded |" in text
    assert f"* slot 0: replaces `{old}`" in text
    assert "-0.40 MB/s over 30 s (allowed 2)" in text and "note: slot 0 ran during reclaim" in text


def test_settle_on_the_real_clock_and_page_cache_returns_in_bounded_time():
    import time

    t0 = time.monotonic()
    r = LoadGate(settle_s=1.0, poll_s=0.25, settle_mb_s=100_000.0, max_wait_s=10).settle()
    assert r["passed"] and r["settle_s"] == 1.0 and "drift_mb_s" in r
    assert time.monotonic() - t0 < 10  # filled the window and passed; before the fix it never did
