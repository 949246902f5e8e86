"""Bad input is a message naming the file, line and column (or the flag) and what was expected;
an optional file that is broken is warned about and the work goes on."""

from __future__ import annotations

import dataclasses
import gzip
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from reveal_lab.bench import InterpretationSegment, LabelledServer
from reveal_lab.bench._data import read_matrix
from reveal_lab.bench._labelled import LabelledConfig, bench_server
from reveal_lab.config import data_dir
from reveal_lab.io import load_run, read_labels, read_meta, write_parquet_run
from reveal_lab.telemetry import TelemetryError

from .conftest import assert_clean_error, cli, in_process

LAB = data_dir()
RUN = sorted((LAB / "train_separated").glob("train_CNNfor*.parquet"))[0]


@pytest.fixture
def lab_copy(tmp_path) -> Path:
    """One lab run in the dataset layout, with its meta_lab.csv row and labels.csv."""
    root = tmp_path / "lab"
    (root / "train_separated").mkdir(parents=True)
    shutil.copy(RUN, root / "train_separated" / RUN.name)
    meta = read_meta(LAB / "meta_lab.csv").filter(pl.col("source_file").str.ends_with(RUN.name))
    meta.write_csv(root / "meta_lab.csv")
    shutil.copy(LAB / "labels.csv", root / "labels.csv")
    return root


def _edit_meta(root: Path, column: str, value: str) -> None:
    lines = (root / "meta_lab.csv").read_text().splitlines()
    head = lines[0].split(",")
    cells = lines[1].split(",")
    cells[head.index(column)] = value
    (root / "meta_lab.csv").write_text("\n".join([lines[0], ",".join(cells)]) + "\n")


@pytest.mark.parametrize(
    "column,value,needle",
    [
        ("samples_per_s", "fast", "line 2, column 'samples_per_s': 'fast' is not a number"),
        ("workload_start", "yesterday", "column 'workload_start': 'yesterday' is not a timestamp like"),
        ("workload_end", "2020-01-01 00:00:00.000", "line 2, column 'workload_end': workload_end 2020-01-01"),
    ],
    ids=["number", "date", "end-before-start"],
)
def test_bad_meta_values_name_file_line_and_column(lab_copy, column, value, needle):
    _edit_meta(lab_copy, column, value)
    with pytest.raises(TelemetryError) as exc:
        read_meta(lab_copy / "meta_lab.csv")
    assert needle in str(exc.value) and "meta_lab.csv" in str(exc.value)


def test_workload_end_before_start_stops_detect_with_the_line(lab_copy, tmp_path):
    _edit_meta(lab_copy, "workload_end", "2020-01-01 00:00:00.000")
    res = cli("detect", str(lab_copy / "train_separated" / RUN.name), "--out", str(tmp_path / "r"))
    assert_clean_error(res, "meta_lab.csv, line 2, column 'workload_end'", "before workload_start", rc=1)


@pytest.mark.parametrize("name", ["labels.csv", "meta_lab.csv"])
def test_non_utf8_tables_name_file_line_and_column(lab_copy, name):
    p = lab_copy / name
    lines = p.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"lab", b"l\xe4b", 1)
    p.write_bytes(b"\n".join(lines))
    reader = read_labels if name == "labels.csv" else read_meta
    with pytest.raises(TelemetryError, match=rf"{name}, line 2, column '\w+': bytes that are not UTF-8"):
        reader(p)


@pytest.mark.slow
def test_a_broken_labels_file_beside_a_run_is_warned_and_the_report_written(lab_copy, tmp_path, capsys):
    (lab_copy / "labels.csv").write_text("run,host,start\nx,labA,2026-01-01 00:00:00.000\n")
    out = tmp_path / "r"
    res = in_process(capsys, "detect", str(lab_copy / "train_separated" / RUN.name), "--out", str(out))
    assert res.rc == 0, res.text
    assert "warning: labelled episodes left out of the report" in res.err and "lacks columns" in res.err
    assert (out / "report.html").exists()


def test_label_ending_before_it_starts_names_line_and_column(lab_copy):
    p = lab_copy / "labels.csv"
    df = pl.read_csv(p, infer_schema=False)
    third = pl.int_range(pl.len()) == 2  # line 4 of the file
    df = df.with_columns(
        pl.when(third).then(pl.col("start")).otherwise(pl.col("end")).alias("end"),
        pl.when(third).then(pl.col("end")).otherwise(pl.col("start")).alias("start"),
    )
    df.write_csv(p)
    with pytest.raises(TelemetryError, match=r"labels.csv, line 4, column 'end': the label ends .* before"):
        read_labels(p)


@pytest.mark.slow
def test_a_run_shorter_than_a_window_says_so(tmp_path):
    run = load_run(RUN)
    one = write_parquet_run(dataclasses.replace(run, frame=run.frame.head(1)), tmp_path / "one.parquet")
    res = cli("detect", str(one), "--out", str(tmp_path / "r"))
    assert_clean_error(res, "1 sample(s), fewer than one 3 s window holds", rc=1)
    assert "selected metrics" not in res.text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.parquet"]  # no report, no partial folder


def test_output_path_with_a_line_break_is_refused_at_once(tmp_path):
    res = cli("detect", str(RUN), "--out", str(tmp_path / "a\nb"))
    assert_clean_error(res, "--out", "holds a line break", rc=2)
    assert len([ln for ln in res.err.splitlines() if ln.strip()]) == 1


@pytest.mark.slow
def test_unwritable_reproduce_out_is_refused_before_the_first_notebook(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = cli("reproduce", "--preset", "smoke", "--out", str(blocker / "out"), limit=60)
    assert_clean_error(res, "--out", "cannot write there", rc=1)
    assert "[1/" not in res.text  # no notebook started


def test_not_gzip_labelled_file_names_the_file(tmp_path):
    p = tmp_path / "srv_train.csv.gz"
    p.write_text("0.1,0.2\n")
    with pytest.raises(TelemetryError, match=r"srv_train.csv.gz: not a gzip file"):
        read_matrix(p)
    with gzip.open(p, "wt") as fh:
        fh.write("0.1,0.2\n0.3,0.4\n")
    assert read_matrix(p).shape == (2, 2)


def test_bench_refuses_a_constant_training_half(tmp_path):
    rng = np.random.default_rng(0)
    server = LabelledServer(
        "flat", np.full((200, 3), 0.5), rng.normal(size=(100, 3)), np.zeros(100, dtype=np.int8),
        (InterpretationSegment(10, 12, (1,), 1),),
    )
    with pytest.raises(ValueError, match="training half is constant in every one of its 3 metrics"):
        bench_server(server, tmp_path, LabelledConfig(window_rows=10, iforest_estimators=5))
