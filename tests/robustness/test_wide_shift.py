"""1,200 metrics, 30 of them shifted by 16 standard deviations for 5 s (issue #43): with
fault-free baseline runs the shift is found; a run alone with today's defaults is not "silently
fine": the detectors flag the shift, and the rule that a run alone counts a flag only in an
episode of `min_run` windows in a row (8: a 5 s event spans 7 windows of 3 s every 1 s) drops
it, which the summary counts (`short_runs_dropped`) and the report says (`--min-run 1`). The
number of metrics does not decide it: 60 of them behave the same. With 1,200 the shifted 30 are
2.5 % of their family: its mean |z| moves by one unit of its spread, under the family threshold,
and the family's upper tail (the mean of its 1 % largest |z|) finds it."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest

from reveal_lab.pipeline import detect_run
from reveal_lab.telemetry import Run, RunMeta

SHIFT = (30.0, 35.0)  # seconds into the run
SHIFTED, SIGMAS = 30, 16.0


def _run(seed: int, n: int, shifted: bool) -> Run:
    rng = np.random.default_rng(seed)
    rows = 600  # 60 s at 100 ms
    x = rng.normal(100.0, 1.0, size=(rows, n))
    if shifted:
        x[int(SHIFT[0] * 10) : int(SHIFT[1] * 10), :SHIFTED] += SIGMAS
    start = dt.datetime(2026, 1, 1)
    stamps = [start + dt.timedelta(milliseconds=100 * i) for i in range(rows)]
    metrics = (pl.Series(f"Vmstat:field{j:04d}.h[count]", x[:, j]) for j in range(n))
    frame = pl.DataFrame([pl.Series("timestamp", stamps, pl.Datetime("ms")), *metrics])
    meta = RunMeta(run_id=f"r{seed}{'-shifted' if shifted else ''}", hosts=("h",), workload="W")
    return Run(meta, frame, [])


def _hits(det, run: Run) -> list[float]:  # noqa: ANN001
    t0 = run.frame["timestamp"][0]
    return [(s - t0).total_seconds() for s in det.windows.filter(det.decision)["start"]]


def _covers_shift(starts: list[float], window_s: float = 3.0) -> bool:
    return any(s < SHIFT[1] and s + window_s > SHIFT[0] for s in starts)


@pytest.mark.parametrize("n", [1200, 60])
def test_a_short_wide_shift_is_found_with_baselines(n):
    run = _run(0, n, shifted=True)
    det = detect_run(run, [_run(s, n, shifted=False) for s in (1, 2, 3)])
    assert _covers_shift(_hits(det, run)), _hits(det, run)


def test_alone_a_short_shift_in_60_metrics_is_flagged_and_its_drop_counted():
    run = _run(0, 60, shifted=True)
    alone = detect_run(run)
    assert not _covers_shift(_hits(alone, run))  # shorter than min_run's 8 windows in a row
    assert alone.summary["short_runs_dropped"] > 0, "the drop is not counted for the report"
    assert _covers_shift(_hits(detect_run(run, min_run=1), run))


def test_alone_a_short_shift_in_30_of_1200_metrics_is_found():
    """Every window counted (``min_run=1``): the Z-score by family's upper tail flags the shift."""
    run = _run(0, 1200, shifted=True)
    assert _covers_shift(_hits(detect_run(run, min_run=1), run))
