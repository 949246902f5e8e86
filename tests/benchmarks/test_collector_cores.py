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
    assert len(rows) == 2 and all(r["unit"] == "% of a core per 100 ms tick" for r in rows)
    assert all(r["alternative"]["name"].startswith("interpreted loop") for r in rows)
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
