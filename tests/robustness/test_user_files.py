"""Nothing a user owns is overwritten: ``synth public`` into a folder holding the user's
dataset, and a ``detect`` input that lies inside the report folder it replaces."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .conftest import ROOT, assert_clean_error, cli, in_process

LAB_RUN = (
    ROOT / "data/lab/infer_separated/infer_MLPforImageClassification_synthetic_2026-11-26T08-12-33_labA.parquet"
)
OTHER_RUN = ROOT / "data/lab/infer_separated/infer_CNNforImageClassification_synthetic_2026-11-26T08-19-13_labA.parquet"
USER_FILES = {"Reveal_CPU.zip": b"the user's zip", "Reveal_GPU.zip": b"another", "meta_cpu.csv": b"a,b\n1,2\n"}


def test_synth_public_refuses_a_folder_holding_the_users_dataset(tmp_path):
    out = tmp_path / "public"
    out.mkdir()
    for name, data in USER_FILES.items():
        (out / name).write_bytes(data)
    res = cli("synth", "public", str(out), "--runs-per-workload", "1", "--seconds", "3")
    assert_clean_error(res, str(out), "not empty", "--overwrite", rc=1)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == USER_FILES
    assert sorted(p.name for p in tmp_path.iterdir()) == ["public"]  # no partial folder beside it


def test_synth_public_overwrite_replaces_the_folder_whole(tmp_path):
    out = tmp_path / "public"
    out.mkdir()
    (out / "meta_cpu.csv").write_bytes(b"old")
    res = cli("synth", "public", str(out), "--runs-per-workload", "1", "--seconds", "3", "--no-bad-inputs",
              "--overwrite")
    assert res.rc == 0, res.text
    assert sorted(p.name for p in out.iterdir()) == [
        "Reveal_CPU.zip", "Reveal_GPU.zip", "meta_cpu.csv", "meta_gpu.csv", "truth.csv"
    ]
    assert (out / "meta_cpu.csv").read_bytes() != b"old"
    assert "writing 4 runs" in res.err


@pytest.fixture(scope="module")
def pruned_report(tmp_path_factory) -> Path:
    """A report folder of ``detect`` (run here, in-process) holding a ``pruning.json`` fitted on
    the lab run (as ``detect`` writes one when it prunes)."""
    from reveal_lab.cli import main
    from reveal_lab.io import load_run
    from reveal_lab.pipeline import fit_pruning, save_pruning

    rep = tmp_path_factory.mktemp("first") / "reveal-report"
    assert main(["detect", str(LAB_RUN), "--out", str(rep)]) == 0
    if not (rep / "pruning.json").exists():
        save_pruning(fit_pruning([load_run(LAB_RUN)]), rep / "pruning.json")
    return rep


def _report_with_pruning(first: Path, rep: Path) -> bytes:
    """A copy of the report folder ``first`` at ``rep``; the bytes of its ``pruning.json``."""
    shutil.copytree(first, rep)
    return (rep / "pruning.json").read_bytes()


@pytest.mark.slow
def test_detect_keeps_a_pruning_input_that_lies_in_its_report_folder(tmp_path, pruned_report, capsys, monkeypatch):
    """In this process (the next test runs ``detect`` in its own)."""
    rep = tmp_path / "reveal-report"
    pruning = _report_with_pruning(pruned_report, rep)
    monkeypatch.chdir(tmp_path)
    again = in_process(capsys, "detect", str(OTHER_RUN), "--pruning", str(rep / "pruning.json"), "--out", str(rep))
    assert again.rc == 0, again.text
    assert "kept in the new report" in again.err
    assert (rep / "pruning.json").read_bytes() == pruning  # the input survives, byte for byte
    summary = json.loads((rep / "summary.json").read_text())
    assert summary  # the new report is there beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reveal-report"]


@pytest.mark.slow
def test_detect_with_a_relative_pruning_inside_the_default_report_folder(tmp_path, pruned_report):
    """The issue's spelling: default ``--out reveal-report``, a relative ``--pruning`` path."""
    before = _report_with_pruning(pruned_report, tmp_path / "reveal-report")
    res = cli("detect", str(OTHER_RUN), "--pruning", "reveal-report/pruning.json", cwd=tmp_path)
    assert res.rc == 0, res.text
    assert Path(tmp_path / "reveal-report" / "pruning.json").read_bytes() == before
