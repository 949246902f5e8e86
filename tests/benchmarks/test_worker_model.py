"""The worker model of ``benchmarks/public_scale.py`` (``benchmarks/_worker_model.py``): list
scheduling of a map step's tasks, a notebook's own seconds, the projection's lines and scaling,
and the scheduler's cost per task measured on a real local cluster."""

from __future__ import annotations

import importlib
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.config import PROJECT_ROOT

BENCH = PROJECT_ROOT / "benchmarks"


@pytest.fixture
def wm(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("_worker_model")


def test_makespan_is_list_scheduling_in_order(wm) -> None:  # noqa: ANN001
    # one long task first: the other worker takes the rest
    assert wm.makespan([4.0, 1.0, 1.0, 1.0], 2) == 4.0
    # one long task last: it starts when the first worker frees
    assert wm.makespan([1.0, 1.0, 1.0, 4.0], 2) == 5.0
    # more workers than tasks: the longest task
    assert wm.makespan([2.0, 3.0], 8) == 3.0
    # one worker: the sum
    assert wm.makespan([0.5, 1.5, 2.0], 1) == pytest.approx(4.0)
    # a serial scheduler: N empty tasks take N dispatches
    assert wm.makespan([0.0] * 10, 4, dispatch_s=0.1) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="workers"):
        wm.makespan([1.0], 0)


def test_model_wall_divides_only_the_map_steps(wm) -> None:  # noqa: ANN001
    steps = {"03-x": {"t": [1.0] * 8}, "04-y": {"u": [2.0] * 4}}
    serial = {"03-x": 5.0, "04-y": 1.0}
    assert wm.model_wall(steps, serial, 0) == pytest.approx(22.0)  # in process: everything in turn
    assert wm.model_wall(steps, serial, 1) == pytest.approx(22.0)
    assert wm.model_wall(steps, serial, 4) == pytest.approx(6.0 + 2.0 + 2.0)
    # 4 workers on 2 cores: as 2 workers
    assert wm.model_wall(steps, serial, 4, cores=2) == wm.model_wall(steps, serial, 2)


def test_projection_scales_tasks_and_fits_the_serial_part(wm) -> None:  # noqa: ANN001
    def measured(runs: int, nb_seconds: dict[str, float], per_run: float) -> dict:
        steps = [{"notebook": "03-x", "task": "t", "seconds_per_run": per_run}]
        return {"runs": runs, "notebook_seconds": nb_seconds, "map_steps": {"runs": runs, "steps": steps}}

    # 03: 1 s a run of tasks, its own work 10 s + 0.5 s a run; 05: 2 s + 0.01 s per comparison
    lo = measured(10, {"03-x.ipynb": 10 + 5 + 10, "05-dtw-reproducibility.ipynb": 2 + 0.01 * 10 * 2}, 1.0)
    hi = measured(40, {"03-x.ipynb": 10 + 20 + 40, "05-dtw-reproducibility.ipynb": 2 + 0.01 * 40 * 8}, 1.0)
    tasks = pl.DataFrame({"notebook": ["03-x"] * 40, "task": ["t"] * 40, "seconds": [1.0] * 40})
    p = wm.projection(lo, hi, tasks, 1000, (0, 10), dispatch_s=0.0, bytes_factor=2.0, dtw_comparisons=(2, 8))
    assert p["serial_lines"]["03-x"] == {"fixed_s": 10.0, "per_unit_s": 0.5, "unit": "run"}
    assert p["serial_lines"]["05-dtw-reproducibility"]["per_unit_s"] == pytest.approx(0.01)
    # 1,000 tasks of 2 s (twice the bytes); 03's own work 10 + 500 x 2; 05's 2 + 0.01 x 33,000 (its
    # traces are resampled to one length: not scaled by the bytes)
    serial = (10 + 0.5 * 1000 * 2) + (2 + 0.01 * 1000 * wm.DTW_COMPARISONS_REAL)
    assert p["hours"]["0"] == pytest.approx(round((2000 + serial) / 3600, 2))
    assert p["hours"]["10"] == pytest.approx(round((200 + serial) / 3600, 2))


def test_mean_member_bytes_reads_the_zips_directory(wm, tmp_path: Path) -> None:  # noqa: ANN001
    import zipfile

    with zipfile.ZipFile(tmp_path / "Reveal_GPU.zip", "w") as z:
        z.writestr("train_separated/a.txt", "x" * 100)
        z.writestr("train_separated/b.txt", "x" * 300)
        z.writestr("train_separated/.DS_Store", "x" * 5000)
    assert wm.mean_member_bytes(tmp_path) == 200.0
    assert wm.mean_member_bytes(tmp_path / "none") == 0.0


def test_dispatch_overhead_on_a_real_local_cluster(wm) -> None:  # noqa: ANN001
    pytest.importorskip("distributed")
    d = wm.dispatch_overhead(1, tasks=100, rounds=1)
    assert d["workers"] == 1 and d["tasks"] == 100
    assert d["seconds"] > 0 and d["tasks_per_s"] > 0
    assert d["dispatch_s"] == pytest.approx(d["seconds"] / 100, rel=1e-3, abs=1e-6)
