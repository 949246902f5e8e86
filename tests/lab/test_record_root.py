"""Re-record a tiny labelled run for real (root): three namespace hosts on a bridge, collectors,
DDP over gloo under a per-host CPU quota, packet loss and the IRQ-imbalance steering.

Uses host names of its own, unique per test process (``t<pid>A``/``B``/``C``, not the dataset's
``labA``/...), so it can run beside a recording and beside another copy of itself: setting up hosts
first tears down leftovers *by name*, which would kill a concurrent run's processes.
Skipped when not root or when ``ip``/``nsenter``/``iptables`` are missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.io import read_labels, read_meta
from reveal_lab.lab import (
    MAX_HOSTS,
    FaultPlan,
    LabError,
    LoadGate,
    RunPlan,
    bridge_namespace,
    build_dataset,
    lab_hosts,
    record_plans,
)

pytestmark = [pytest.mark.root, pytest.mark.slow]

NAMES = tuple(f"t{os.getpid() % 100000:05d}{c}" for c in "ABC")


def _record(slots: list, raw: Path, hosts: tuple[str, ...], subnet: str, calm_s: float, **kw) -> dict:
    """``record_plans`` with ``calm_s`` of calm before and after each run, and the default gate
    (measure and log, never wait) measuring the busiest processes over 0.2 s instead of 2 s
    before each slot: the readings are there, sooner."""
    kw.update(calm_before_s=calm_s, calm_after_s=calm_s, gate=LoadGate(gate=None, sample_s=0.2))
    return record_plans(slots, raw, host_names=hosts, subnet=subnet, **kw)


def _need_root():
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, cgroups, iptables)")
    missing = [t for t in ("ip", "nsenter", "iptables") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {missing} (scripts/bootstrap.sh installs iptables)")


def _netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _leftovers(names: tuple[str, ...] = NAMES) -> list[str]:
    left = [n for n in (*names, bridge_namespace(names)) if n in _netns()]
    for base in Path("/sys/fs/cgroup").glob("**/reveal_lab"):
        left += [str(base / n) for n in names if (base / n).exists()]
    return left


def test_hosts_are_torn_down_when_the_body_fails():
    _need_root()
    with pytest.raises(RuntimeError, match="boom"), lab_hosts(NAMES, subnet="10.78.0") as hosts:
        a, b, c = hosts
        assert {a.name, b.name, c.name, bridge_namespace(NAMES)} <= _netns()
        p = a.popen(["sleep", "60"])  # a process that must be killed by the teardown
        assert p.pid in a.pids()
        r = b.run(["cat", "/proc/net/dev"])
        assert b.veth in r.stdout and a.veth not in r.stdout  # the namespace has its own interfaces
        # spread: each host's network processing on its own core (RPS/XPS masks)
        assert set(c.steering().values()) == {f"{1 << c.core:x}"}
        assert set(b.steering().values()) == {f"{1 << b.core:x}"}
        raise RuntimeError("boom")
    assert p.wait(timeout=10) is not None
    assert _leftovers() == []


def test_record_a_tiny_ddp_run_with_packet_loss(tmp_path):
    _need_root()
    raw, out = tmp_path / "raw", tmp_path / "lab"
    faults = (
        FaultPlan("packet_loss", NAMES[1], 0.05, 1.0, 2.0),
        FaultPlan("config_irq_imbalance", NAMES[1], 1.0),
    )
    plan = RunPlan("MLP", "train", NAMES, 4.0, faults, host_quota=0.6, case="irq:after")
    try:
        prov = _record([[plan]], raw, NAMES, "10.78.0", 1.0)
    finally:
        leftovers = _leftovers()
    assert leftovers == [], f"not cleaned up: {leftovers}"
    slot = prov["slots"][0]
    assert "error" not in slot, slot.get("error")
    man = json.loads(next(raw.glob("*.run.json")).read_text())
    for hn, h in man["hosts"].items():  # while it ran: the quota, and every host steered to NAMES[1]'s core
        assert h["cpu_quota"] == pytest.approx(0.6), hn
        assert set(h["steering"].values()) == {"2"}, (hn, h["steering"])  # NAMES[1] is on core 1
    assert slot["gate_reading"]["passed"] and "other_load" in slot["gate_reading"]
    meta_rows, label_rows = build_dataset(raw, out)
    meta, labels = read_meta(out / "meta_lab.csv"), read_labels(out / "labels.csv")
    assert sorted(meta["host"].to_list()) == list(NAMES) and meta["world_size"].to_list() == [3, 3, 3]
    assert meta["model"][0] == "DDPMLP" and meta["run"].n_unique() == 1
    assert set(meta["case"]) == {"irq:after"}
    # the steering change is labelled on the hosts whose processing left their own core
    moved = sorted(hn for hn, h in man["hosts"].items() if h["core"] != man["hosts"][NAMES[1]]["core"])
    irq = labels.filter(pl.col("fault_type") == "config_irq_imbalance")
    assert moved and sorted(irq["host"]) == moved and (irq["scope"] == "run").all()
    assert sorted(set(labels["fault_type"])) == ["config_irq_imbalance", "packet_loss"]
    labels = labels.filter(pl.col("fault_type") == "packet_loss")
    assert labels["host"][0] == NAMES[1] and labels["magnitude"][0] == 0.05
    start, end = labels["start"][0], labels["end"][0]
    assert 1.5 <= (end - start).total_seconds() <= 5.0
    for row in meta.iter_rows(named=True):
        f = pl.read_parquet(out / row["source_file"].removeprefix("./"))
        assert f.height == row["n_rows"] > 40
        assert f["timestamp"][0] < start and f["timestamp"][-1] > end  # the episode lies inside the recording
        host = row["host"]
        net = [c for c in f.columns if c.startswith("NetworkInterStat_diff:tx_bytes.")]
        assert net == [f"NetworkInterStat_diff:tx_bytes.v{host}.{host}[Bytes]"]  # only its own veth
        assert f[net[0]].sum() > 10_000  # the gradients really crossed the veth
        assert any(c.startswith("NetworkTCPRetrans_diff:TcpRetransSegs.") for c in f.columns)
    assert Path(out / meta["source_file"][0].removeprefix("./")).name.startswith(
        "train_DDPMLPforImageClassification_"
    )


def test_setup_refuses_bad_host_lists():
    _need_root()
    for names in (tuple(f"x{i}" for i in range(MAX_HOSTS + 1)), ("x1", "x1"), ()):
        with pytest.raises(LabError, match="distinct host names"):
            with lab_hosts(names):
                pass


def test_warmup_runs_once_per_workload_and_stays_out_of_the_dataset(tmp_path):
    """``warmup_s``: one discarded run before a workload's first slot (not before its second,
    nor before a slot of the same workload with a fault), kept apart from the dataset."""
    _need_root()
    raw, out = tmp_path / "raw", tmp_path / "lab"
    hosts = NAMES[:1]
    base = RunPlan("MLP", "infer", hosts, 1.5)
    contention = (FaultPlan("cpu_contention", hosts[0], 1.0, 0.5, 0.5),)
    faulted = RunPlan("MLP", "infer", hosts, 1.5, contention, seed=1)
    try:
        prov = _record([[base], [faulted]], raw, hosts, "10.79.0", 0.5, warmup_s=1.0)
    finally:
        leftovers = _leftovers(hosts)
    assert leftovers == [], f"not cleaned up: {leftovers}"
    assert prov["warmup_s"] == 1.0
    first, second = prov["slots"]
    assert "error" not in first and "error" not in second, (first, second)
    assert "warmup" not in second  # the workload was warmed up before the first slot
    (stem,) = first["warmup"]["runs"]
    warm = json.loads((raw / "warmup" / f"{stem}.run.json").read_text())
    assert warm["plan"]["faults"] == [] and warm["plan"]["duration_s"] == 1.0
    assert warm["plan"]["case"] == "warmup"
    assert stem not in first["runs"] + second["runs"]
    meta, _ = build_dataset(raw, out)
    assert sorted(r["run"] for r in meta) == sorted(first["runs"] + second["runs"])  # no warm-up in the data


def test_a_workload_that_aborts_after_its_summary_is_kept(tmp_path, monkeypatch):
    """gloo's teardown can abort a DDP rank after a complete run (v3's slot 42): the workload
    prints its summary first, and the recorder keeps the run, with the exit status in its
    summary, instead of failing the slot. Simulated: the workload's interpreter is wrapped so
    that it exits 134 (SIGABRT's status) after a successful run."""
    import sys

    _need_root()
    wrapper = tmp_path / "python-aborting"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'"{sys.executable}" "$@"\n'
        "rc=$?\n"
        'if [ "$rc" = 0 ] && [ "$2" = "reveal_lab.lab._workloads" ]; then exit 134; fi\n'
        "exit $rc\n"
    )
    wrapper.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(wrapper))
    raw, out = tmp_path / "raw", tmp_path / "lab"
    hosts = NAMES[:1]
    try:
        prov = _record([[RunPlan("MLP", "infer", hosts, 1.0)]], raw, hosts, "10.80.0", 0.5)
    finally:
        leftovers = _leftovers(hosts)
    assert leftovers == [], f"not cleaned up: {leftovers}"
    (slot,) = prov["slots"]
    assert "error" not in slot, slot
    (stem,) = slot["runs"]
    manifest = (raw / f"{stem}.run.json").read_text()
    assert '"exit_code": 134' in manifest
    meta, _ = build_dataset(raw, out)
    assert [r["run"] for r in meta] == [stem]
