"""Names, labels and plans of the lab dataset (no root needed)."""

from __future__ import annotations

import pytest

from reveal_lab.io import ms_to_stamp, parse_run_filename, read_labels, stamp_to_ms
from reveal_lab.lab import (
    DEFAULT_PLAN,
    FAULT_SUBSYSTEM,
    V2_HOSTS,
    WORKLOADS,
    FaultPlan,
    RunPlan,
    default_plan,
    file_name,
    plan_summary,
    run_stem,
    smoke_plan,
    v1_plan,
    v2_plan,
)
from reveal_lab.telemetry import TelemetryError


def test_stamps_round_trip_on_the_collectors_clock():
    ms = 1_795_290_217_340
    s = ms_to_stamp(ms)
    assert s == "2026-11-21 19:43:37.340"  # naive UTC, milliseconds
    assert stamp_to_ms(s) == ms


def test_file_names_follow_the_public_grammar():
    stem = run_stem("train", "DDPCNN", "ImageClassification", "synthetic", 1_795_290_217_340)
    name = file_name(stem, "labB")
    r = parse_run_filename(name)
    assert (r.prefix, r.model, r.task, r.dataset, r.host) == (
        "train",
        "DDPCNN",
        "ImageClassification",
        "synthetic",
        "labB",
    )
    assert r.start.isoformat() == "2026-11-21T19:43:37"
    with pytest.raises(ValueError, match="separator"):
        run_stem("train", "MY_MODEL", "Task", "d", 0)


def test_read_labels_parses_and_rejects_bad_rows(tmp_path):
    p = tmp_path / "labels.csv"
    p.write_text(
        "run,host,fault_type,start,end,expected_subsystem,magnitude\n"
        "r1,labA,cpu_contention,2026-11-21 19:43:37.340,2026-11-21 19:43:44.001,cpu,1\n"
    )
    lab = read_labels(p)
    assert lab["start"][0].microsecond == 340_000 and lab["end"][0].second == 44
    assert lab["scope"][0] == "episode"
    p.write_text(
        "run,host,fault_type,start,end,expected_subsystem\n"
        "r1,labA,cpu_contention,yesterday,2026-11-21 19:43:44.001,cpu\n"
    )
    with pytest.raises(TelemetryError, match="line 2") as e:
        read_labels(p)
    assert "start" in str(e.value)
    p.write_text("run,host,start,end\nr1,labA,2026-11-21 19:43:37.340,2026-11-21 19:43:44.001\n")
    with pytest.raises(TelemetryError, match="fault_type"):
        read_labels(p)


def test_v1_plan_covers_its_issue():
    slots = v1_plan()
    plans = [p for s in slots for p in s]
    for p in plans:
        p.validate()
    base = [p for p in plans if not p.faults]
    # baselines: every single-host workload x phase at least 3 times, and DDP baselines
    for model in WORKLOADS:
        for phase in ("train", "infer"):
            assert sum(1 for p in base if p.model == model and p.phase == phase and p.world_size == 1) >= 3
    assert sum(1 for p in base if p.world_size == 2) >= 3
    faults = [(p, f) for p in plans for f in p.faults]
    kinds = {f.fault_type for _, f in faults}
    assert kinds == set(FAULT_SUBSYSTEM) - {"config_threads", "config_irq_imbalance"}
    losses = {f.magnitude for _, f in faults if f.fault_type == "packet_loss"}
    assert losses == {0.001, 0.002, 0.01}
    assert all(p.world_size == 2 for p, f in faults if f.fault_type in ("packet_loss", "config_cpu_quota"))
    for p, f in faults:
        if f.at_s is not None:  # episodes of 5-15 s with calm before and after
            assert 5 <= f.for_s <= 15 and f.at_s >= 5 and f.at_s + f.for_s <= p.duration_s - 5
    # episodes of one run do not overlap
    for p in plans:
        spans = sorted((f.at_s, f.at_s + f.for_s) for f in p.faults if f.at_s is not None)
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_plan_validation_rejects_bad_plans():
    with pytest.raises(ValueError, match="does not end"):
        RunPlan("MLP", "train", ("labA",), 10, (FaultPlan("cpu_contention", "labA", 1, 8, 5),)).validate()
    with pytest.raises(ValueError, match="DDP"):
        RunPlan("MLP", "infer", ("labA", "labB")).validate()
    with pytest.raises(ValueError, match="fault on labB"):
        RunPlan("MLP", "train", ("labA",), 10, (FaultPlan("cpu_contention", "labB", 1, 2, 2),)).validate()
    with pytest.raises(ValueError, match="unknown lab model"):
        RunPlan("ResNet", "train").validate()
    assert smoke_plan()[0][0].fault_name == "cpu_contention@1"
    with pytest.raises(ValueError, match="whole-run configuration"):
        RunPlan("CNN", "train", ("a", "b", "c"), 90, (FaultPlan("config_threads", "b", 4, 10, 5),)).validate()
    with pytest.raises(ValueError, match="host_quota"):
        RunPlan("CNN", "train", ("a", "b"), 90, host_quota=0).validate()


def test_config_faults_and_grades_without_root():
    from reveal_lab.lab import LabError, LabHost, make_fault

    h = LabHost("labB", "10.0.0.2", 1, "vlabB")
    f = make_fault("config_threads", h, 4.0)
    f.start()
    f.stop()
    lab = f.label()
    assert (lab["fault_type"], lab["magnitude"], lab["unit"], lab["expected_subsystem"]) == (
        "config_threads",
        4.0,
        "threads",
        "cpu",
    )
    with pytest.raises(LabError, match="whole number"):
        make_fault("config_threads", h, 1.5).start()
    with pytest.raises(LabError, match="duty cycle"):
        make_fault("storage_read", h, 512.0).start()  # v2: magnitude is a duty cycle in (0, 1]
    assert make_fault("config_irq_imbalance", h).expected_subsystem == "network"


def test_v2_plan_is_the_default_and_meets_the_issue():
    assert DEFAULT_PLAN == "v2" and default_plan is v2_plan
    slots = v2_plan()
    plans = [p for s in slots for p in s]
    for p in plans:
        p.validate()
    s = plan_summary(slots)
    assert s["minutes"] <= 100 and s["seconds"] >= sum(p.duration_s for p in plans)  # recordable in 100 min
    assert min(p.duration_s for p in plans) >= 90
    # >= 5 fault-free repeats of every workload, DDP on three hosts included
    assert len(s["fault_free_repeats"]) == 7 and min(s["fault_free_repeats"].values()) >= 5
    # every episode fault at >= 2 magnitudes, each magnitude in >= 2 episodes; the loss grades of the issue
    episodic = {"cpu_contention", "memory_pressure", "storage_read", "packet_loss"}
    assert episodic <= set(s["episodes"])
    for ft in episodic:
        mags = s["episodes"][ft]
        assert len(mags) >= 2 and min(mags.values()) >= 2, (ft, mags)
    assert set(s["episodes"]["packet_loss"]) == {0.001, 0.002, 0.01}
    assert set(s["episodes"]["cpu_contention"]) == {1.0, 2.0}
    # calm before the first and after the last episode of every run (>= 10 s)
    for p in plans:
        eps = sorted((f.at_s, f.at_s + f.for_s) for f in p.faults if f.at_s is not None)
        if eps:
            assert eps[0][0] >= 10 and eps[-1][1] <= p.duration_s - 10
            assert all(a[1] < b[0] for a, b in zip(eps, eps[1:], strict=False))
    # case studies: >= 3 runs per side, DDP on >= 3 hosts under a quota that leaves headroom
    assert s["case_runs"]["ddp:before"] >= 3
    assert {k for k in s["case_runs"] if k.endswith(":after")} == {"irq:after", "threads:after", "loss:after"}
    assert min(s["case_runs"].values()) >= 3
    ddp = [p for p in plans if p.world_size > 1]
    assert all(p.hosts == V2_HOSTS and len(p.hosts) >= 3 and p.host_quota is not None for p in ddp)
    cores = {h: i % 2 for i, h in enumerate(V2_HOSTS)}  # setup_hosts' default on a 2-core machine
    per_core = {c: sum(p.host_quota for h in p.hosts if cores[h] == c) for p in ddp[:1] for c in (0, 1)}
    assert max(per_core.values()) <= 0.9  # no core saturated by the ranks
    assert s["hosts"] == V2_HOSTS


def test_record_cli_dry_run_and_bad_arguments(capsys):
    from reveal_lab.cli import main

    assert main(["record", "--plan", "v1", "--slots", "0-2,39", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 + 5 and lines[3].startswith("slot 39: DDPCNN/train")
    assert main(["record", "--dry-run"]) == 0  # v2 by default
    out = capsys.readouterr().out
    assert "52 of 52 slots" in out and "DDPCNN/train on labA+labB+labC" in out
    minutes = float(out.split("estimated recording time: ")[1].split()[0])
    assert minutes <= 100
    # a warm-up per workload (6 single-host + DDP): 7 runs, each its length + 1 s calm + 15 s overhead
    assert main(["record", "--dry-run", "--warmup", "15s"]) == 0
    out = capsys.readouterr().out
    assert "7 warm-up runs of 15 s" in out
    warm = float(out.split("estimated recording time: ")[1].split()[0])
    assert warm == pytest.approx(minutes + 7 * 31 / 60, abs=0.11)
    with pytest.raises(SystemExit):
        main(["record", "--dry-run", "--warmup", "soon"])
    err = capsys.readouterr().err
    assert "argument --warmup: expected a duration from 1ms to 24h" in err and "'soon'" in err
    for argv, msg in (
        (["--plan", "smoke", "--repeats", "2"], "--repeats applies to the v1 and v2 plans only"),
        (["--slots", "1-"], "'1-' is not a slot number"),
        (["--slots", "0,x"], "'x' is not a slot number"),
        (["--slots", "52"], "outside the plan's slots 0-51"),
        (["--plan", "v3"], "unknown plan 'v3'"),
    ):
        assert main(["record", *argv, "--dry-run"]) != 0
        assert msg in capsys.readouterr().err
