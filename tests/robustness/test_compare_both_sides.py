"""``scripts/compare_reproductions.py A B`` reads both sides: a file only one side holds is
a difference, whichever side it is on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import CLI_LIMIT_S, ROOT


def _compare(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "compare_reproductions.py"), str(a), str(b)],
                          capture_output=True, text=True, timeout=CLI_LIMIT_S, cwd=ROOT)


def _reproduction(folder: Path, tables: dict[str, str]) -> Path:
    (folder / "tables").mkdir(parents=True)
    for name, text in tables.items():
        (folder / "tables" / f"{name}.csv").write_text(text)
    return folder


def test_an_empty_a_against_a_full_b_differs(tmp_path):
    a = _reproduction(tmp_path / "a", {})
    b = _reproduction(tmp_path / "b", {"table4_detection_summary": "a\n1\n"})
    res = _compare(a, b)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"missing: tables/table4_detection_summary.csv (not in {a})" in res.stdout


@pytest.mark.slow
def test_a_missing_some_of_bs_files_differs(tmp_path):
    a = _reproduction(tmp_path / "a", {"fig2_detector_windows": "a\n1\n"})
    b = _reproduction(tmp_path / "b", {"fig2_detector_windows": "a\n1\n", "pruning_curve": "t\n0.5\n"})
    res = _compare(a, b)
    assert res.returncode == 1, res.stdout
    assert "1 equal" in res.stdout and f"tables/pruning_curve.csv (not in {a})" in res.stdout
    assert _compare(b, a).returncode == 1


def test_two_folders_without_tables_compare_nothing_and_say_so(tmp_path):
    res = _compare(_reproduction(tmp_path / "a", {}), _reproduction(tmp_path / "b", {}))
    assert res.returncode == 1 and "nothing was compared" in res.stdout
