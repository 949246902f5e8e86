"""The detection studies of ``scripts/studies/`` on the bundled lab data, as real subprocesses:
what each finds, that it says it is a study; and that bad input is refused by name (the script
run as ``__main__`` in this process: its argument checks need no interpreter of their own)."""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from reveal_lab.config import PROJECT_ROOT

STUDIES = PROJECT_ROOT / "scripts" / "studies"


def _study(name: str, tmp_path: Path, *args: str) -> dict:
    """Run ``scripts/studies/NAME.py ARGS --out TMP``; its result, which says it is that study."""
    out = tmp_path / f"{name}.json"
    cmd = [sys.executable, str(STUDIES / f"{name}.py"), *args, "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert (doc["schema"], doc["kind"], doc["study"]) == (2, "study", name)
    return doc


def _refused(monkeypatch: pytest.MonkeyPatch, name: str, *args: str) -> str:
    """The error of ``scripts/studies/NAME.py ARGS`` (run as ``__main__``), which must exit 2
    (a usage error)."""
    script = STUDIES / f"{name}.py"
    monkeypatch.setattr(sys, "argv", [str(script), *args])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        runpy.run_path(str(script), run_name="__main__")
    assert exc.value.code == 2, out.getvalue() + err.getvalue()
    return err.getvalue()


@pytest.mark.slow
def test_sentinel_study_finds_the_bundled_packet_loss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """v3: counters never non-zero in the fault-free runs move in every loss episode (5 of a
    window's 30 samples), and rarely if ever in fault-free windows; bad input is refused by name."""
    res = _study("sentinel_counters", tmp_path, "--min-samples", "5")["by_min_samples"]["5"]
    loss = {k: v for k, v in res["episodes_found"].items() if k.startswith("packet_loss")}
    assert len(loss) == 3 and all(v["found"] == v["episodes"] == 3 for v in loss.values())
    assert res["false_alarm_share"] < 0.01  # 0 since the collector's missed ticks are no sentinel
    assert "--min-samples" in _refused(monkeypatch, "sentinel_counters", "--min-samples", "0")


@pytest.mark.slow
def test_crosshost_references_study_on_the_bundled_ddp_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """v3, all 4 other fault-free runs as references (what evaluate uses): every whole-run label
    found on its host, no host of a fault-free run flagged; a number of references the data
    cannot give is refused by name."""
    res = _study("crosshost_references", tmp_path, "--refs", "4")
    v = res["by_refs"]["4"]
    assert res["fault_free_runs"] == 5 and res["labels"] == 8
    assert v["fault_free_hosts_judged"] == 15 and v["fault_free_hosts_flagged"] == 0
    assert v["labels_found"] == v["labels_judged"] == 40
    assert "--refs 1" in _refused(monkeypatch, "crosshost_references", "--refs", "1")
