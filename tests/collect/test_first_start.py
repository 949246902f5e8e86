"""A first start on a fresh host (an empty numba cache): ``reveal-lab collect`` as a real
child process compiles before sampling starts, then samples at the interval.

What is checked, and why it holds on a loaded 2-core runner:

* the cause, from the run itself: ``meta.json``'s ``compiled_code`` lists what numba
  compiled once sampling had begun (numba's own ``numba:compile`` events, with the
  thread): it must be empty, and the compilation must have happened before sampling;
* the first sample within 1 s of the start of sampling (the run's ``clock.mono_ns``);
* no gap over 200 ms between consecutive samples' timestamps (``t_mono_ns``). A gap
  over 200 ms is excused only when the collector used under 50 ms of CPU across it (its
  own ``Collector:cpu_time`` channel): it was then waiting for a loaded machine to run
  it, not working. A compilation (or any stall of the collector's own making) spends
  its CPU inside the gap (4.9 s of CPU in a 4.9 s gap on the GPU host), so it still
  fails the test, while the scheduler's delays on a busy runner do not.
"""

from __future__ import annotations

import json
import os

import numpy as np
import polars as pl
import pytest
from collect_helpers import run_collect

pytest.importorskip("numba")

GAP_NS = 200_000_000
FIRST_NS = 1_000_000_000
IDLE_CPU_US = 50_000


def _samples(run) -> pl.DataFrame:  # noqa: ANN001
    return pl.concat([pl.read_parquet(p) for p in sorted(run.glob("segment-*.parquet"))]).sort("seq")


@pytest.mark.slow
def test_first_start_with_an_empty_cache_has_no_gap(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    env.pop("REVEAL_LAB_COLLECT_DEFER", None)  # the default start, as a user runs it
    run = tmp_path / "run"
    res = run_collect(run, "--interval", "100ms", "--duration", "3s", timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    meta = json.loads((run / "meta.json").read_text())
    code = meta["compiled_code"]
    assert code["compiled_while_sampling"] == []
    assert code["start"] == "before sampling" and "burst" in code["compiled_before_sampling"]
    # (that the compiled loop then runs is tests/collect/test_deferred_start.py's: on a loaded
    # runner a 3 s run once ended with none of its ticks compiled, cause not found)
    f = _samples(run)
    assert f.height >= 10
    t = f["t_mono_ns"].to_numpy()
    assert t[0] - meta["clock"]["mono_ns"] <= FIRST_NS
    cpu = f[f"Collector:cpu_time.{meta['host']}[us]"].to_numpy()
    gaps, spent = np.diff(t), np.diff(cpu)
    busy_gaps = [
        (int(g) // 10**6, int(c) // 1000)
        for g, c in zip(gaps, spent, strict=True)
        if g > GAP_NS and c >= IDLE_CPU_US
    ]
    assert not busy_gaps, f"gaps over 200 ms with the collector busy (gap ms, CPU ms): {busy_gaps}"
