"""``detect --job-pace FILE``: the job's slowdown beside each episode, the job's steady span
scored, and bad step-time files refused naming the file and what was expected."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.cli import main
from reveal_lab.io import read_job_pace

SET = Path(__file__).resolve().parents[2] / "data" / "gpu-host"
RAW = SET / "raw" / "gpu-a"


@pytest.mark.slow
def test_job_pace_ranks_the_episodes_and_scores_the_jobs_span(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["detect", str(RAW), "--job-pace", str(RAW / "steps.csv"), "--out", str(out)]) == 0
    eps = pl.read_csv(out / "episodes.csv")
    top = eps.sort("rank").row(0, named=True)
    assert top["subsystem"] == "gpu" and top["slowdown"] > 1.8
    assert "GPU memory used (GPU 0)" in top["what_moved"]
    text = (out / "report.md").read_text()
    assert "Ranked by the job's slowdown" in text and "steady span from --job-pace" in text
    s = json.loads((out / "summary.json").read_text())["runs"][0]
    assert s["config"]["trim"]["mode"] == "span"
    # without the pace the report says the slowdown is unknown
    out2 = tmp_path / "plain"
    assert main(["detect", str(RAW), "--out", str(out2)]) == 0
    assert "how much each episode slowed the job is unknown" in (out2 / "report.md").read_text()
    assert "slowdown" not in pl.read_csv(out2 / "episodes.csv").columns


def test_bad_step_files_are_refused_naming_the_file(tmp_path):
    bad = tmp_path / "steps.csv"
    bad.write_text("time,duration\n1,2\n")
    with pytest.raises(ValueError, match=r"steps\.csv: no column 't'"):
        read_job_pace(bad)
    bad.write_text("t,step_s\n1,fast\n")
    with pytest.raises(ValueError, match=r"column 'step_s' is String, expected numbers"):
        read_job_pace(bad)
    with pytest.raises(ValueError, match="cannot read the job's step times"):
        read_job_pace(tmp_path / "missing.csv")


def test_a_pace_from_another_clock_is_refused(tmp_path, capsys):
    steps = tmp_path / "steps.csv"
    steps.write_text("t,step_s\n100.0,0.1\n100.1,0.1\n")  # 1970: no step within the recording
    assert main(["detect", str(RAW), "--job-pace", str(steps), "--out", str(tmp_path / "r")]) != 0
    err = capsys.readouterr().err
    assert "--job-pace" in err and "steps.csv: no step starts within gpu-a's recording" in err
    two = ["--job-pace", str(steps), "--job-pace", str(steps)]
    assert main(["detect", str(RAW), *two, "--out", str(tmp_path / "r")]) != 0
    assert "--job-pace: give it once (every RUN) or once per RUN" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # nothing half-written


@pytest.mark.slow
def test_the_gpu_host_set_builds_again_from_its_raw_recordings(tmp_path):
    from reveal_lab.lab import build_gpu_host_set

    out = build_gpu_host_set(sorted((SET / "raw").iterdir()), tmp_path / "set")
    for name in ("labels.csv", "meta_lab.csv", "recordings.md"):
        assert (out / name).read_text() == (SET / name).read_text(), name
    mine = sorted(p.name for p in (out / "host_separated").iterdir())
    assert mine == sorted(p.name for p in (SET / "host_separated").iterdir())
    for n in mine:
        a = pl.read_parquet(out / "host_separated" / n)
        assert a.equals(pl.read_parquet(SET / "host_separated" / n)), n
