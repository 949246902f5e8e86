"""The labelled host set: its plan, and two tiny real recordings end to end (the real
collector, real jobs, the lab layout read back by the loaders and the trimming rule)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.evaluation import evaluate_dataset
from reveal_lab.io import load_run, read_labels, read_meta
from reveal_lab.lab import (
    HOST_JOBS,
    HostJob,
    HostRecordingPlan,
    LoadGate,
    build_host_set,
    host_set_plan,
    record_host_recording,
    record_host_set,
)
from reveal_lab.pipeline import POLICIES, trim_run

ROOT = Path(__file__).resolve().parents[2]


def test_plan_a_third_without_jobs_every_kind_lengths_and_calm_edges():
    plans = host_set_plan(30, seed=0)
    n_jobs = [len(p.jobs) for p in plans]
    assert n_jobs.count(0) == 10 and set(n_jobs) == {0, 1, 2}
    jobs = [j for p in plans for j in p.jobs]
    assert {j.kind for j in jobs} == set(HOST_JOBS)
    assert all(10 <= j.length_s <= 30 for j in jobs)
    for p in plans:
        ends = [(j.start_s, j.start_s + j.length_s) for j in p.jobs]
        assert all(a >= 15 and b <= 85 for a, b in ends)
        if len(ends) == 2:
            assert ends[1][0] - ends[0][1] >= 10 - 1e-9  # calm between the two jobs
    assert host_set_plan(30, seed=0) == plans and host_set_plan(30, seed=1) != plans
    assert plans[0].fault == "+".join(j.kind for j in plans[0].jobs) or plans[0].fault == "none"


def test_plan_refuses_what_does_not_fit():
    with pytest.raises(ValueError, match="do not fit"):
        host_set_plan(6, duration_s=60)
    with pytest.raises(ValueError, match="job kinds"):
        host_set_plan(3, kinds=["gpu_burn"])
    with pytest.raises(ValueError, match="n must be"):
        host_set_plan(0)


@pytest.mark.slow
def test_one_real_recording_builds_the_lab_layout(tmp_path):
    """No root needed: the collector and a CPU-bound job, then the dataset, read back."""
    plan = HostRecordingPlan(0, 8.0, (HostJob("cpu_1core", 3.0, 2.0),))
    man = record_host_recording(plan, tmp_path / "raw", work_dir=tmp_path, probes="-perf")
    assert man["collector_rc"] == 0 and len(man["labels"]) == 1
    meta, labels = build_host_set(tmp_path / "raw", tmp_path / "data", command="test")
    m = read_meta(tmp_path / "data" / "meta_lab.csv")
    lab = read_labels(tmp_path / "data" / "labels.csv")
    assert m.height == 1 and m["fault"].to_list() == ["cpu_1core"] and lab.height == 1
    assert lab["expected_subsystem"].to_list() == ["cpu"]
    run = load_run(tmp_path / "data" / m["source_file"][0].removeprefix("./"))
    assert not any(c.startswith("Perf") for c in run.frame.columns)  # the collector's --probes
    assert any(c.startswith("CPU") for c in run.frame.columns)
    ts = run.frame["timestamp"]
    assert ts.min() < lab["start"][0] < lab["end"][0] < ts.max()  # the job lies inside the recording
    # no workload span: detection scores the whole recording
    kept, trim = trim_run(run)
    assert trim.mode == "none" and kept.frame.height == run.frame.height
    readme = (tmp_path / "data" / "README.md").read_text()
    assert "Load average before and after" in readme and man["stem"] in readme
    # evaluate takes the set as it is: each recording detected alone, scored whole
    ev = evaluate_dataset(tmp_path / "data", mode="alone", policy=POLICIES["default"].with_(prune=False, min_run=1))
    assert ev.config["runs_scored"] == 1 and ev.config["trim"] == "auto" and ev.config["trimmed_s_per_run"] == 0
    assert ev.windows.height >= 3 and ev.episodes.height == 1


def _need_root():
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed")


@pytest.mark.root
@pytest.mark.slow
def test_two_tiny_recordings_with_the_script_end_to_end(tmp_path):
    """The script as the lead runs it, with 2 tiny recordings: one with a network send over the
    namespace pair and a disk write with fsync, one without a job; the pair is gone afterwards."""
    _need_root()
    ns = f"rlt{os.getpid() % 100000:05d}"
    jobs = (HostJob("net_send", 2.0, 2.0), HostJob("disk_write", 5.0, 2.0))  # 100 MiB sent at 50 MiB/s
    plans = [HostRecordingPlan(0, 9.5, jobs), HostRecordingPlan(1, 1.5)]  # the second: a calm recording, any length
    octet = 100 + os.getpid() % 100
    mans = record_host_set(
        plans,
        tmp_path / "raw",
        load_gate=None,
        net_ns=ns,
        net_addrs=(f"10.78.{octet}.1", f"10.78.{octet}.2"),
        gate=LoadGate(gate=None, sample_s=0.2),  # the readings over 0.2 s, not 2 s, before each recording
    )
    assert ns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert all(m["collector_rc"] == 0 for m in mans)
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "record_host_set.py"), "--build-only"]
        + ["--raw", str(tmp_path / "raw"), "--out", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    lab = read_labels(tmp_path / "data" / "labels.csv")
    assert lab["fault_type"].to_list() == ["net_send", "disk_write"]
    assert lab["expected_subsystem"].to_list() == ["network", "storage"]
    m = read_meta(tmp_path / "data" / "meta_lab.csv")
    assert sorted(m["fault"].to_list()) == ["net_send+disk_write", "none"]
    sent = m.filter(pl.col("fault") != "none")["source_file"][0]
    run = load_run(tmp_path / "data" / sent.removeprefix("./"))
    tx = run.frame[f"NetworkInterStat_diff:tx_bytes.{ns}0.vm[Bytes]"]
    during = run.frame.filter(pl.col("timestamp").is_between(lab["start"][0], lab["end"][0]))
    assert during[tx.name].sum() > 10 * 2**20 > tx.sum() - during[tx.name].sum()  # sent while the job ran
    assert "load average" in (tmp_path / "data" / "README.md").read_text().lower()
