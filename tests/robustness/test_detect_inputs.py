"""``detect`` on unfit baselines and extreme values: refused or warned, never confident
nonsense; a huge spike is flagged, not hidden."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import polars as pl
import pytest

from reveal_lab.pipeline import BaselineMismatch, detect_run
from reveal_lab.synth import make_run
from reveal_lab.telemetry import metric_columns


@pytest.fixture(scope="module")
def runs():
    run = make_run(40, 40, seed=1, profile_seed=0).run
    base = make_run(40, 40, seed=2, profile_seed=0).run
    return run, base


def test_baseline_sharing_few_metrics_is_refused_then_warned_with_force(runs):
    run, base = runs
    few = dataclasses.replace(base, frame=base.frame.select("timestamp", *metric_columns(base.frame)[:4]))
    with pytest.raises(BaselineMismatch, match=r"shares \d+ of the run's \d+ metrics.*--force"):
        detect_run(run, baseline=[few])
    det = detect_run(run, baseline=[few], force_baseline=True)
    assert any("used because of --force" in w for w in det.warnings)


def test_matching_baseline_says_how_much_it_shares(runs):
    run, base = runs
    det = detect_run(run, baseline=[base])
    assert any("the baseline shares" in w and "(100 %)" in w for w in det.warnings)


def test_all_constant_baseline_is_refused(runs):
    run, base = runs
    const = base.frame.with_columns([pl.lit(1.0).alias(c) for c in metric_columns(base.frame)])
    with pytest.raises(BaselineMismatch, match="degenerate"):
        detect_run(run, baseline=[dataclasses.replace(base, frame=const)])


@pytest.mark.parametrize("value", [1e25, 1e29, 1e308])
def test_one_huge_value_is_flagged_not_hidden(runs, value):
    run, _ = runs
    col = metric_columns(run.frame)[3]
    vals = run.frame[col].to_numpy().copy()
    vals[200] = value  # t = 20 s
    spiked = dataclasses.replace(run, frame=run.frame.with_columns(pl.Series(col, vals)))
    t = run.frame["timestamp"][200]
    for min_run in (1, None):  # every window over a threshold; the default for a run alone (8)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no numpy overflow warnings
            det = detect_run(spiked, min_run=min_run)
        hit = det.windows.filter((pl.col("start") <= t) & (pl.col("end") > t))
        assert hit.height and (hit["raw_agreement"] >= 1).any(), hit
        if min_run == 1:
            assert (hit["agreement"] >= 1).any(), hit
        else:  # one sample lies in 3 windows: dropped by the 8-window rule, and counted as dropped
            assert det.config["min_run_windows"] == 8 and det.summary["short_runs_dropped"] >= 1
        assert all(np.isfinite(v) for v in det.thresholds[next(iter(det.thresholds))].values())
        # a run alone takes robust thresholds: the fence did not set them, so no note says it did
        assert not any("outlier fence" in w for w in det.warnings)
        if value > 1e30:
            assert any("clipped" in w for w in det.warnings)
    det = detect_run(spiked, min_run=1, thresholds="self")  # quantile thresholds: the fence caps them
    assert any("outlier fence" in w for w in det.warnings)
    hit = det.windows.filter((pl.col("start") <= t) & (pl.col("end") > t))
    assert (hit["agreement"] >= 1).any(), hit


@pytest.mark.slow
def test_cli_refuses_a_mismatched_baseline_and_names_force(tmp_path, runs, capsys):
    """The refusal from a real ``reveal-lab detect`` process; the run with ``--force`` in
    this one."""
    from reveal_lab.io import write_parquet_run

    from .conftest import assert_clean_error, cli, in_process

    run, base = runs
    few = dataclasses.replace(base, frame=base.frame.select("timestamp", *metric_columns(base.frame)[:4]))
    write_parquet_run(run, tmp_path / "run.parquet")
    write_parquet_run(few, tmp_path / "few.parquet")
    res = cli("detect", str(tmp_path / "run.parquet"), "--baseline", str(tmp_path / "few.parquet"),
              "--out", str(tmp_path / "rep"))
    assert_clean_error(res, "shares", "--force", rc=1)
    res = in_process(capsys, "detect", str(tmp_path / "run.parquet"), "--baseline",
                     str(tmp_path / "few.parquet"), "--force", "--out", str(tmp_path / "rep"))
    assert res.rc == 0, res.text
    assert "used because of --force" in (tmp_path / "rep" / "report.md").read_text()
