"""The GPU-host recorder (``scripts/record_gpu_host.py``): its CPU check records for real (the
collector, a small training job, one busy process), and the set builder reads what it wrote."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "record_gpu_host.py"

# found, not imported: every pytest-xdist worker collects this module (importing torch ~2 s of CPU)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")

#: what a lent GPU machine lacks of this project's environment (it has PyTorch, numpy, numba,
#: pyarrow, nvidia-ml-py): every process of the recording runs with these unimportable
ABSENT_THERE = ("polars", "tsfresh", "tslearn", "umap", "dtaidistance", "papermill", "dask", "distributed")


def _run(*args: str, timeout: float = 240, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env
    )


def _as_on_a_lent_machine(tmp_path: Path) -> dict:
    """An environment whose processes cannot import :data:`ABSENT_THERE` (a ``sitecustomize``
    on ``PYTHONPATH`` that blocks them), with the repository on the path as the recipe runs it."""
    site = tmp_path / "absent"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"import sys\nfor m in {ABSENT_THERE!r}:\n    sys.modules[m] = None\n")
    return {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}


def test_the_gpu_plan_prints_its_recordings_and_fits_a_ten_minute_slice():
    out = _run("--plan", "gpu", "--print", timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    kinds = ("gpu_cotenant_compute", "gpu_cotenant_bandwidth", "pcie_h2d", "loader_cpu", "host_memory", "storage_write")
    for k in kinds:
        assert any(k in line for line in lines), (k, lines)
    total = float(lines[-1].split()[1])
    assert 6 * 30 < total < 540, total  # six recordings and a calm one, with room for the start in 600 s


def test_an_unknown_recording_is_refused_with_the_plan_names():
    out = _run("--plan", "smoke", "--only", "nosuch", "--print", timeout=60)
    assert out.returncode == 2
    assert "--only nosuch" in out.stderr and "smoke-cpu" in out.stderr


@pytest.mark.slow
def test_a_smoke_recording_without_the_projects_environment_builds_into_a_set(tmp_path):
    env = _as_on_a_lent_machine(tmp_path)
    blocked = subprocess.run([sys.executable, "-c", "import polars"], capture_output=True, env=env, timeout=60)
    assert blocked.returncode != 0, "the stand-in for a lent machine must lack polars"
    raw = tmp_path / "raw"
    out = _run("--plan", "smoke", "--raw", str(raw), "--no-warm", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    rec = raw / "smoke-cpu"
    labels = json.loads((rec / "labels.json").read_text())
    job, (fault,) = labels["job"], labels["faults"]
    assert labels["collector_exit"] == 0 and job["rc"] == 0
    assert labels["collector_popen"] < job["start"] < fault["start"] < fault["end"] < job["end"]
    assert fault["kind"] == "loader_cpu" and fault["procs"] == 1
    assert 3.5 < fault["end"] - fault["start"] < 8
    assert labels["machine"]["cores"] >= 1 and len(labels["loadavg_before"]) == 3
    with open(rec / "steps.csv") as f:
        steps = list(csv.DictReader(f))
    assert len(steps) > 10
    ts = [float(s["t"]) for s in steps]
    assert ts == sorted(ts) and job["start"] <= ts[0] and ts[-1] <= job["end"]
    assert all(float(s["step_s"]) > 0 for s in steps)
    assert list(rec.glob("segment-*.parquet")) and (rec / "collect.log").exists()
    assert not list(raw.glob("gpu-host-load-*")), "the storage scratch file is removed"

    from reveal_lab.lab import build_gpu_host_set

    s = build_gpu_host_set([rec], tmp_path / "set")
    with open(s / "labels.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert row["fault_type"] == "loader_cpu" and row["expected_subsystem"] == "cpu"
    inside = [t for t in ts if fault["start"] <= t < fault["end"]]
    assert row["unit"] == "step time x"
    if inside:  # the job's slowdown needs steps inside the fault (a loaded machine may start it late)
        assert float(row["magnitude"]) > 0

    again = _run("--plan", "smoke", "--raw", str(raw), "--no-warm", timeout=60)
    assert again.returncode != 0 and "never overwritten" in again.stderr
    assert json.loads((rec / "labels.json").read_text()) == labels
