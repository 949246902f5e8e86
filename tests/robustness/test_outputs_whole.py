"""Nothing a user owns is deleted, and an output folder is all of one run: ``dataset export
--overwrite`` checks its inputs first and refuses a target that is, contains or lies inside
the source; ``detect`` writes its report beside ``--out`` and moves it into place, so an
interrupted run leaves the previous report as it was and a complete one leaves no stale file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reveal_lab.config import data_dir
from reveal_lab.io import StagedFolder, staged_folder

from .conftest import ROOT, assert_clean_error, cli, copy_lab_runs, in_process

LAB = data_dir()


def _lab_run() -> Path:
    return sorted((LAB / "train_separated").glob("*.parquet"))[0]


def _tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _folder(d: Path, files: dict[str, str]) -> Path:
    d.mkdir()
    for name, text in files.items():
        (d / name).write_text(text)
    return d


@pytest.fixture
def small_lab(tmp_path) -> Path:
    """Two runs and the tables of the bundled lab dataset, in a folder of their own."""
    import polars as pl

    from reveal_lab.io import read_meta

    src = copy_lab_runs(read_meta(LAB / "meta_lab.csv").head(2), tmp_path / "lab")
    (src / "labels.csv").write_text(pl.read_csv(LAB / "labels.csv").head(0).write_csv())
    return src


@pytest.mark.parametrize("where", ["same", "inside", "contains"])
def test_export_overwrite_refuses_a_target_nested_with_the_source(small_lab, where):
    before = _tree(small_lab)
    target = {"same": small_lab, "inside": small_lab / "hf", "contains": small_lab.parent}[where]
    res = cli("dataset", "export", "--data", str(small_lab), "--hf", str(target), "--overwrite")
    assert_clean_error(res, "--hf", "source", rc=1)
    assert _tree(small_lab) == before  # nothing deleted, nothing written


def test_export_overwrite_checks_the_source_before_deleting(tmp_path, small_lab):
    old = tmp_path / "previous_export"
    old.mkdir()
    (old / "README.md").write_text("an earlier export")
    res = cli("dataset", "export", "--data", str(tmp_path / "TYPO"), "--hf", str(old), "--overwrite")
    assert_clean_error(res, "TYPO", "does not exist", rc=1)
    assert _tree(old) == {"README.md": b"an earlier export"}
    # a broken labels file is found before anything is written either
    (small_lab / "labels.csv").write_bytes(b"run,host\nr,lab\xe9\n")
    res = cli("dataset", "export", "--data", str(small_lab), "--hf", str(old), "--overwrite")
    assert_clean_error(res, "labels.csv", "line 2", "UTF-8", rc=1)
    assert _tree(old) == {"README.md": b"an earlier export"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab", "previous_export"]


def test_export_overwrite_replaces_a_previous_export_whole(tmp_path, small_lab):
    out = tmp_path / "hf"
    out.mkdir()
    (out / "stale.parquet").write_text("from an older export")
    res = cli("dataset", "export", "--data", str(small_lab), "--hf", str(out), "--overwrite")
    assert res.rc == 0, res.text
    assert not (out / "stale.parquet").exists() and (out / "README.md").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf", "lab"]  # no partial sibling left


def test_staged_folder_keeps_the_target_until_commit_and_discards_on_error(tmp_path):
    target = tmp_path / "report"
    target.mkdir()
    (target / "summary.json").write_text("old")
    (target / "sentinels.csv").write_text("old")
    with pytest.raises(RuntimeError), staged_folder(target, ours=("*.json", "*.csv")) as tmp:
        (tmp / "summary.json").write_text("new")
        raise RuntimeError("interrupted")
    assert _tree(target) == {"summary.json": b"old", "sentinels.csv": b"old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
    stage = StagedFolder(target, ours=("*.json", "*.csv"))
    (stage.path / "summary.json").write_text("new")
    stage.commit()
    assert _tree(target) == {"summary.json": b"new"}  # the stale sentinels.csv went with the old run


def test_staged_folder_keeps_the_users_own_files(tmp_path):
    files = {"notes.txt": "mine", "summary.json": "old", "sentinels.csv": "old"}
    target = _folder(tmp_path / "results", files)
    with staged_folder(target, ours=("summary.json", "sentinels.csv")) as tmp:
        (tmp / "summary.json").write_text("new")
    assert _tree(target) == {"notes.txt": b"mine", "summary.json": b"new"}


def test_staged_folder_refuses_a_file_and_a_non_empty_target_without_overwrite(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(FileExistsError, match="is a file"):
        StagedFolder(f)
    d = tmp_path / "d"
    d.mkdir()
    (d / "x").write_text("x")
    with pytest.raises(FileExistsError, match="--overwrite"):
        StagedFolder(d)


@pytest.mark.slow
def test_sigterm_during_detect_leaves_the_previous_report_whole(tmp_path):
    out = tmp_path / "rep"
    out.mkdir()
    names = ("anomalies.csv", "summary.json", "report.md", "sentinels.csv")
    old = {n: f"previous run's {n}".encode() for n in names}
    for n, b in old.items():
        (out / n).write_bytes(b)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())",
         "detect", str(_lab_run()), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    try:
        partial = f".rep.partial-{p.pid}"
        while p.poll() is None and not (tmp_path / partial).exists():  # the run has begun writing
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 128 + signal.SIGTERM, err.decode()
    assert b"Traceback" not in err
    assert _tree(out) == old
    assert sorted(x.name for x in tmp_path.iterdir()) == ["rep"]


@pytest.mark.slow
def test_a_complete_detect_leaves_no_file_of_the_previous_run(tmp_path, capsys):
    old = {"sentinels.csv": "previous run", "pruning_other.json": "previous run", "notes.txt": "the user's"}
    out = _folder(tmp_path / "rep", old)
    res = in_process(capsys, "detect", str(_lab_run()), "--out", str(out))
    assert res.rc == 0, res.text
    names = {p.name for p in out.iterdir()}
    assert "pruning_other.json" not in names
    assert "sentinels.csv" not in names or (out / "sentinels.csv").read_text() != "previous run"
    assert {"anomalies.csv", "summary.json", "report.md", "report.html", "notes.txt"} <= names
    assert sorted(x.name for x in tmp_path.iterdir()) == ["rep"]


def test_staged_folder_into_the_working_folder_keeps_it_in_place(tmp_path, monkeypatch):
    target = _folder(tmp_path / "here", {"summary.json": "old"})
    monkeypatch.chdir(target)
    with staged_folder(".", ours=("summary.json",)) as tmp:
        (tmp / "summary.json").write_text("new")
    assert Path.cwd() == target and (target / "summary.json").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]


@pytest.mark.notebook
@pytest.mark.slow
def test_sigterm_during_reproduce_leaves_an_index_that_says_what_did_not_run(tmp_path):
    from tests.notebooks.test_runner import _manifest

    slow = "import pathlib, time\npathlib.Path(out_dir, 'started').touch()\ntime.sleep(600)\n"
    manifest = _manifest(tmp_path, slow)
    out = tmp_path / "out"
    p = subprocess.Popen(
        [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())",
         "reproduce", "--manifest", str(manifest), "--out", str(out), "--data", "synth"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        while p.poll() is None and not (out / "started").exists():  # the second notebook is running
            time.sleep(0.2)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 128 + signal.SIGTERM, err.decode()
    page = (out / "index.html").read_text()
    assert "not run" in page  # the interrupted notebook and the one after it say so
    assert b"Traceback" not in err


def test_a_signal_right_after_the_partial_folder_is_made_leaves_nothing(tmp_path, monkeypatch):
    """SIGTERM arrives as SystemExit between two bytecodes; the one right after the hidden
    folder's mkdir must still find its clean-up (it failed once, under load, in the test above)."""
    import gc

    from reveal_lab.io import StagedFolder

    real_mkdir = Path.mkdir

    def mkdir_then_signal(self, *args, **kwargs):
        real_mkdir(self, *args, **kwargs)
        if ".partial-" in self.name:
            raise SystemExit(128 + signal.SIGTERM)

    monkeypatch.setattr(Path, "mkdir", mkdir_then_signal)
    with pytest.raises(SystemExit):
        StagedFolder(tmp_path / "out", ours=["*.csv"])
    gc.collect()
    assert [p.name for p in tmp_path.iterdir()] == []
