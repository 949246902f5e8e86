"""Closed forms of the reliability model on known answers and their input checks."""

import math

import numpy as np
import pytest

from reveal_lab.reliability import (
    CLAIM_KEYS,
    SCENARIOS,
    STATUSES,
    expected_ettr,
    interval_for_target,
    job_failure_rate,
    mttf_hours,
    optimal_interval,
    paper_claims,
    renewal_ettr,
    resolve_failure_rate,
)


def test_mttf_projections_match_the_papers():
    assert mttf_hours(16384) == pytest.approx(1.8, abs=0.01)
    assert mttf_hours(131072) == pytest.approx(0.23, abs=0.01)
    # one node at 6.50 / 1,000 node-days: 1000/6.5 days
    assert mttf_hours(8) == pytest.approx(1000 / 6.5 * 24)
    assert mttf_hours(8, "rsc2") / mttf_hours(8, "rsc1") == pytest.approx(6.50 / 2.34)
    # partial nodes round up; MTTF falls as 1/N
    assert mttf_hours(9) == pytest.approx(mttf_hours(16))
    assert mttf_hours(2048) == pytest.approx(mttf_hours(1024) / 2)


@pytest.mark.parametrize("s", [s for s in SCENARIOS if s["id"] != "ettr_100k_2min"], ids=lambda s: s["id"])
def test_quoted_scenarios_within_tolerance(s):
    got = expected_ettr(s["gpus"], s["interval_h"], s["restart_h"], s["write_h"], s["rate"])
    assert abs(got - s["paper"]) <= 0.03, (s["id"], got)


def test_100k_scenario_reaches_0_9_but_not_exactly():
    s = next(s for s in SCENARIOS if s["id"] == "ettr_100k_2min")
    got = expected_ettr(s["gpus"], s["interval_h"], s["restart_h"], s["write_h"], s["rate"])
    assert 0.9 <= got <= 0.95
    need = interval_for_target(100_000, 0.9, "rsc2")
    assert expected_ettr(100_000, need, need, 0.0, "rsc2") == pytest.approx(0.9)
    assert 3 < need * 60 < 3.5


def test_closed_form_by_hand_and_checkpoint_cost():
    lam = 2048 * 6.5 / 1000 / 24
    assert job_failure_rate(16384) == pytest.approx(lam)
    want = (1 - lam * (0.1 + 0.25)) / (1 + 0.02 / 0.5)
    assert expected_ettr(16384, 0.5, 0.1, 0.02) == pytest.approx(want)
    # no failures to speak of: only the checkpoint writes cost
    assert expected_ettr(8, 1.0, 0.0, 0.1, 1e-9) == pytest.approx(1 / 1.1)
    # vectorised over intervals, clipped at 0 where the first-order loss exceeds 1
    e = expected_ettr(131072, np.array([0.05, 1.0, 10.0]), 0.1)
    assert e.shape == (3,) and e[-1] == 0.0 and e[0] > e[1]


def test_renewal_agrees_with_closed_form_to_first_order():
    small = dict(gpus=64, interval_h=0.5, restart_h=0.1, write_h=0.01)
    assert renewal_ettr(**small) == pytest.approx(expected_ettr(**small), rel=1e-3)
    big = dict(gpus=65536, interval_h=1.0, restart_h=0.1)
    assert renewal_ettr(**big) > expected_ettr(**big) + 0.1  # first order undershoots


def test_optimal_interval_maximises_the_closed_form():
    w = 1 / 60
    young = optimal_interval(16384, w)
    assert young == pytest.approx(math.sqrt(2 * w / job_failure_rate(16384)))
    exact = optimal_interval(16384, w, restart_h=5 / 60)
    grid = np.linspace(0.01, 1.0, 20001)
    best = grid[np.argmax(expected_ettr(16384, grid, 5 / 60, w))]
    assert exact == pytest.approx(best, abs=1e-4)
    assert abs(exact - young) / young < 0.1
    assert optimal_interval(16384, 0.0) == 0.0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: mttf_hours(0), "gpus"),
        (lambda: mttf_hours(2.5), "gpus"),
        (lambda: mttf_hours(8, 0), "failure rate"),
        (lambda: mttf_hours(8, -1), "failure rate"),
        (lambda: mttf_hours(8, "rsc3"), "rsc1"),
        (lambda: mttf_hours(8, gpus_per_node=0), "per node"),
        (lambda: expected_ettr(8, 0.0, 0.1), "interval"),
        (lambda: expected_ettr(8, 1.0, -0.1), "restart_h"),
        (lambda: expected_ettr(8, 1.0, 0.1, float("nan")), "write_h"),
        (lambda: optimal_interval(8, -1.0), "write_h"),
    ],
)
def test_invalid_input_is_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_resolve_failure_rate_names():
    assert resolve_failure_rate("RSC-1") == 6.5 and resolve_failure_rate("rsc2") == 2.34


def test_paper_claims_shape_and_verdicts():
    rows = paper_claims(n_jobs=4000, seed=3)
    assert rows and all(tuple(r) == CLAIM_KEYS for r in rows)
    assert all(r["status"] in STATUSES for r in rows)
    by = {r["claim_id"]: r for r in rows}
    assert by["mttf_16k"]["status"] == "reproduced" and by["mttf_1k"]["status"] == "differs"
    assert by["ettr_16k_5min"]["status"] == "reproduced"
    assert by["lemon_512plus"]["status"] == "cannot be checked here" and by["lemon_512plus"]["ours"] is None
    agree = by["ettr_closed_vs_sim"]
    assert agree["status"] == "reproduced" and agree["ours"] <= 0.05
