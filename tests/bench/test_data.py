"""Reading the labelled-servers layout: segment ends, 1-based metrics, clear errors."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from reveal_lab.bench import label_runs, list_servers, load_server, read_interpretation_labels, read_matrix
from reveal_lab.telemetry import TelemetryError

from .conftest import needs_shared


def test_interpretation_lines_are_parsed_end_inclusive_and_one_based(tmp_path: Path):
    p = tmp_path / "x_interpretation_label.txt"
    p.write_text("3-5:2,1\n\n10-10:4,")  # no trailing newline, a trailing comma, a blank line
    segs = read_interpretation_labels(p, n_rows=20, n_metrics=4)
    assert [(s.start, s.end, s.metrics) for s in segs] == [(3, 5, (2, 1)), (10, 10, (4,))]
    assert list(segs[0].rows()) == [3, 4, 5]
    assert segs[1].line == 3


@pytest.mark.parametrize(
    "text, what",
    [
        ("3-5:0,1", "1-based"),
        ("3-5:2,7", "1-based"),
        ("5-3:1", "before start"),
        ("3-5 1,2", "start-end:d1"),
        ("30-35:1", "beyond"),
    ],
)
def test_bad_interpretation_lines_name_the_line(tmp_path: Path, text: str, what: str):
    p = tmp_path / "x_interpretation_label.txt"
    p.write_text("1-2:1\n" + text + "\n")
    with pytest.raises(TelemetryError, match=what) as e:
        read_interpretation_labels(p, n_rows=20, n_metrics=4)
    assert "line 2" in str(e.value) and p.name in str(e.value)


def test_ragged_or_non_numeric_matrix_names_line_and_column(tmp_path: Path):
    p = tmp_path / "a_train.csv.gz"
    with gzip.open(p, "wt") as fh:
        fh.write("0.1,0.2\n0.3,0.4\n0.5\n")
    with pytest.raises(TelemetryError, match="line 3"):
        read_matrix(p)
    with gzip.open(p, "wt") as fh:
        fh.write("0.1,0.2\n0.3,abc\n")
    with pytest.raises(TelemetryError, match=r"line 2, column '2'"):
        read_matrix(p)
    with gzip.open(p, "wt") as fh:
        fh.write("0.1,nan\n")
    with pytest.raises(TelemetryError, match="not finite"):
        read_matrix(p)


def test_label_runs():
    assert label_runs(np.array([1, 1, 0, 0, 1, 0, 1, 1, 1])) == [(0, 2), (4, 5), (6, 9)]
    assert label_runs(np.zeros(4)) == []


@needs_shared
def test_shared_data_end_conventions_hold(shared_dir: Path):
    """The README's claim, checked on the real files: ASD lines end-inclusive, SMD
    lines end-exclusive, relative to the point labels."""
    names = list_servers(shared_dir)
    assert "omi-1" in names and "machine-3-3" in names
    omi = load_server(shared_dir, "omi-1")
    assert omi.train.shape[1] == omi.test.shape[1] == 19
    s = omi.segments[0]
    assert (s.start, s.end) == (760, 765)
    assert omi.labels[s.start : s.end + 1].all()  # 765 itself is anomalous
    smd = load_server(shared_dir, "machine-3-3")
    s = smd.segments[0]
    assert (s.start, s.end) == (739, 742)
    assert smd.labels[s.start : s.end].all() and smd.labels[s.end] == 0  # 742 is not
    assert all(max(seg.metrics) <= 38 for seg in smd.segments)
