"""PCA reconstruction detector and POT thresholds: contract, attribution sums, planted faults."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from reveal_lab.detectors import PCAReconstructionDetector, pot_threshold


# Every check passes: nothing is xfailed (0/1 predict, PyOD convention, as the others).
@parametrize_with_checks([PCAReconstructionDetector(), PCAReconstructionDetector(standardize=False)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _data(seed=0, n=400, p=12):
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, 3))
    return latent @ rng.normal(size=(3, p)) + 0.1 * rng.normal(size=(n, p))


@pytest.mark.parametrize("n,p", [(400, 12), (60, 200)], ids=["covariance", "gram"])
@pytest.mark.parametrize("standardize", [True, False])
def test_residual_contributions_sum_to_the_score(n, p, standardize):
    X = _data(n=n, p=p)
    det = PCAReconstructionDetector(standardize=standardize).fit(X)
    assert 1 <= det.n_components_ < min(n, p)
    rng = np.random.default_rng(5)
    Y = X[:20] + rng.normal(size=(20, p))
    c = det.explain(Y)
    assert (c >= 0).all()
    np.testing.assert_allclose(c.sum(axis=1), det.decision_function(Y), rtol=1e-10)
    np.testing.assert_allclose(det.explain(X).sum(axis=1), det.decision_scores_, rtol=1e-10)
    # fit scores: about 1 % above the 0.99 quantile
    assert 1 <= det.labels_.sum() <= max(2, n // 50)


def test_matches_scikit_learn_pca_reconstruction():
    from sklearn.decomposition import PCA

    X = _data(p=8)
    det = PCAReconstructionDetector(scale_floor=0.0).fit(X)
    Z = (X - X.mean(0)) / X.std(0)
    pca = PCA(n_components=0.95, svd_solver="full").fit(Z)
    err = ((Z - pca.inverse_transform(pca.transform(Z))) ** 2).sum(axis=1)
    assert det.n_components_ == pca.n_components_
    np.testing.assert_allclose(det.decision_scores_, err, rtol=1e-8, atol=1e-12)


def test_planted_multi_metric_break_is_flagged_and_ranked_first():
    data = _data(seed=2, n=650, p=20)
    X, Y = data[:600], data[600:].copy()
    # metrics 2, 6 and 9 leave the correlation structure (noise sd 0.1), each within its range
    Y[20, [2, 6, 9]] += np.array([1.0, -1.0, 1.0])
    assert ((Y[20] >= X.min(0)) & (Y[20] <= X.max(0)))[[2, 6, 9]].all()
    det = PCAReconstructionDetector().fit(X)
    assert det.predict(Y)[20] == 1
    assert det.predict(Y).sum() <= 3
    assert set(np.argsort(-det.explain(Y[[20]])[0])[:3]) == {2, 6, 9}


def test_constant_and_missing_features_are_neutral():
    X = _data(n=300, p=6)
    X[:, 3] = 7.0
    X[:, 4] = np.nan
    det = PCAReconstructionDetector().fit(X)
    Y = X[:5].copy()
    Y[:, 3] = 7.5
    Y[:, 4] = 100.0
    e = det.explain(Y)
    assert (e[:, [3, 4]] == 0).all()
    np.testing.assert_allclose(det.decision_function(Y), det.decision_function(X[:5]))


def test_bad_parameters_raise():
    with pytest.raises(ValueError, match="variance"):
        PCAReconstructionDetector(variance=1.5).fit(_data())
    with pytest.raises(ValueError, match="scale_floor"):
        PCAReconstructionDetector(scale_floor=-1).fit(_data())


def test_pot_threshold_matches_a_known_tail_and_rejects_bad_input():
    rng = np.random.default_rng(1)
    s = rng.exponential(size=50_000)
    # the exponential's exact 1 - risk quantile is -log(risk)
    for risk in (1e-3, 1e-4):
        assert abs(pot_threshold(s, risk=risk) - np.log(1 / risk)) < 0.15 * np.log(1 / risk)
    # a lower risk gives a higher threshold, beyond the empirical maximum for tiny risks
    assert pot_threshold(s, risk=1e-6) > s.max()
    # too few excesses: the largest score
    assert pot_threshold(np.arange(100.0), init_quantile=0.95) == 99.0
    with pytest.raises(ValueError, match="risk"):
        pot_threshold(s, risk=0.0)
    with pytest.raises(ValueError, match="finite"):
        pot_threshold(np.array([np.nan]))


def test_ensemble_agreement_with_the_fourth_detector():
    from reveal_lab.config import DetectConfig
    from reveal_lab.detectors import DetectorEnsemble, default_detectors

    assert [d.name for d in default_detectors()] == ["zscore", "mahalanobis", "iforest"]
    dets = default_detectors(DetectConfig(iforest_estimators=50, pcarecon=True))
    assert [d.name for d in dets] == ["zscore", "mahalanobis", "iforest", "pcarecon"]
    data = _data(n=650)
    ens = DetectorEnsemble(dets).fit(data[:600])
    Y = data[600:].copy()
    Y[10:15, ::2] += 6  # a shift that also breaks the correlations
    res = ens.score(Y)
    np.testing.assert_array_equal(res.agreement, sum(res.labels.values()))
    assert (res.agreement[10:15] >= 3).all() and (res.labels["pcarecon"][10:15] == 1).all()
    # the correlation break is what the reconstruction error sees and the Mahalanobis
    # distance inside the kept subspace mostly does not (measured: 650x vs < 1.3x threshold)
    assert (res.scores["pcarecon"][10:15] > 100 * res.thresholds["pcarecon"]).all()
    assert (res.scores["mahalanobis"][10:15] < 10 * res.thresholds["mahalanobis"]).all()
    assert res.agreement[:10].mean() < 0.5
    # the combined score weighs the reconstruction error as a distance, like Mahalanobis
    d = ens.detectors_["pcarecon"]
    np.testing.assert_allclose(d.normalize(res.scores["pcarecon"]), np.sqrt(res.scores["pcarecon"] / d.threshold_))
