"""`reveal-lab detect` on a labelled lab run: the report's timelines shade the run's
labelled episodes (found in the dataset's labels.csv) and carry the run's raw traces."""

from __future__ import annotations

import polars as pl

from reveal_lab.cli import main
from reveal_lab.config import PROJECT_ROOT
from reveal_lab.io import read_labels

LAB = PROJECT_ROOT / "data" / "lab"


def test_detect_report_shades_the_runs_labelled_episodes(tmp_path, capsys):
    labels = read_labels(LAB / "labels.csv").filter(pl.col("scope") == "episode")
    # a CPU-contention run: detected alone, it has flagged windows (and raw traces to show)
    lab = labels.filter(pl.col("fault_type") == "cpu_contention").row(0, named=True)
    path = next((LAB / "infer_separated").glob(f"{lab['run']}_{lab['host']}.parquet"), None) or next(
        (LAB / "train_separated").glob(f"{lab['run']}_{lab['host']}.parquet")
    )
    n = labels.filter((pl.col("run") == lab["run"]) & (pl.col("host") == lab["host"])).height
    assert main(["detect", str(path), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "report.html").read_text()
    assert f"{n} labelled fault episode(s) shaded" in page
    assert page.count('src="data:image/png;base64,') == 2  # one host: scores + raw traces
    capsys.readouterr()
