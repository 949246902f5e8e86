"""``benchmarks/collector_cores.py --quick`` as a real subprocess: it runs and writes a
timing result of the harness's schema with the per-core trees, per-probe costs and goals
(its numbers are not checked: no timed assertions in the suite)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from reveal_lab.config import PROJECT_ROOT

BENCH = PROJECT_ROOT / "benchmarks"

pytest.importorskip("numba")


@pytest.mark.slow
def test_quick_run_writes_the_result_schema(tmp_path, monkeypatch):
    out = tmp_path / "collector_cores.json"
    res = subprocess.run(
        [sys.executable, str(BENCH / "collector_cores.py"), "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=PROJECT_ROOT,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(out.read_text())
    monkeypatch.syspath_prepend(str(BENCH))
    import _harness

    rows = _harness.validate_timing(doc)
    assert doc["benchmark"] == "collector_cores" and "--quick" in doc["command"]
    assert [h["cores"] for h in doc["hosts"]] == [2, 16]
    ticks = [r for r in rows if r["unit"] == "% of a core per 100 ms tick"]
    assert len(ticks) == 2 and all(r["alternative"]["name"].startswith("interpreted loop") for r in ticks)
    # per synthetic tree, /proc/interrupts and /proc/softirqs read as the collector does (changed
    # rows re-read) against a whole-file scan, on a tree that moves like a real host's
    reads = [r for r in rows if r not in ticks]
    assert len(reads) == 4 and all(r["unit"] == "µs of CPU" for r in reads)
    assert all(r["ours"]["name"] == "changed rows re-read" for r in reads)
    assert {r["case"].split(",")[0] for r in reads} == {"/proc/interrupts", "/proc/softirqs"}
    assert set(doc["goals"]) == {"16 cores", "192 cores", "this host"}
    assert doc["goals"]["16 cores"]["median_pct"] is not None
    for h in doc["hosts"]:
        run = h["compiled"]
        assert run["summary"]["n"] >= 5 and "interrupts" in run["probes_used"]
        probes = h["probes"]
        for name in ("cpu", "interrupts", "softirqs", "meminfo"):
            assert probes[name]["per_tick_us"] > 0 and probes[name]["proc_bytes"] > 0
        assert probes["interrupts"]["how"] == "batched compiled read + compiled ops"
        assert h["costliest_probes"] and all("per_tick_us" in probes[p] for p in h["costliest_probes"])
    two, sixteen = (h["probes"] for h in doc["hosts"])
    # per-core channels grow with the cores: /proc/stat's 8 fields per core and in total, plus 5
    assert two["cpu"]["channels"] == 3 * 8 + 5 and sixteen["cpu"]["channels"] == 17 * 8 + 5
    assert sixteen["softirqs"]["channels"] == 10 * 16
    sizes = [h["per_core_file_bytes"]["interrupts"] for h in doc["hosts"]]
    assert sizes[1] > sizes[0]
