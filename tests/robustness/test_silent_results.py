"""Answers that would be silently wrong now carry their caveat or are refused: a run in its own
baseline, the same run on both sides of a comparison, repeated or unknown labels, a pruning that
barely overlaps the run, different workloads, one run per side, thresholds on a handful of
windows, and a closed form used outside its range."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from reveal_lab.cli._checks import (
    MIN_SELF_WINDOWS,
    check_pruning_overlap,
    few_windows_warning,
    workload_warning,
)
from reveal_lab.compare import resolve_runs
from reveal_lab.config import data_dir
from reveal_lab.io import check_labels, load_run, read_labels, read_meta, write_parquet_run
from reveal_lab.pipeline import POLICIES, Pruning
from reveal_lab.reliability import SimulationResult

from .conftest import assert_clean_error, cli, copy_lab_runs, in_process

LAB = data_dir()


def _runs(model: str, n: int) -> list[Path]:
    return sorted((LAB / "train_separated").glob(f"train_{model}for*.parquet"))[:n]


@pytest.fixture(scope="module")
def cnn():
    return [load_run(p) for p in _runs("CNN", 2)]


@pytest.fixture(scope="module")
def mlp():
    return load_run(_runs("MLP", 1)[0])


@pytest.mark.slow
def test_run_in_its_own_baseline_is_left_out_and_said(tmp_path, capsys):
    f, g = _runs("CNN", 2)
    copy = tmp_path / "renamed_copy.parquet"  # the same run under another name
    shutil.copy(f, copy)
    out = tmp_path / "rep"
    res = in_process(capsys, "detect", str(f), "--baseline", str(copy), str(g), "--out", str(out))
    assert res.rc == 0, res.text
    assert "is also a --baseline run: left out of its own baseline (1 other baseline run(s)" in res.err
    summary = json.loads((out / "summary.json").read_text())
    assert any("left out of its own baseline" in w for w in summary["runs"][0]["warnings"])


def test_compare_refuses_the_same_run_however_spelled(tmp_path):
    f = _runs("CNN", 1)[0]
    rel = Path("data/lab/train_separated") / f.name
    assert rel.exists() or pytest.skip("run from the repository root")
    res = cli("compare", str(rel), "--vs", str(f.resolve()), "--data", str(LAB), "--reference", "self",
              "--out", str(tmp_path / "c"))
    assert_clean_error(res, "the same run on both sides", rc=1)


@pytest.mark.slow
def test_compare_with_one_run_a_side_claims_no_interval_and_warns_of_other_workloads(tmp_path):
    a, b = _runs("CNN", 1)[0], _runs("MLP", 1)[0]
    out = tmp_path / "c"
    res = cli("compare", str(a), "--vs", str(b), "--reference", "self", "--out", str(out))
    assert res.rc == 0, res.text
    md = (out / "compare.md").read_text()
    assert "one run on side A (1 run) and B (1 run)" in md and "no interval is given" in md
    assert "the sides ran different workloads" in md
    table = pl.read_csv(out / "compare.csv")
    assert table["diff_lo"].null_count() == table.height  # no zero-width interval claimed
    assert "fontTools" not in res.err


def test_selector_with_an_empty_value_picks_the_runs_without_one():
    meta = read_meta(LAB / "meta_lab.csv")
    no_case = meta.filter(pl.col("case").is_null() | (pl.col("case").cast(pl.String) == "")).height
    assert no_case > 0
    assert len(resolve_runs(["case="], LAB)) == no_case


def test_empty_run_name_is_a_clear_error(tmp_path):
    res = cli("compare", "", "--vs", "x", "--out", str(tmp_path / "c"))
    assert_clean_error(res, "an empty run name", rc=1)
    assert "open_dataset" not in res.text


def test_repeated_and_unknown_labels_are_named_and_not_counted():
    meta = read_meta(LAB / "meta_lab.csv")
    labels = read_labels(LAB / "labels.csv")
    first = labels.head(1)
    bad = pl.concat(
        [
            labels,
            first,  # a repeat
            first.with_columns(run=pl.lit("no_such_run")),
            first.with_columns(host=pl.lit("labZ")),
        ]
    )
    kept, notes = check_labels(bad, meta)
    assert kept.height == labels.height
    n = labels.height
    assert notes == [
        f"labels.csv: line {n + 2} repeats an earlier label (counted once; left out)",
        f"labels.csv: line {n + 3}: run no_such_run is not in meta_lab.csv (label left out)",
        f"labels.csv: line {n + 4}: host labZ has no run {first['run'][0]} in meta_lab.csv (label left out)",
    ]


def test_evaluate_counts_a_repeated_label_once_and_names_the_unknown_ones(tmp_path):
    from reveal_lab.evaluation import evaluate_dataset

    labels = read_labels(LAB / "labels.csv").filter(pl.col("scope") == "episode")
    run = labels["run"][0]
    meta = read_meta(LAB / "meta_lab.csv").filter(pl.col("run") == run)
    root = copy_lab_runs(meta, tmp_path / "lab")
    mine = labels.filter(pl.col("run") == run)
    bad = pl.concat([mine, mine.head(1), mine.head(1).with_columns(host=pl.lit("labZ"))])
    stamps = pl.col("start", "end").dt.strftime("%Y-%m-%d %H:%M:%S%.3f")
    bad.with_columns(stamps).write_csv(root / "labels.csv")
    ev = evaluate_dataset(root, mode="self", policy=POLICIES["default"].with_(prune=False), crosshost=False)
    assert ev.episodes.height == mine.height
    assert any("repeats an earlier label" in f for f in ev.failures)
    assert any("host labZ" in f for f in ev.failures)


def test_pruning_with_little_overlap_is_refused_then_reported(cnn):
    run = cnn[0]
    pruning = Pruning([f"Made:up{i}" for i in range(38)] + ["CPU:Busy%.-"], {}, {})
    with pytest.raises(ValueError, match=r"has \d of the 39 metrics of --pruning p.json .* --force"):
        check_pruning_overlap(pruning, run, "p.json", force=False)
    note = check_pruning_overlap(pruning, run, "p.json", force=True)
    assert "of the 39 metrics" in note and "--force" in note
    with pytest.raises(ValueError, match="'selected' is empty"):
        check_pruning_overlap(Pruning([], {}, {}), run, "p.json", force=True)


def test_other_workload_in_the_baseline_is_warned(cnn, mlp):
    assert workload_warning(cnn[0], [cnn[1]]) is None
    w = workload_warning(cnn[0], [mlp])
    assert w and "MLP" in w and "differs from the baseline" in w


@pytest.mark.slow
def test_thresholds_on_too_few_windows_are_warned(tmp_path, cnn, capsys):
    run = cnn[0]
    short = dataclasses.replace(run, frame=run.frame.slice(200, 50))  # 5 s: 3 windows
    path = write_parquet_run(short, tmp_path / "short.parquet")
    res = in_process(capsys, "detect", str(path), "--thresholds", "self", "--out", str(tmp_path / "r"))
    assert res.rc == 0, res.text
    assert "3 windows are too few for thresholds fit on the run itself" in res.err
    assert few_windows_warning("r", MIN_SELF_WINDOWS, "self", 0.01) is None
    assert few_windows_warning("r", 3, "robust", 0.01) is None


def test_ettr_outside_the_closed_forms_range_has_a_note_and_the_interval_stays_in_0_1():
    res = cli("reliability", "ettr", "--gpus", "8192", "--checkpoint-interval", "30m", "--restart", "10h",
              "--json")
    assert res.rc == 0, res.text
    out = json.loads(res.out)
    assert out["ettr"] == 0.0 and "outside the closed form's range" in out["note"]
    assert out["ettr_renewal"] > 0.2
    low = SimulationResult(ettr=np.array([0.0, 0.0, 0.0, 0.01]), failures=np.zeros(4), wall_h=np.ones(4))
    lo, hi = low.ci95
    assert lo == 0.0 and 0 < hi <= 1
