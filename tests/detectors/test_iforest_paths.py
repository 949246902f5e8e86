"""The Isolation Forest's own fit and scoring paths give scikit-learn's forest and scores.

``fit_isolation_forest`` makes the trees without scikit-learn's per-tree clone and fresh
random states, ``_ForestWalk`` scores many rows in one walk, and ``holdout_scores`` fits
without scoring the fit data: each is compared bit for bit with the public path.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import IsolationForest

from reveal_lab.detectors import DetectorEnsemble, IsolationForestDetector, default_detectors
from reveal_lab.detectors._iforest import _ForestWalk, fit_isolation_forest


def _data(n: int, p: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X[:, : p // 3] = np.round(X[:, : p // 3])  # ties and repeated values
    X[:3] *= 1e6
    return X


def _same_forest(a: IsolationForest, b: IsolationForest) -> None:
    assert a.get_params() == b.get_params()
    assert len(a.estimators_) == len(b.estimators_)
    pairs = zip(a.estimators_, b.estimators_, a.estimators_features_, b.estimators_features_, strict=True)
    for ta, tb, fa, fb in pairs:
        assert ta.get_params() == tb.get_params()
        sa, sb = ta.tree_.__getstate__(), tb.tree_.__getstate__()
        assert sa.keys() == sb.keys()
        for k in sa:
            np.testing.assert_array_equal(sa[k], sb[k])
        np.testing.assert_array_equal(fa, fb)
    assert a.offset_ == b.offset_ and a.max_samples_ == b.max_samples_


@pytest.mark.parametrize(
    ("n", "p", "max_samples", "seed"),
    [(300, 40, "auto", 0), (60, 7, "auto", 3), (200, 12, 64, 11), (5, 2, "auto", 0)],
)
def test_fit_isolation_forest_is_sklearns_forest(n, p, max_samples, seed):
    X = _data(n, p, seed)
    kw = {"n_estimators": 40, "max_samples": max_samples, "contamination": "auto", "random_state": seed}
    ours = fit_isolation_forest(X, **kw)
    _same_forest(IsolationForest(**kw).fit(X), ours)
    assert "_make_estimator" not in vars(ours)
    assert all(isinstance(t.random_state, int) for t in ours.estimators_)
    np.testing.assert_array_equal(ours.score_samples(X), IsolationForest(**kw).fit(X).score_samples(X))


def test_fit_isolation_forest_in_parallel_is_sklearns_forest():
    X = _data(120, 9)
    kw = {"n_estimators": 20, "random_state": 1, "n_jobs": 2}
    _same_forest(IsolationForest(**kw).fit(X), fit_isolation_forest(X, **kw))


@pytest.mark.parametrize(("n", "p"), [(400, 30), (90, 40), (40, 7), (300, 3)])
@pytest.mark.parametrize("seed", [0, 5])
def test_forest_walk_scores_are_sklearns(n, p, seed):
    X = _data(n, p, seed)
    det = IsolationForestDetector(n_estimators=60, random_state=seed).fit(X)
    rng = np.random.default_rng(seed + 1)
    Y = np.vstack([X, 10 * rng.normal(size=(50, p)), X[:3] + 1e-7])
    walk = _ForestWalk.of(det.model_)
    assert walk is not None
    expected = -det.model_.score_samples(Y)
    np.testing.assert_array_equal(walk.scores(Y), expected)
    np.testing.assert_array_equal(det.decision_function(Y), expected)
    np.testing.assert_array_equal(det.decision_scores_, -det.model_.score_samples(X))
    for i in range(0, Y.shape[0], 23):  # one row at a time
        np.testing.assert_array_equal(det.decision_function(Y[i : i + 1]), expected[i : i + 1])


def test_forest_walk_leaves_other_inputs_to_sklearn():
    X = _data(200, 6)
    det = IsolationForestDetector(n_estimators=30).fit(X)
    many = np.tile(X, (_ForestWalk.MAX_ROWS // X.shape[0] + 1, 1))
    np.testing.assert_array_equal(det.decision_function(many), -det.model_.score_samples(many))
    sub = IsolationForest(n_estimators=10, max_features=0.5, random_state=0).fit(X)
    assert _ForestWalk.of(sub) is None


def test_forest_walk_is_not_pickled():
    import pickle

    X = _data(80, 5)
    det = IsolationForestDetector(n_estimators=20).fit(X)
    assert "_walk" in vars(det)
    back = pickle.loads(pickle.dumps(det))
    assert "_walk" not in vars(back)
    np.testing.assert_array_equal(back.decision_function(X[:7]), det.decision_function(X[:7]))


@pytest.mark.parametrize("clip", [None, 5.0])
def test_holdout_scores_are_fit_then_score(clip):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(150, 60))
    X[:, :4] = 0.0
    X[3, 7] = np.nan
    Y = rng.normal(size=(40, 60))
    Y[2, 3] = np.inf
    detectors = default_detectors(clip=clip)
    expected = DetectorEnsemble(detectors).fit(X).score(Y).scores
    got = DetectorEnsemble(detectors).holdout_scores(X, Y)
    assert list(got) == list(expected)
    for m in expected:
        np.testing.assert_array_equal(got[m], expected[m])


def test_refit_scores_with_the_new_forest():
    det = IsolationForestDetector(n_estimators=20)
    X, Z = _data(80, 5, 0), _data(80, 5, 1) + 3.0
    det.fit(X).decision_function(X[:4])
    np.testing.assert_array_equal(det.fit(Z).decision_function(X[:4]), -det.model_.score_samples(X[:4]))


def test_forests_shared_only_on_the_same_data_and_parameters():
    from reveal_lab.detectors import _iforest

    X = _data(70, 6, 4)
    paper = IsolationForestDetector(n_estimators=15, outlier_fence=False).fit(X)
    fenced = IsolationForestDetector(n_estimators=15).fit(X.copy())
    assert fenced.model_ is paper.model_
    assert IsolationForestDetector(n_estimators=15, random_state=1).fit(X).model_ is not paper.model_
    assert IsolationForestDetector(n_estimators=15).fit(X + 1e-9).model_ is not paper.model_
    _same_forest(paper.model_, IsolationForest(n_estimators=15, contamination="auto", random_state=0).fit(X))
    for i in range(_iforest.FORESTS_KEPT + 1):
        IsolationForestDetector(n_estimators=5, random_state=100 + i).fit(X)
    assert len(_iforest._FORESTS) == _iforest.FORESTS_KEPT
    assert IsolationForestDetector(n_estimators=15).fit(X).model_ is not paper.model_  # no longer kept


def test_unseeded_forests_are_not_shared():
    X = _data(50, 4, 6)
    a = IsolationForestDetector(n_estimators=5, random_state=None).fit(X)
    b = IsolationForestDetector(n_estimators=5, random_state=None).fit(X)
    assert a.model_ is not b.model_
