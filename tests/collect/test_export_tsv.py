"""export-tsv: a collected run written in the public TSV layout reads back identically."""

from __future__ import annotations

import subprocess

import polars as pl
import pytest
from collect_helpers import CLI

from reveal_lab.collect import collect
from reveal_lab.io._collector import read_collector_run
from reveal_lab.io._export_tsv import export_tsv
from reveal_lab.io._public import parse_run_filename
from reveal_lab.io._tsv import read_public_tsv
from reveal_lab.telemetry import TelemetryWarning


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("tsv") / "run"
    collect(
        out,
        interval_s=0.1,
        duration_s=1.0,
        probes="cpu,meminfo,netdev,nstat",
        host="tsv.host",
        handle_signals=False,
    )
    return out


def test_round_trip_through_the_public_reader(run_dir, tmp_path):
    run = read_collector_run(run_dir)
    (path,) = export_tsv(run, tmp_path, model="IDLE", task="Baseline", dataset="lab_v1")
    name = parse_run_filename(path.name)
    assert (name.prefix, name.model, name.task, name.dataset, name.host) == (
        "train",
        "IDLE",
        "Baseline",
        "lab_v1",
        "tsv-host",
    )
    head = path.read_text().splitlines()[:2]
    assert head[0].startswith("\t") and head[0].split("\t")[1:] == run.frame.columns[1:]
    assert len(head[1].split("\t")[0]) == len("2025-04-26 13:38:18.600")
    with pytest.warns(TelemetryWarning):  # all-zero columns are reported by the public reader
        back = read_public_tsv(path)
    assert back.frame.equals(run.frame)
    # the first row holds the nulls of the first differences: written as empty cells
    assert "\t\t" in path.read_text().splitlines()[1]
    with pytest.raises(FileExistsError):
        export_tsv(run, tmp_path, model="IDLE", task="Baseline", dataset="lab_v1")
    with pytest.raises(ValueError, match="file-name grammar"):
        export_tsv(run, tmp_path, model="bad_model")


def test_cli_export_tsv_local_time(run_dir, tmp_path):
    res = subprocess.run(
        [
            *CLI,
            "dataset",
            "export-tsv",
            str(run_dir),
            "--out",
            str(tmp_path),
            "--local-time",
            "--model",
            "IDLE",
            "--task",
            "Baseline",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    (path,) = tmp_path.glob("*.txt")
    assert res.stdout.strip() == str(path)
    run = read_collector_run(run_dir)
    offset = run.meta.extra["clock"]["utc_offset_s"]
    first = pl.read_csv(path, separator="\t", n_rows=1).to_series(0)[0]
    shifted = run.frame.select(pl.col("timestamp") + pl.duration(milliseconds=round(offset * 1000)))
    assert first == shifted.to_series()[0].strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
