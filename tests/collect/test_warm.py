"""The warm step fills numba's cache so that the next collector start loads its compiled
code instead of compiling it (checked from numba's own cache counters, not by timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

START = """
import json, sys, tempfile
from pathlib import Path
from reveal_lab.collect import collect
from reveal_lab.collect.warm import compiled_stats
with tempfile.TemporaryDirectory() as d:
    res = collect(Path(d) / "r", interval_s=0.05, duration_s=0.2, probes="procfs", handle_signals=False)
print(json.dumps({"stats": compiled_stats(), "hot": res.meta.get("hot_loop", {})}))
"""


def _run(args: list[str], cache: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "REVEAL_LAB_COLLECT_DEFER": "0"}
    env.pop("REVEAL_LAB_COLLECT_BURST", None)
    env.pop("REVEAL_LAB_COLLECT_BATCH", None)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
def test_warm_step_makes_the_next_start_load_from_cache(tmp_path):
    cache = str(tmp_path / "numba-cache")  # empty: a fresh install
    warm = _run(["-m", "reveal_lab.collect.warm"], cache)
    assert warm.returncode == 0, warm.stderr
    assert "[warm] collector compiled code cached" in warm.stdout
    assert "burst 1 compiled" in warm.stdout  # the cold cache really was cold
    start = _run(["-c", START], cache)
    assert start.returncode == 0, start.stderr
    out = json.loads(start.stdout.strip().splitlines()[-1])
    stats = out["stats"]
    assert {"scan", "batch_read", "burst"} <= set(stats)
    assert all(v["misses"] == 0 for v in stats.values()), stats  # nothing compiled on the start
    assert stats["burst"]["hits"] >= 1 and stats["batch_read"]["hits"] >= 1
    assert out["hot"]["burst_calls"] >= 1  # the compiled loop really ran


def test_warm_rejects_arguments():
    res = subprocess.run([sys.executable, "-m", "reveal_lab.collect.warm", "--bogus"], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert res.returncode == 2 and "takes no arguments" in res.stderr
