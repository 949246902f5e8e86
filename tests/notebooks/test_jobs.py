"""Notebooks run at once (``reproduce --jobs N``): the order the manifest's ``after`` sets,
an ``alone`` notebook with nothing beside it, a failure that stops new starts; and real
papermill kernels running side by side."""

import os
import re
import threading
import time

import pytest

from reveal_lab.notebooks import NotebookEntry, load_manifest, run_concurrently, run_manifest
from reveal_lab.telemetry import TelemetryError
from tests.notebooks.notebook_files import write_notebook


def _entries(spec):
    return [NotebookEntry(f"{stem}.ipynb", stem, {}, {}, after=tuple(after), alone=alone)
            for stem, after, alone in spec]


class _Recorder:
    """``execute`` for :func:`run_concurrently` that records who ran beside whom; each call
    waits until released (or a short wait ends) so overlaps are not left to chance."""

    def __init__(self, entries, hold=0.2, fail=()):
        self.entries, self.hold, self.fail = entries, hold, set(fail)
        self.lock = threading.Lock()
        self.running: set[str] = set()
        self.beside: dict[str, set[str]] = {}
        self.started: list[str] = []
        self.ended: list[str] = []
        self.most = 0  # most running at once

    def __call__(self, i):
        stem = self.entries[i].stem
        with self.lock:
            self.started.append(stem)
            self.beside[stem] = set(self.running)
            for other in self.running:
                self.beside[other].add(stem)
            self.running.add(stem)
            self.most = max(self.most, len(self.running))
        time.sleep(self.hold[stem] if isinstance(self.hold, dict) else self.hold)
        with self.lock:
            self.running.discard(stem)
            self.ended.append(stem)
        if stem in self.fail:
            raise RuntimeError(f"{stem} failed")


def test_after_and_alone_are_kept_and_jobs_bound_what_runs_at_once():
    entries = _entries([
        ("00", [], False), ("01", [], False), ("02", ["00"], False), ("03", [], True),
        ("04", ["02", "01"], False), ("05", [], False),
    ])
    rec = _Recorder(entries)
    run_concurrently(entries, range(len(entries)), rec, jobs=2)
    assert sorted(rec.started) == sorted(e.stem for e in entries) and len(rec.ended) == 6
    assert rec.most == 2  # never more than jobs at once
    assert rec.beside["03"] == set()  # alone
    assert rec.ended.index("00") < rec.started.index("02")
    assert rec.ended.index("02") < rec.started.index("04") and rec.ended.index("01") < rec.started.index("04")
    assert "01" in rec.beside["00"]  # the first two ready start together
    assert any(rec.beside[s] for s in ("02", "04", "05"))  # side by side after the start too


def test_a_failure_stops_new_starts_lets_the_running_end_and_is_raised():
    entries = _entries([("00", [], False), ("01", [], False), ("02", [], False), ("03", [], False)])
    rec = _Recorder(entries, hold={"00": 0.05, "01": 0.5, "02": 0.5, "03": 0.5}, fail={"00"})
    with pytest.raises(RuntimeError, match="00 failed"):
        run_concurrently(entries, range(4), rec, jobs=2)
    assert sorted(rec.started) == ["00", "01"] and sorted(rec.ended) == ["00", "01"]


def test_one_job_is_the_manifest_order_and_after_outside_the_run_is_ignored():
    entries = _entries([("00", [], False), ("01", ["00"], True), ("02", ["01"], False)])
    rec = _Recorder(entries, hold=0.0)
    run_concurrently(entries, [1, 2], rec, jobs=1)  # 00 kept from an earlier run
    assert rec.started == ["01", "02"]


def test_manifest_after_must_name_earlier_notebooks_and_alone_a_bool(tmp_path):
    for nb in ("01-a", "02-b"):
        _notebook(tmp_path / f"{nb}.ipynb", "x = 1\n")
    head = "kernel: reveal-lab\npresets: {smoke: {}, full: {}}\nnotebooks:\n"
    good = tmp_path / "good.yml"
    good.write_text(head + "  - {notebook: 01-a.ipynb}\n  - {notebook: 02-b.ipynb, after: [01-a], alone: true}\n")
    b = load_manifest(good).entry("02-b")
    assert b.after == ("01-a",) and b.alone
    late = tmp_path / "late.yml"
    late.write_text(head + "  - {notebook: 01-a.ipynb, after: [02-b]}\n  - {notebook: 02-b.ipynb}\n")
    with pytest.raises(TelemetryError, match=r"notebooks\[0\]: 'after' names \['02-b'\]"):
        load_manifest(late)
    bad = tmp_path / "bad.yml"
    bad.write_text(head + "  - {notebook: 01-a.ipynb, alone: 'yes'}\n")
    with pytest.raises(TelemetryError, match="'alone' must be true or false"):
        load_manifest(bad)


PARAMS = 'data = ""\nout_dir = "."\nsmoke = False\nme = ""\nother = ""\n'
# each notebook leaves a mark, then waits for the other's: only notebooks running at once both end
MEET = """
import os
import time
from pathlib import Path
import polars as pl
from reveal_lab.render import write_table
marks = Path(out_dir) / "marks"
marks.mkdir(exist_ok=True)
(marks / me).touch()
deadline = time.monotonic() + 60
while not (marks / other).exists():
    assert time.monotonic() < deadline, f"{other} never ran beside {me}"
    time.sleep(0.05)
write_table(pl.DataFrame({"me": [me]}), Path(out_dir) / "tables" / me)  # studies.save_table's writer
(marks / f"{me}.cwd").write_text(os.getcwd())
"""


def _notebook(path, body):
    write_notebook(path, body, PARAMS)


@pytest.mark.notebook
def test_two_real_kernels_run_side_by_side_and_record_their_status(tmp_path):
    d = tmp_path / "nbs"
    d.mkdir()
    _notebook(d / "01-a.ipynb", MEET)
    _notebook(d / "02-b.ipynb", MEET)
    _notebook(d / "03-c.ipynb", "x = 1\n")
    (d / "manifest.yml").write_text(
        "kernel: reveal-lab\npresets: {smoke: {}, full: {}}\nnotebooks:\n"
        "  - {notebook: 01-a.ipynb, parameters: {me: a, other: b}, tables: [a]}\n"
        "  - {notebook: 02-b.ipynb, parameters: {me: b, other: a}, tables: [b]}\n"
        "  - {notebook: 03-c.ipynb, after: [01-a, 02-b]}\n"
    )
    out = tmp_path / "out"
    here = os.getcwd()
    results = run_manifest(preset="full", data="synth", out=out, manifest=load_manifest(d / "manifest.yml"),
                           log=lambda s: None, jobs=2, cache=False)
    assert [r.status for r in results] == ["ok", "ok", "ok"]
    # each kernel runs in the manifest's folder; this process's working folder is left as it was
    # (two threads changing it for their kernels once left it in the manifest's folder)
    assert os.getcwd() == here
    assert all((out / "marks" / f"{me}.cwd").read_text() == str(d) for me in ("a", "b"))
    assert (out / "tables" / "a.csv").exists() and (out / "tables" / "b.csv").exists()
    status = (out / "notebooks" / "status.json").read_text()
    assert all(nb in status for nb in ("01-a.ipynb", "02-b.ipynb", "03-c.ipynb"))
    assert re.search(r"\d+ s of notebooks, up to 2 at once", (out / "index.html").read_text())
    with pytest.raises(ValueError, match="jobs=0"):
        run_manifest(preset="full", data="synth", out=out, manifest=load_manifest(d / "manifest.yml"), jobs=0)


def test_cli_jobs_below_one_is_refused_naming_the_flag(tmp_path, capsys):
    from reveal_lab.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--jobs", "0", "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--jobs" in err and "'0'" in err
    assert not (tmp_path / "o").exists()
