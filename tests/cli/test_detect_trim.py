"""No default path drops part of a recording without the report saying so: ``detect`` on a
lab run, a public-dataset run and a real collector folder (a host recording) with the
defaults, and with ``--trim active``. Whatever was left out is in the report's first lines,
in ``summary.json`` and in the timeline (the whole recording on the axis, the scored span
shaded); what was not left out is scored from the recording's first window to its last."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.cli import main
from reveal_lab.cli._policy import TRIM_CHOICES
from reveal_lab.config import PROJECT_ROOT
from reveal_lab.io import load_run
from reveal_lab.pipeline import TRIM_RULES

LAB = PROJECT_ROOT / "data" / "lab"
PUBLIC = PROJECT_ROOT / "data" / "fixtures" / "reveal_sample" / "Reveal_CPU.zip"
CLI = str(Path(sys.executable).with_name("reveal-lab"))


@pytest.fixture(scope="module")
def collector_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("host") / "run"
    subprocess.run(
        [CLI, "collect", "--out", str(out), "--probes", "procfs", "--interval", "100ms", "--duration", "10s"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return str(out)


def _lab_run() -> str:
    meta = pl.read_csv(LAB / "meta_lab.csv", infer_schema_length=0).filter(pl.col("world_size") == "1")
    return str(LAB / meta["source_file"][0].removeprefix("./"))


def _public_run() -> str:
    with zipfile.ZipFile(PUBLIC) as z:
        member = next(n for n in z.namelist() if n.endswith(".txt"))
    return f"{PUBLIC}::{member}"


def _detect(path: str, out: Path, *extra: str) -> tuple[dict, list[str]]:
    assert main(["detect", path, "--out", str(out), *extra]) == 0
    summary = json.loads((out / "summary.json").read_text())
    head = (out / "report.md").read_text().split("## Run", 1)[0].splitlines()
    return summary["runs"][0], head


def test_trim_choices_are_the_pipelines():
    assert TRIM_CHOICES == TRIM_RULES


@pytest.mark.parametrize("kind", ["lab", "public", "host"])
@pytest.mark.slow
def test_default_detect_says_what_it_left_out_or_scores_everything(kind, collector_run, tmp_path, capsys):
    path = {"lab": _lab_run, "public": _public_run, "host": lambda: collector_run}[kind]()
    run = load_run(path)
    t0, t1 = run.frame["timestamp"].min(), run.frame["timestamp"].max()
    s, head = _detect(path, tmp_path / "rep")
    span = s["scored_span"]
    cut = span["cut_start_s"] + span["cut_end_s"]
    if kind == "lab":  # the recorded workload span: start-up and teardown left out, and said
        assert span["mode"] == "span" and cut > 1.0
        assert any("left out" in ln and "recorded workload span" in ln for ln in head), head
    else:  # no workload span known: nothing left out
        assert span["mode"] == "none" and cut == 0.0
        assert any("Scored the whole" in ln and "nothing left out" in ln for ln in head), head
    assert span["recording_start"] == str(t0) and span["recording_end"] == str(t1)
    # the score timeline spans the whole recording, the scored span shaded
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "scored span shaded green" in page and span["left_out"] in page
    capsys.readouterr()


def test_trim_active_says_what_it_cut(tmp_path, capsys):
    """The utilisation rule on request (a lab frame has no utilisation column: the whole run
    less the 3 s margin at each end), said in the first lines and on stdout."""
    s, head = _detect(_lab_run(), tmp_path / "rep", "--trim", "active")
    span = s["scored_span"]
    assert span["mode"] == "active" and span["cut_start_s"] >= 3.0 and span["cut_end_s"] >= 3.0
    assert any("left out" in ln and "trim=active" in ln for ln in head), head
    assert "left out" in capsys.readouterr().out
