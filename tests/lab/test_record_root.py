"""Re-record a tiny labelled run for real (root): namespaces, collectors, DDP over gloo, packet loss.

Uses host names ``rt<pid>A``/``rt<pid>B`` (not the dataset's ``labA``/``labB``, and unique to
this test process) so it can run beside a recording or another checkout's test run: with fixed
names, two runs on one machine tore down each other's namespaces ("Invalid netns value").
Skipped when not root or when ``ip``/``nsenter``/``iptables`` are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.lab import (
    FaultPlan,
    LabError,
    RunPlan,
    build_dataset,
    lab_hosts,
    read_labels,
    read_meta,
    record_plans,
)

pytestmark = [pytest.mark.root, pytest.mark.slow]

_TAG = f"rt{os.getpid() % 100000}"
NAMES = (f"{_TAG}A", f"{_TAG}B")


def _need_root():
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, cgroups, iptables)")
    missing = [t for t in ("ip", "nsenter", "iptables") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {missing} (scripts/bootstrap.sh installs iptables)")


def _netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _leftovers() -> list[str]:
    left = [n for n in NAMES if n in _netns()]
    for base in Path("/sys/fs/cgroup").glob("**/reveal_lab"):
        left += [str(base / n) for n in NAMES if (base / n).exists()]
    return left


def test_hosts_are_torn_down_when_the_body_fails():
    _need_root()
    with pytest.raises(RuntimeError, match="boom"), lab_hosts(NAMES, subnet="10.78.0") as hosts:
        a, b = hosts
        assert a.name in _netns() and b.name in _netns()
        p = a.popen(["sleep", "60"])  # a process that must be killed by the teardown
        assert p.pid in a.pids()
        r = b.run(["cat", "/proc/net/dev"])
        assert b.veth in r.stdout and a.veth not in r.stdout  # the namespace has its own interfaces
        raise RuntimeError("boom")
    assert p.wait(timeout=10) is not None
    assert _leftovers() == []


def test_record_a_tiny_ddp_run_with_packet_loss(tmp_path):
    _need_root()
    raw, out = tmp_path / "raw", tmp_path / "lab"
    plan = RunPlan("MLP", "train", NAMES, 6.0, (FaultPlan("packet_loss", NAMES[1], 0.05, 2.0, 2.0),))
    try:
        prov = record_plans(
            [[plan]], raw, host_names=NAMES, subnet="10.78.0", calm_before_s=1.0, calm_after_s=1.0
        )
    finally:
        leftovers = _leftovers()
    assert leftovers == [], f"not cleaned up: {leftovers}"
    slot = prov["slots"][0]
    assert "error" not in slot, slot.get("error")
    meta_rows, label_rows = build_dataset(raw, out)
    meta, labels = read_meta(out / "meta_lab.csv"), read_labels(out / "labels.csv")
    assert sorted(meta["host"].to_list()) == list(NAMES) and meta["world_size"].to_list() == [2, 2]
    assert meta["model"][0] == "DDPMLP" and meta["run"].n_unique() == 1
    assert labels.height == 1 and labels["host"][0] == NAMES[1] and labels["fault_type"][0] == "packet_loss"
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


def test_setup_refuses_three_hosts():
    _need_root()
    with pytest.raises(LabError, match="one or two"):
        with lab_hosts(("x1", "x2", "x3")):
            pass
