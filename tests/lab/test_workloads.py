"""The PyTorch workloads really train and infer (CPU, one thread, short)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys

import pytest

# torch is imported by the tests that use it, not at collection: every pytest-xdist worker
# collects this module, and importing torch costs ~2 s of CPU
pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")


@pytest.mark.parametrize(("model", "classes"), [("CNN", 10), ("MLP", 10), ("Transformer", 4)])
def test_models_map_synthetic_batches_to_class_scores(model, classes):
    import torch

    from reveal_lab.lab import build_model
    from reveal_lab.lab._workloads import _batch

    net = build_model(model)
    x, y = _batch(model, 4, torch.Generator().manual_seed(0))
    out = net(x)
    assert out.shape == (4, classes)
    assert int(y.max()) < classes and torch.isfinite(out).all()


def test_training_lowers_the_loss_and_logs_progress(tmp_path):
    from reveal_lab.lab import WORKLOADS, run_workload

    log = tmp_path / "progress.jsonl"
    s = run_workload("MLP", "train", 2.0, log_path=str(log))
    assert s["steps"] > 3 and s["samples"] == s["steps"] * WORKLOADS["MLP"].train_batch
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < math.log(10)  # better than chance
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert lines[0]["event"] == "start" and lines[-1]["steps"] == s["steps"]


@pytest.mark.slow
def test_workload_module_runs_as_a_process():
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "reveal_lab.lab._workloads",
            "--model",
            "CNN",
            "--phase",
            "infer",
            "--duration",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout.strip().splitlines()[-1])
    assert s["phase"] == "infer" and s["steps"] >= 1


def test_distributed_inference_is_refused():
    from reveal_lab.lab import run_workload

    with pytest.raises(ValueError, match="training"):
        run_workload("MLP", "infer", 1.0, world_size=2)
