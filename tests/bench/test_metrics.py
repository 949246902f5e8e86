"""Detection and attribution metrics on hand-made cases with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from reveal_lab.bench import (
    average_precision,
    best_f1,
    best_f1_point_adjusted,
    decision_f1,
    hit_rate,
    ndcg,
    point_adjust_decisions,
    point_adjust_scores,
    random_hit_rate,
    random_ndcg,
    top_k,
)


def test_best_f1_of_a_perfect_score_is_one():
    rng = np.random.default_rng(0)
    y = (rng.random(500) < 0.1).astype(int)
    s = y + 0.1 * rng.random(500)  # every anomaly above every normal row
    assert best_f1(s, y)["f1"] == pytest.approx(1.0)
    assert average_precision(s, y) == pytest.approx(1.0)


def test_best_f1_hand_case_and_ties():
    y = np.array([0, 1, 0, 1, 0, 0])
    # descending: .9(0) .8(1) .7(1) ...: best at top-3: P=2/3, R=1 -> F1=0.8
    s = np.array([0.1, 0.8, 0.9, 0.7, 0.2, 0.3])
    r = best_f1(s, y)
    assert r["f1"] == pytest.approx(0.8)
    assert r["threshold"] == pytest.approx(0.7)
    # tied scores cannot be split by a threshold: all-equal gives the flag-everything F1
    assert best_f1(np.ones(6), y)["f1"] == pytest.approx(2 * (2 / 6) / (2 / 6 + 1))


def test_best_f1_inverted_score_is_poor_and_no_positive_is_zero():
    y = np.r_[np.zeros(90), np.ones(10)]
    assert best_f1(-np.arange(100.0), y)["f1"] < 0.2
    assert best_f1(np.arange(5.0), np.zeros(5))["f1"] == 0.0


def test_point_adjustment_hand_case():
    y = np.array([0, 1, 1, 1, 0, 0, 1, 1, 0])
    s = np.array([0.1, 0.2, 0.9, 0.2, 0.3, 0.4, 0.1, 0.2, 0.5])
    assert point_adjust_scores(s, y).tolist() == [0.1, 0.9, 0.9, 0.9, 0.3, 0.4, 0.2, 0.2, 0.5]
    # adjusted: t=.9 flags the first run (TP 3, FP 0: F1 .75); t=.2 flags both runs and
    # rows 4, 5, 8 (TP 5, FP 3: P 5/8, R 1, F1 10/13) -- the best
    pa = best_f1_point_adjusted(s, y)
    assert pa["f1"] == pytest.approx(10 / 13)
    assert pa["threshold"] == pytest.approx(0.2)
    assert best_f1(s, y)["f1"] < pa["f1"]
    dec = np.array([0, 0, 1, 0, 0, 0, 0, 0, 1])
    assert point_adjust_decisions(dec, y).tolist() == [0, 1, 1, 1, 0, 0, 0, 0, 1]
    f = decision_f1(point_adjust_decisions(dec, y), y)
    assert (f["precision"], f["recall"]) == pytest.approx((3 / 4, 3 / 5))


def test_point_adjusted_best_f1_equals_brute_force():
    rng = np.random.default_rng(3)
    y = np.zeros(300, dtype=int)
    for a in rng.choice(280, 8, replace=False):
        y[a : a + rng.integers(1, 15)] = 1
    s = rng.random(300)
    best = 0.0
    for t in np.unique(s):
        f = decision_f1(point_adjust_decisions(s >= t, y), y)["f1"]
        best = max(best, f)
    assert best_f1_point_adjusted(s, y)["f1"] == pytest.approx(best)


def test_top_k_is_floor_of_p_times_l_capped_by_ranking():
    assert top_k(150, 3, 38) == 4  # floor(4.5)
    assert top_k(150, 2, 38) == 3
    assert top_k(100, 7, 38) == 7
    assert top_k(150, 15, 19) == 19


def test_hit_rate_and_ndcg_on_a_hand_made_ranking():
    ranking = [5, 2, 9, 1, 3, 4, 6, 7, 8]
    labelled = [1, 2, 3]
    # P=100: top 3 = {5, 2, 9}: one of three labelled
    assert hit_rate(ranking, labelled, 100) == pytest.approx(1 / 3)
    # P=150: top floor(4.5)=4 = {5, 2, 9, 1}: two of three
    assert hit_rate(ranking, labelled, 150) == pytest.approx(2 / 3)
    # NDCG@100: rel = [0,1,0] -> DCG = 1/log2(3); IDCG = 1 + 1/log2(3) + 1/2
    assert ndcg(ranking, labelled, 100) == pytest.approx((1 / np.log2(3)) / (1 + 1 / np.log2(3) + 0.5))
    # NDCG@150: rel = [0,1,0,1]; IDCG over min(4, 3) = 3 relevant slots
    exp = (1 / np.log2(3) + 1 / np.log2(5)) / (1 + 1 / np.log2(3) + 0.5)
    assert ndcg(ranking, labelled, 150) == pytest.approx(exp)
    # a perfect ranking scores 1 on both
    assert hit_rate([3, 1, 2, 4], labelled, 100) == 1.0
    assert ndcg([3, 1, 2, 4], labelled, 150) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        hit_rate(ranking, [], 100)


def test_random_baselines_match_a_monte_carlo_estimate():
    rng = np.random.default_rng(7)
    D, labelled = 19, list(range(1, 13))
    hits = {100: [], 150: []}
    nd = {100: [], 150: []}
    for _ in range(4000):
        r = (rng.permutation(D) + 1).tolist()
        for p in (100, 150):
            hits[p].append(hit_rate(r, labelled, p))
            nd[p].append(ndcg(r, labelled, p))
    for p in (100, 150):
        assert np.mean(hits[p]) == pytest.approx(random_hit_rate(len(labelled), D, p), abs=0.01)
        assert np.mean(nd[p]) == pytest.approx(random_ndcg(len(labelled), D, p), abs=0.01)
    # ASD-like labels (12 of 19 marked) make a random ranking look good at P=150
    assert random_hit_rate(12, 19, 150) == pytest.approx(18 / 19)
    assert random_hit_rate(13, 19, 150) == 1.0
