"""Names, labels and plans of the lab dataset (no root needed)."""

from __future__ import annotations

import pytest

from reveal_lab.io import parse_run_filename
from reveal_lab.lab import (
    FAULT_SUBSYSTEM,
    WORKLOADS,
    FaultPlan,
    RunPlan,
    default_plan,
    file_name,
    ms_to_stamp,
    read_labels,
    run_stem,
    smoke_plan,
    stamp_to_ms,
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


def test_default_plan_covers_the_issue():
    slots = default_plan()
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
    assert kinds == set(FAULT_SUBSYSTEM)
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


def test_record_cli_dry_run_and_bad_arguments(capsys):
    from reveal_lab.cli import main

    assert main(["record", "--plan", "default", "--slots", "0-2,39", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[-1].startswith("slot 39: DDPCNN/train")
    for argv, msg in (
        (["--plan", "smoke", "--repeats", "2"], "--repeats applies to the default plan only"),
        (["--slots", "1-"], "'1-' is not a slot number"),
        (["--slots", "0,x"], "'x' is not a slot number"),
        (["--slots", "40"], "the plan has slots 0-39"),
    ):
        assert main(["record", *argv, "--dry-run"]) != 0
        assert msg in capsys.readouterr().err
