"""The Monte-Carlo simulator against the exact renewal value and the paper's closed form."""

import numpy as np
import pytest

from reveal_lab.reliability import agreement_grid, expected_ettr, renewal_ettr, simulate_ettr


def test_seeded_and_reproducible():
    a = simulate_ettr(16384, 0.25, 0.1, 0.01, n_jobs=2000, seed=7)
    b = simulate_ettr(16384, 0.25, 0.1, 0.01, n_jobs=2000, seed=7)
    c = simulate_ettr(16384, 0.25, 0.1, 0.01, n_jobs=2000, seed=8)
    assert np.array_equal(a.ettr, b.ettr) and not np.array_equal(a.ettr, c.ettr)
    assert a.ettr.shape == (2000,) and np.all((a.ettr > 0) & (a.ettr <= 1))


@pytest.mark.parametrize(
    "gpus, interval_h, restart_h, write_h",
    [(16384, 1.0, 5 / 60, 0.0), (65536, 0.25, 0.1, 1 / 60), (4096, 0.7, 0.3, 0.05), (131072, 0.5, 0.1, 0.01)],
)
def test_pooled_ratio_matches_exact_renewal(gpus, interval_h, restart_h, write_h):
    # 48 h of work = a whole number of segments; pooled useful/wall is the renewal ratio
    res = simulate_ettr(gpus, interval_h, restart_h, write_h, work_h=48.0, n_jobs=20_000, seed=1)
    assert res.pooled == pytest.approx(renewal_ettr(gpus, interval_h, restart_h, write_h), rel=0.005)


def test_no_failures_costs_only_checkpoint_writes():
    res = simulate_ettr(8, 0.5, 1.0, 0.05, failure_rate=1e-9, work_h=10.0, n_jobs=100, seed=0)
    assert np.all(res.failures == 0)
    assert res.ettr == pytest.approx(np.full(100, 10.0 / (10.0 + 20 * 0.05)))
    # a partial last segment still writes a checkpoint
    res = simulate_ettr(8, 3.0, 1.0, 0.5, failure_rate=1e-9, work_h=10.0, n_jobs=3, seed=0)
    assert res.wall_h == pytest.approx(np.full(3, 10.0 + 4 * 0.5))


def test_closed_form_within_5_percent_where_it_holds_and_breaks_beyond():
    grid = agreement_grid(
        gpus=(1024, 16384, 65536), intervals_min=(5, 30, 60), restarts_min=(5,), n_jobs=5000
    )
    holds = grid.filter(grid["regime"] == "approximation holds")
    breaks = grid.filter(grid["regime"] == "breaks")
    assert holds.height >= 5 and breaks.height >= 2
    assert holds["rel_gap"].max() < 0.05
    # MTTF (27 min at 64k GPUs) below the 60-min interval: the first-order form collapses
    worst = breaks.filter((breaks["gpus"] == 65536) & (breaks["interval_min"] == 60.0))
    assert worst["closed"][0] == 0.0 and worst["simulated"][0] > 0.2
    assert breaks["rel_gap"].max() > 0.2


def test_ci_covers_the_exact_value_and_fast_at_1e5():
    res = simulate_ettr(16384, 5 / 60, 5 / 60, n_jobs=100_000, seed=0)
    lo, hi = res.ci95
    assert lo < res.mean < hi and hi - lo < 0.001
    # 24 h of work per job: the per-job mean sits a little above the pooled ratio (Jensen)
    assert res.mean >= res.pooled
    assert abs(res.mean - expected_ettr(16384, 5 / 60, 5 / 60)) < 0.01
    q = res.quantiles()
    assert q["p5"] <= q["p50"] <= q["p95"]


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(interval_h=0.0), "interval"),
        (dict(restart_h=-1.0), "restart"),
        (dict(write_h=float("inf")), "checkpoint write"),
        (dict(work_h=0.0), "work"),
        (dict(n_jobs=0), "n_jobs"),
        (dict(gpus=0), "gpus"),
        (dict(gpus=1_000_000, interval_h=10.0), "almost never"),
    ],
)
def test_invalid_input(kw, match):
    args = dict(gpus=1024, interval_h=1.0, restart_h=0.1, n_jobs=10) | kw
    with pytest.raises(ValueError, match=match):
        simulate_ettr(**args)


def test_fixed_wall_budget_shares_the_long_run_mean():
    args = (16384, 0.25, 0.1, 0.01)
    wall = simulate_ettr(*args, wall_h=120.0, n_jobs=5000, seed=2)
    assert np.all(wall.wall_h == 120.0) and wall.params["wall_h"] == 120.0
    assert wall.mean == pytest.approx(renewal_ettr(*args), rel=0.01)
    # useful time is whole checkpointed segments only
    segs = wall.ettr * 120.0 / 0.25
    assert np.allclose(segs, np.round(segs))
    # no failures: floor(budget / (Δ + w)) segments
    calm = simulate_ettr(8, 0.5, 1.0, 0.1, failure_rate=1e-9, wall_h=10.0, n_jobs=4, seed=0)
    assert calm.ettr == pytest.approx(np.full(4, 16 * 0.5 / 10.0))
    with pytest.raises(ValueError, match="wall-clock budget"):
        simulate_ettr(*args, wall_h=0.0, n_jobs=5)
