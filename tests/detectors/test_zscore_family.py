"""The Z-score by family (``ZScoreDetector(groups=...)``, a run alone): a strong shift in a
minority of a large family's features is found by the family's upper tail, not averaged away
by its mean; one twitching feature still cannot fire its family, a calm run stays under the
threshold whatever the family's size, and the features of the tail that fired come first."""

from __future__ import annotations

import numpy as np
import pytest

from reveal_lab.detectors import ZScoreDetector
from reveal_lab.pipeline import family_threshold

CLIP = 10.0
#: a run alone's Z-score threshold with one family of level and shape features (two groups)
THRESHOLD = family_threshold(0.01, 3, 2)


def _windows(p: int, seed: int = 0, n: int = 400) -> np.ndarray:
    return np.random.default_rng(seed).normal(100.0, 1.0, size=(n, p))


def _fit(X: np.ndarray) -> ZScoreDetector:
    p = X.shape[1]
    return ZScoreDetector(clip=CLIP, groups=tuple([0] * (p // 2) + [1] * (p - p // 2))).fit(X)


def test_a_shift_in_30_of_1200_features_of_one_family_is_found():
    X = _windows(2400)
    X[200:205, :30] += 16.0  # 30 features of the first family (1,200), 16 sigma, 5 windows
    det = _fit(X)
    scores = det.decision_scores_
    assert scores[200:205].min() > THRESHOLD + 1, scores[200:205]
    assert np.delete(scores, range(200, 205)).max() < THRESHOLD
    # the family's mean alone moves by 30 · 10 / 1,200 = 0.25, one unit of its least scale
    S, T = det._group_scores(X[200:205], det._group_matrix(X.shape[1]))
    assert S.max() < THRESHOLD < T[:, 0].min()


def test_one_feature_at_the_clip_cannot_fire_its_family():
    X = _windows(2400)
    X[200:205, 7] += 1e6
    assert _fit(X).decision_scores_[200:205].max() < 1.0


@pytest.mark.parametrize("p", [60, 600, 6000])
def test_a_calm_run_stays_under_the_threshold_whatever_the_family_size(p):
    scores = _fit(_windows(p, seed=p)).decision_scores_
    assert scores.max() < THRESHOLD / 2, scores.max()


def test_the_tail_that_fired_comes_first_in_explain():
    X = _windows(2400)
    X[200:205, 1200:1230] += 16.0  # the second family's first 30 features
    det = _fit(X)
    e = det.explain(X[202:203])[0]
    assert set(np.argsort(e)[::-1][:30]) == set(range(1200, 1230))
    assert e[1200:1230].sum() > 3 * (e.sum() - e[1200:1230].sum())
