"""``reproduce`` reuses nothing it cannot vouch for, checks what the flags check, and runs
what it is asked in the manifest's order: small real notebooks, a real kernel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.cli import main
from reveal_lab.notebooks import load_manifest, run_manifest
from tests.notebooks.notebook_files import write_notebook

from .conftest import ROOT, Result, assert_clean_error, cli, wait_for_file

pytestmark = pytest.mark.notebook

PARAMS = 'data = ""\nout_dir = "."\nsmoke = False\nvalue = 1.0\nworkers = 0\n'
#: writes what it was given and a digest of the data it read (through the project's table
#: writer, which ``studies.save_table`` calls, without importing every study)
SHOW = """
import hashlib, os, pathlib
import polars as pl
from reveal_lab.render import write_table
digest = "synth"
if data != "synth":
    files = sorted(p for p in pathlib.Path(data).rglob("*") if p.is_file())
    digest = hashlib.md5(b"".join(p.read_bytes() for p in files)).hexdigest()
write_table(pl.DataFrame({"data": [data], "digest": [digest], "value": [value], "smoke": [smoke]}),
            out_dir + "/tables/" + TABLE)
"""
#: reads what the first notebook wrote
AFTER = """
import polars as pl
from reveal_lab.render import write_table
first = pl.read_csv(f"{out_dir}/tables/first.csv")
write_table(first.with_columns(pl.lit(data).alias("now")), f"{out_dir}/tables/second")
"""
#: writes, says it started, then waits (at most 120 s) while the block file exists
BLOCKING = """
import os, pathlib, time
pathlib.Path(os.environ["RVL_STARTED"]).write_text("started")
t = time.monotonic() + 120
while pathlib.Path(os.environ["RVL_BLOCK"]).exists() and time.monotonic() < t:
    time.sleep(0.05)
"""


def _manifest(root: Path, *, first: str = SHOW, second: str = AFTER, after: bool = True, params: str = PARAMS) -> Path:
    d = root / "nbs"
    d.mkdir()
    write_notebook(d / "01-first.ipynb", first.replace("TABLE", '"first"'), params)
    write_notebook(d / "02-second.ipynb", second.replace("TABLE", '"second"'), PARAMS)
    (d / "manifest.yml").write_text(
        "kernel: reveal-lab\npresets: {smoke: {}, full: {}}\nnotebooks:\n"
        "  - {notebook: 01-first.ipynb, tables: [first]}\n"
        f"  - {{notebook: 02-second.ipynb, tables: [second]{', after: [01-first]' if after else ''}}}\n"
    )
    return d / "manifest.yml"


def _data(root: Path, name: str = "data", content: str = "a") -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "run.txt").write_text(content)
    return d


def _run(manifest: Path, out: Path, data: str | Path, **kw):  # noqa: ANN003, ANN202
    lines: list[str] = []
    kw.setdefault("cache", False)
    res = run_manifest(preset=kw.pop("preset", "full"), data=str(data), out=out, manifest=load_manifest(manifest),
                       log=lines.append, **kw)
    return res, lines


def _kept(lines: list[str]) -> list[str]:
    return [s.split("] ", 1)[1].split(":")[0] for s in lines if "complete, kept" in s]


# -- --only ------------------------------------------------------------------------------------


def test_only_an_unknown_notebook_is_an_error_listing_them(tmp_path, capsys):
    assert main(["reproduce", "--only", "nosuch-notebook", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "KeyError" not in err
    assert "--only nosuch-notebook: no such notebook" in err and "03-detection" in err
    assert not (tmp_path / "o").exists()


def test_only_runs_in_the_manifests_order(tmp_path):
    m = _manifest(tmp_path)
    res, lines = _run(m, tmp_path / "out", "synth", only=["02-second", "01-first", "02-second"], jobs=1)
    assert [r.notebook for r in res] == ["01-first.ipynb", "02-second.ipynb"]
    starts = [s for s in lines if s.endswith("...")]
    assert "01-first" in starts[0] and "02-second" in starts[1]


# -- --data ------------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["synth", "./synth"])
def test_a_data_folder_named_synth_is_the_users_data(tmp_path, monkeypatch, spelling):
    m = _manifest(tmp_path)
    folder = _data(tmp_path, "synth", "user's run")
    monkeypatch.chdir(tmp_path)
    _run(m, tmp_path / "out", spelling, only=["01-first"])
    row = pl.read_csv(tmp_path / "out" / "tables" / "first.csv").row(0, named=True)
    assert row["data"] == str(folder.resolve()) and row["digest"] != "synth"


def test_a_folder_named_synth_is_the_users_data_for_every_caller(tmp_path, monkeypatch):
    """Not only ``reproduce``: a study called with ``data="synth"`` (a notebook run by hand,
    ``scale.study_refs``) reads the user's ``./synth`` folder when one exists, and the seeded
    synthetic runs only when none does."""
    from reveal_lab import scale, studies

    monkeypatch.chdir(tmp_path)
    assert studies.resolve_data("synth") == "synth"
    assert {r.root for r in scale.study_refs("synth", max_runs=2)} == {"synth"}
    lab = ROOT / "data" / "lab"
    first = pl.read_csv(lab / "meta_lab.csv", infer_schema_length=0).head(1)
    folder = tmp_path / "synth"
    (folder / "infer_separated").mkdir(parents=True)
    src = first["source_file"][0].removeprefix("./")
    (folder / src).write_bytes((lab / src).read_bytes())
    first.write_csv(folder / "meta_lab.csv")
    assert Path(studies.resolve_data("synth")).resolve() == folder.resolve()
    refs = scale.study_refs("synth")
    assert [r.run_id for r in refs] == [Path(src).stem] and {Path(r.root) for r in refs} == {folder.resolve()}


# -- --param and the flags ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "param, needle",
    [
        ("max_runs=-2", "--param max_runs=-2: expected a whole number from 0"),
        ("max_seconds=-5", "--param max_seconds=-5.0: expected a number in [0,"),
        ("granularities=3/10", "stride 10 s of '3/10' is longer than its window 3 s"),
        ("granularities=3/1,3/10", "stride 10 s of '3/10' is longer than its window 3 s"),
        ("max_runs_per_workload=-1", "--param max_runs_per_workload=-1"),
    ],
)
def test_param_values_are_checked_with_the_flags_ranges(tmp_path, capsys, param, needle):
    assert main(["reproduce", "--param", param, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert needle in err, err
    assert not (tmp_path / "o").exists()  # refused before any notebook


def test_workers_flag_errors_name_the_flag_not_param(tmp_path, capsys):
    res = cli("reproduce", "--workers", "0", "--out", str(tmp_path / "o"))
    assert_clean_error(res, "argument --workers: expected a whole number from 1", rc=2)
    assert "--param workers" not in res.err
    # a notebook that does not declare 'workers' simply does not get it (no "--param workers" error)
    m = _manifest(tmp_path, params=PARAMS.replace("workers = 0\n", ""))
    rc = main(["reproduce", "--manifest", str(m), "--only", "01-first", "--workers", "2", "--data", "synth",
               "--out", str(tmp_path / "o2"), "--no-cache"])
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    assert "--param workers" not in err


# -- --resume and the notebooks a run starts after -----------------------------------------------


def test_resume_keeps_a_notebook_only_when_its_inputs_are_unchanged(tmp_path):
    m, out = _manifest(tmp_path), tmp_path / "out"
    one = _data(tmp_path, "one", "a")
    other = _data(tmp_path, "other", "b")
    _run(m, out, one)
    assert _kept(_run(m, out, one, resume=True)[1]) == ["01-first.ipynb", "02-second.ipynb"]
    # other data: nothing kept, the tables are the new data's (and 02 runs after a new 01)
    assert _kept(_run(m, out, other, resume=True)[1]) == []
    assert pl.read_csv(out / "tables" / "second.csv")["data"][0] == str(other.resolve())
    # a run file changed under the same name
    (other / "run.txt").write_text("changed")
    assert _kept(_run(m, out, other, resume=True, only=["01-first"])[1]) == []
    # another preset; another parameter
    assert _kept(_run(m, out, other, resume=True, only=["01-first"], preset="smoke")[1]) == []
    assert pl.read_csv(out / "tables" / "first.csv")["smoke"][0] is True
    assert _kept(_run(m, out, other, resume=True, only=["01-first"], preset="smoke", params={"value": 5.0})[1]) == []
    assert pl.read_csv(out / "tables" / "first.csv")["value"][0] == 5.0


def test_only_a_later_notebook_refuses_an_earlier_ones_outputs_made_from_other_data(tmp_path, capsys):
    m, out = _manifest(tmp_path), tmp_path / "out"
    one, other = _data(tmp_path, "one", "a"), _data(tmp_path, "other", "b")
    _run(m, out, one)
    with pytest.raises(ValueError, match="02-second starts after 01-first, whose outputs .* the data differs"):
        _run(m, out, other, only=["02-second"])
    rc = main(["reproduce", "--manifest", str(m), "--only", "02-second", "--data", str(other), "--out", str(out),
               "--no-cache"])
    assert rc == 2 and "add --only 01-first" in capsys.readouterr().err
    _run(m, out, one, only=["02-second"])  # the same data: 01's outputs are this run's
    assert pl.read_csv(out / "tables" / "second.csv")["data"][0] == str(one.resolve())


def _reproduce_cmd(manifest: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())", "reproduce",
            "--manifest", str(manifest), "--data", "synth", "--out", str(out), "--no-cache", *extra]


def test_a_notebook_killed_part_way_is_not_kept_by_resume(tmp_path, monkeypatch):
    """The first and the resumed reproduction run in this process (the kernels inherit its
    environment); the one killed is a real ``reveal-lab reproduce`` process."""
    m, out = _manifest(tmp_path, first=SHOW + BLOCKING, after=False), tmp_path / "out"
    started, block = tmp_path / "started", tmp_path / "block"
    monkeypatch.setenv("RVL_STARTED", str(started))
    monkeypatch.setenv("RVL_BLOCK", str(block))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    _run(m, out, "synth", only=["01-first"])
    started.unlink()
    block.write_text("hold")
    proc = subprocess.Popen(_reproduce_cmd(m, out, "--only", "01-first"), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_for_file(started, proc, 120)  # the notebook has rewritten its table and waits
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    block.unlink()
    _, lines = _run(m, out, "synth", only=["01-first"], resume=True)
    assert not any("complete, kept" in line for line in lines), lines
    assert json.loads((out / "notebooks" / "status.json").read_text())["01-first.ipynb"]["status"] == "ok"


def test_a_second_reproduction_into_the_same_out_is_refused_naming_the_first(tmp_path, capsys):
    m, out = _manifest(tmp_path, first=SHOW + BLOCKING, after=False), tmp_path / "out"
    started, block = tmp_path / "started", tmp_path / "block"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RVL_STARTED": str(started), "RVL_BLOCK": str(block)}
    block.write_text("hold")
    proc = subprocess.Popen(_reproduce_cmd(m, out, "--only", "01-first"), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for_file(started, proc, 120)
        rc = main(["reproduce", "--manifest", str(m), "--data", "synth", "--out", str(out), "--no-cache",
                   "--only", "01-first"])
        printed, said = capsys.readouterr()
        assert_clean_error(Result(rc, printed, said), "another reproduction", f"pid {proc.pid}", str(out), rc=1)
        block.unlink()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
