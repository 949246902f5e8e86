"""``python -m reveal_lab.features.warm`` (the bootstrap runs it) fills numba's cache with every
feature kernel a detection uses: a later process detecting a real lab run compiles nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from reveal_lab.config import data_dir

pytest.importorskip("numba")

DETECT = """
import json, sys
from reveal_lab.io import load_run
from reveal_lab.pipeline import detect_run
from reveal_lab.features.warm import compiled_stats
detect_run(load_run(sys.argv[1]))
print(json.dumps(compiled_stats()))
"""


@pytest.mark.slow
def test_a_warmed_cache_serves_a_real_detection(tmp_path):
    run = sorted((data_dir() / "train_separated").glob("*.parquet"))[0]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    warm = subprocess.run([sys.executable, "-m", "reveal_lab.features.warm"], env=env, capture_output=True,
                          text=True, timeout=600)
    assert warm.returncode == 0, warm.stderr
    assert "compiled now" in warm.stdout and " 0 compiled now" not in warm.stdout  # a cold cache
    done = subprocess.run([sys.executable, "-c", DETECT, str(run)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout.strip().splitlines()[-1])
    assert stats, "the detection used no feature kernel"
    assert {f: s for f, s in stats.items() if s["misses"]} == {}
    assert all(s["hits"] for s in stats.values())
