import numpy as np
import pytest
from tslearn.metrics import dtw as tslearn_dtw

from reveal_lab.studies import (
    dtw_distance,
    dtw_reproducibility,
    dtw_to_median,
    median_trace,
    one_sided_test,
    signed_rank_test,
    znormalize,
)


def test_identical_traces_have_zero_distance():
    x = np.sin(np.linspace(0, 10, 300))
    assert dtw_distance(x, x.copy()) == 0.0
    assert np.allclose(dtw_to_median([x, x, x]), 0.0)


def test_shifted_trace_warps_to_zero_but_euclidean_does_not():
    t = np.linspace(0, 1, 200)
    a = np.exp(-((t - 0.4) ** 2) / 0.002)
    b = np.exp(-((t - 0.5) ** 2) / 0.002)  # the same bump, 20 samples later
    assert np.linalg.norm(a - b) > 1.0
    d = dtw_distance(a, b)
    assert d < 0.05 * np.linalg.norm(a - b)
    # a narrow Sakoe-Chiba band cannot absorb a 20-sample shift
    assert dtw_distance(a, b, window=3) > 10 * d


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("window", [None, 5, 40])
@pytest.mark.slow
def test_matches_tslearn(seed, window):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=180).cumsum(), rng.normal(size=180).cumsum()
    kw = {} if window is None else {"global_constraint": "sakoe_chiba", "sakoe_chiba_radius": window}
    assert dtw_distance(a, b, window) == pytest.approx(tslearn_dtw(a, b, **kw), abs=1e-9, rel=1e-12)


def test_matches_tslearn_unequal_lengths():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=150), rng.normal(size=97)
    assert dtw_distance(a, b) == pytest.approx(tslearn_dtw(a, b), abs=1e-9)


def test_znormalize_handles_nan_and_constant():
    z = znormalize(np.array([1.0, np.nan, 3.0, 5.0]))
    assert np.isfinite(z).all() and abs(z.mean()) < 1e-12 and abs(z.std() - 1) < 1e-12
    assert (znormalize(np.full(5, 7.0)) == 0).all()


def test_median_trace_resamples_unequal_lengths():
    m = median_trace([np.linspace(0, 1, 10), np.linspace(0, 1, 30), np.linspace(0, 2, 20)])
    assert m.shape == (20,)
    assert m[-1] == pytest.approx(1.0)


def test_wilcoxon_separable_and_identical():
    rng = np.random.default_rng(0)
    x = rng.normal(size=12)
    _, p, reason = signed_rank_test(x, x + 5 + rng.uniform(0, 1, size=12))
    assert p < 0.05 and reason == ""
    stat, p, reason = signed_rank_test(x, x.copy())
    assert (p, reason) == (1.0, "identical")
    _, p, reason = signed_rank_test(x[:3], x[:3] + 1)
    assert np.isnan(p) and reason == "too few pairs"


def _workloads(n_runs, noise=0.15, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 8, 160)
    shapes = {"sine": np.sin(t), "square": np.sign(np.sin(2.3 * t)), "ramp": (t % 2)}
    return {
        w: {
            "m1": [s + noise * rng.normal(size=t.size) for _ in range(n_runs)],
            "m2": [np.roll(s, 10) + noise * rng.normal(size=t.size) for _ in range(n_runs)],
        }
        for w, s in shapes.items()
    }


def test_study_separates_distinct_workloads():
    s = dtw_reproducibility(_workloads(8), length=80, window=10)
    assert s.pairs.height == 6
    assert s.share_significant == 1.0
    assert s.pairs["closer_within"].all()
    assert set(s.distances["reference"].unique()) == {"own", "sine", "square", "ramp"}
    assert s.summary()["share_significant_pct"][0] == 100.0


def test_study_on_indistinguishable_workloads_finds_little():
    rng = np.random.default_rng(5)
    same = {w: {"m": [rng.normal(size=100) for _ in range(10)]} for w in ("a", "b", "c")}
    s = dtw_reproducibility(same, length=50)
    assert s.share_significant < 0.67


def test_study_reports_untestable_pairs():
    s = dtw_reproducibility(_workloads(3), length=40)
    assert s.tested.height == 0
    assert set(s.pairs["reason"]) == {"too few pairs"}
    assert np.isnan(s.share_significant)
    # every (run, other workload) pair gives 3 x 2 = 6 pairs: testable
    s2 = dtw_reproducibility(_workloads(3), length=40, pairing="run_x_workload")
    assert s2.tested.height == 6 and (s2.pairs["n_pairs"] == 6).all()
    with pytest.raises(ValueError, match="pairing"):
        dtw_reproducibility(_workloads(3), pairing="bogus")


def test_study_handles_a_workload_without_usable_runs_of_a_metric():
    data = _workloads(6)
    data["empty"] = {"m1": [], "m2": [np.array([1.0])]}  # no run with >= 2 samples
    s = dtw_reproducibility(data, length=40)
    rows = s.pairs.filter(s.pairs["workload"] == "empty")
    assert rows.height == 2 and (rows["n_runs"] == 0).all() and rows["pvalue"].is_nan().all()
    assert s.tested.height == 6


def test_auto_pairing_uses_run_pairs_only_where_enough_runs():
    data = _workloads(8)
    data["few"] = {"m1": [np.sin(np.linspace(0, 8, 160)) * 3 for _ in range(3)], "m2": []}
    s = dtw_reproducibility(data, length=40, pairing="auto")
    used = dict(zip(s.pairs["workload"] + "/" + s.pairs["metric"], s.pairs["pairing"], strict=True))
    assert used["sine/m1"] == "run" and used["few/m1"] == "run_x_workload"
    few = s.pairs.filter((s.pairs["workload"] == "few") & (s.pairs["metric"] == "m1")).row(0, named=True)
    assert few["n_pairs"] == 9 and few["pvalue"] < 0.05


def test_constant_trace_distance_is_finite_and_exact():
    """A constant trace z-normalizes to zeros; its DTW distance to any trace equals the
    Euclidean bound, which dtaidistance's default pruning (strict ``<`` bound) turned into inf."""
    rng = np.random.default_rng(3)
    other = 0.05 * rng.normal(size=256)
    d = dtw_distance(np.zeros(256), other)
    assert np.isfinite(d)
    assert d == pytest.approx(tslearn_dtw(np.zeros(256), other), rel=1e-9)
    assert d == pytest.approx(np.sqrt((other**2).sum()), rel=1e-9)  # the diagonal is optimal
    data = _workloads(6)
    data["flat"] = {"m1": [np.full(160, 7.0) for _ in range(6)], "m2": [np.full(160, 1.0)] * 6}
    s = dtw_reproducibility(data, length=40)
    assert s.distances["distance"].is_finite().all()
    assert s.pairs["median_between"].is_finite().all()


def test_one_sided_test_known_answers():
    """Exact one-sided Wilcoxon: all n runs closer to their own workload gives p = 2^-n
    and effect +1; all farther gives p = 1 and effect -1 (the two-sided test calls both
    significant alike)."""
    within, between = np.arange(1.0, 7.0), np.arange(1.0, 7.0) + np.arange(1.0, 7.0)
    p, eff, reason = one_sided_test(within, between)
    assert (p, eff, reason) == (pytest.approx(1 / 64), 1.0, "")
    p, eff, _ = one_sided_test(between, within)
    assert p == 1.0 and eff == -1.0
    assert signed_rank_test(between, within)[1] == pytest.approx(2 / 64)  # two-sided: "significant"
    # effect: rank-biserial; ranks 1..6 of |d|, the largest farther: (15 - 6) / 21
    d = np.array([1.0, 2, 3, 4, 5, -6])
    p, eff, _ = one_sided_test(np.zeros(6), d)
    assert eff == pytest.approx((15 - 6) / 21)
    assert 1 / 64 < p < 0.5
    assert np.isnan(one_sided_test(np.zeros(3), np.ones(3), min_pairs=6)[0])


def test_study_reports_one_sided_and_wrong_direction():
    data = _workloads(8)
    s = dtw_reproducibility(data, length=60, window=10)
    assert s.pairs["significant_one_sided"].all() and (s.pairs["effect_size"] == 1.0).all()
    summ = s.summary()
    assert summ["share_one_sided_pct"][0] == 100.0 and summ["significant_wrong_direction"][0] == 0
    # per metric, one value per run over all workloads: 3 x 8 = 24 independent units
    assert s.by_metric["n_runs"].to_list() == [24, 24] and s.by_metric["significant_one_sided"].all()
    # workload a: runs alternate a rising and a falling ramp, so each run's leave-one-out
    # median is the other shape: every run is farther from its own workload than from b's.
    # Two-sided: significant (p = 2/256); one-sided: p = 1, effect -1.
    rng = np.random.default_rng(1)
    t = np.linspace(0, 1, 160)
    far = {
        "a": {"m": [(1 if i % 2 else -1) * t + 0.01 * rng.normal(size=t.size) for i in range(8)]},
        "b": {"m": [np.sin(20 * t) + 0.05 * rng.normal(size=t.size) for _ in range(8)]},
    }
    s = dtw_reproducibility(far, length=60)
    row = s.pairs.filter(s.pairs["workload"] == "a").row(0, named=True)
    assert row["significant"] and not row["closer_within"]
    assert row["p_one_sided"] == 1.0 and row["effect_size"] == -1.0 and not row["significant_one_sided"]
    summ = s.summary()
    assert summ["share_significant_pct"][0] == 100.0 and summ["significant_wrong_direction"][0] == 1
    assert summ["share_one_sided_pct"][0] == 50.0
