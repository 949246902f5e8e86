"""What a baseline must share with a run, checked the same way by `detect` and `watch`
(`pipeline.check_metric_overlap`): most of its metrics, some of every subsystem it has, and
the same units; refused unless `--force`, then said."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.io import load_run
from reveal_lab.pipeline import BaselineMismatch, detect_run
from reveal_lab.synth import make_run
from reveal_lab.telemetry import Run, metric_columns

from .conftest import ROOT, assert_clean_error, cli
from .conftest import collected as collected_run


def _synthetic(seed: int) -> Run:
    sr = make_run(40.0, n_channels=40, seed=seed, run_id=f"r{seed}")
    return Run(dataclasses.replace(sr.run.meta, workload="W"), sr.run.frame, [])


def _in_megabytes(run: Run) -> tuple[Run, list[str]]:
    """The run with its ``[kB]`` metrics recorded in ``[MB]`` instead (values / 1024)."""
    kb = [c for c in metric_columns(run.frame) if c.endswith("[kB]")]
    frame = run.frame.with_columns((pl.col(c) / 1024).alias(c) for c in kb).rename(
        {c: c[: -len("[kB]")] + "[MB]" for c in kb}
    )
    return Run(run.meta, frame, []), kb


def test_a_metric_in_other_units_than_its_baseline_is_refused_naming_both_columns():
    run, kb = _in_megabytes(_synthetic(0))
    assert kb
    baseline = [_synthetic(1), _synthetic(2)]
    with pytest.raises(BaselineMismatch) as err:
        detect_run(run, baseline, prune=False, trim=False)
    said = str(err.value)
    assert kb[0] in said and kb[0].replace("[kB]", "[MB]") in said and "other units" in said, said
    forced = detect_run(run, baseline, prune=False, trim=False, force_baseline=True)
    assert any("other units" in w and "--force" in w for w in forced.warnings), forced.warnings
    same = detect_run(_synthetic(0), baseline, prune=False, trim=False)  # same units: no word
    assert not any("units" in w for w in same.warnings), same.warnings


GPU_RUN = next((ROOT / "data/gpu-host/host_separated").glob("host_TransformerforTraining_*.parquet"), None)
HOST_RUNS = sorted((ROOT / "data/host/recordings").glob("host_JobsforHost_*.parquet"))[:2]


@pytest.mark.skipif(GPU_RUN is None or len(HOST_RUNS) < 2, reason="data/gpu-host or data/host is not here")
def test_a_gpu_recording_against_baselines_without_a_gpu_is_refused(tmp_path):
    res = cli("detect", str(GPU_RUN), "--baseline", *map(str, HOST_RUNS), "--out", str(tmp_path / "r"))
    assert_clean_error(res, "none of the run's", "gpu metrics", "GPU: utilization.gpu.0", "--force", rc=1)
    assert not (tmp_path / "r").exists()


def _foreign_baseline(path: Path, n: int = 10) -> Path:
    """A baseline of another host holding ``n`` metrics (a lab run's first ones)."""
    lab = sorted((ROOT / "data/lab/infer_separated").glob("*.parquet"))[0]
    run = load_run(lab)
    run.frame.select("timestamp", *metric_columns(run.frame)[:n]).write_parquet(path)
    return path


@pytest.mark.slow
def test_watch_refuses_a_baseline_of_another_host_as_detect_does(tmp_path):
    collected = collected_run(tmp_path, "meminfo,loadavg,cpu", "4s")
    base = _foreign_baseline(tmp_path / "other_host.parquet")
    res = cli("watch", str(collected), "--baseline", str(base), "--idle-exit", "5s", limit=90)
    assert_clean_error(res, "the stream: the baseline shares", "--force", rc=1)
    assert "anomal" not in res.text.lower().split("error")[0], res.text  # nothing scored first
    forced = cli("watch", str(collected), "--baseline", str(base), "--idle-exit", "5s", "--force", limit=90)
    assert "Traceback" not in forced.text, forced.text
    assert "below the 50 % needed, used because of --force" in forced.text, forced.text
