"""Deferred start: with the compiled code in numba's cache, the collector takes its first
sample before that code is loaded (the first ticks scan in Python), then switches to the
compiled loop once a thread has loaded it; with an empty cache it compiles before its first
sample instead. Every tick is counted in one of the loop's kinds and the values agree.

The cache is filled once for the module (the cold start, a full compile of the collector's code:
the slow part), and both deferral settings then start on it: deferral off must load the compiled
code before the first sample even though the filled cache would allow deferring; and a start on
a synthetic host of 64 cores (``write_proc_tree``) loads that cache, compiling nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

SCRIPT = """
import json, os, sys, tempfile
from pathlib import Path
from reveal_lab.collect import collect, write_proc_tree
from reveal_lab.collect import PROBES, Channel, Probe
from reveal_lab.collect.probes import _scan

seen = []

class Witness(Probe):
    name, group = "test_witness", "procfs"
    def open(self, ctx):
        self.channels = [Channel("System", "witness", None, "-", dtype="i")]
    def sample(self, ints, floats):
        seen.append(_scan._FAST is not None)  # the compiled scanner is loaded
        ints[0] = len(seen)

probes, cores = (sys.argv[2], int(sys.argv[3])) if len(sys.argv) > 2 else ("cpu,meminfo,test_witness", 0)
if "test_witness" in probes:
    PROBES[Witness.name] = Witness  # for this process only (not in the group "procfs" otherwise)
with tempfile.TemporaryDirectory() as d:
    roots = {}
    if cores:  # a synthetic host of that many cores
        proc, sys_ = write_proc_tree(Path(d) / f"tree-{cores}", cores)
        roots = {"proc_root": str(proc), "sys_root": str(sys_)}
    res = collect(Path(d) / "r", interval_s=0.05, duration_s=float(sys.argv[1]),
                  probes=probes, handle_signals=False, **roots)
    out = {"seen": seen, "hot": res.meta["hot_loop"], "samples": res.samples, "status": res.status,
           "tables": res.meta["batch_read_tables"], "code": res.meta["compiled_code"],
           "n": res.meta["n_channels"]}
    if not cores:
        from reveal_lab.io import read_collector_run
        f = read_collector_run(Path(d) / "r", view="raw").frame
        busy = [c for c in f.columns if c.startswith("CPU:user.")]
        out["cpu_nulls"] = int(f.select(busy).null_count().sum_horizontal()[0])
    print(json.dumps(out))
"""


def _run(defer: str, cache: str, seconds: float = 1.0, *host: str) -> dict:
    """``SCRIPT`` in a child; ``host``: its probes and a synthetic host's cores (this host's
    procfs and ``cpu,meminfo,test_witness`` without)."""
    env = {**os.environ, "REVEAL_LAB_COLLECT_DEFER": defer, "NUMBA_CACHE_DIR": cache}
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(seconds), *host], capture_output=True, text=True,
                         timeout=600, env=env)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def cold_start(tmp_path_factory) -> tuple[str, dict]:
    """A numba cache folder filled by one collector start on it while empty, and that start's report."""
    cache = str(tmp_path_factory.mktemp("deferred") / "numba-cache")
    return cache, _run("1", cache, 0.3)  # an empty cache: compiled before the first sample


@pytest.mark.slow
def test_first_sample_comes_before_the_cached_code_is_loaded(cold_start):
    cache, first = cold_start
    assert first["code"]["start"] == "before sampling"
    assert "burst" in first["code"]["compiled_before_sampling"]
    assert first["seen"][0] is True and first["code"]["compiled_while_sampling"] == []
    out = _run("1", cache)  # now cached: loaded by a thread while the first ticks run
    assert out["status"] == "complete"
    assert out["code"] == {"start": "deferred", "compiled_before_sampling": [], "compiled_while_sampling": []}
    assert out["seen"][0] is False  # the first tick ran before the compiled code was loaded
    hot = out["hot"]
    assert hot["ticks_before_compiled"] >= 1
    assert hot["python_ticks"] + hot["partial_ticks"] + hot["compiled_ticks"] == out["samples"]
    assert out["cpu_nulls"] == 0  # the interpreted scan filled every tick


@pytest.mark.slow
def test_without_deferral_the_compiled_code_is_loaded_before_the_first_sample(cold_start):
    cache, _ = cold_start  # filled: deferring would be possible, and is not done
    out = _run("0", cache, 0.3)
    assert out["seen"][0] is True
    assert out["code"]["start"] == "before sampling"
    assert "ticks_before_compiled" not in out["hot"]
    assert out["tables"] >= 1


@pytest.mark.slow
def test_a_cache_filled_on_this_host_serves_a_host_of_other_cores(cold_start):
    cache, here = cold_start  # this host's /proc, an empty cache: compiled first
    assert here["code"]["start"] == "before sampling" and here["code"]["compiled_while_sampling"] == []
    # 64 cores, every procfs file: loaded, not compiled. Loading the cache took ~2 s of the run at
    # load 13 on 2 cores (41 ticks of 50 ms in Python first): 6 s leave the compiled ticks room
    there = _run("1", cache, 6.0, "procfs", "64")
    code = there["code"]
    assert code == {"start": "deferred", "compiled_before_sampling": [], "compiled_while_sampling": []}
    assert there["hot"]["compiled_ticks"] >= 1 and there["n"] > here["n"]
