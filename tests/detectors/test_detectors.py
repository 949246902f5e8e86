"""The three detectors: scikit-learn contract, thresholds, NaN handling, explanations."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from reveal_lab.config import DetectConfig
from reveal_lab.detectors import (
    DetectorEnsemble,
    IsolationForestDetector,
    PCAMahalanobisDetector,
    ZScoreDetector,
    default_detectors,
)
from reveal_lab.detectors._base import outlier_fence

DETECTORS = [
    PCAMahalanobisDetector(precision="float32"),
    PCAMahalanobisDetector(precision="mixed"),
    ZScoreDetector(),
    ZScoreDetector(robust=False),
    PCAMahalanobisDetector(),
    ZScoreDetector(clip=10.0),
    PCAMahalanobisDetector(clip=10.0),
    IsolationForestDetector(n_estimators=25),
    ZScoreDetector(outlier_fence=False),
]


# Every check passes: nothing is xfailed. (The detectors are plain estimators, not
# OutlierMixin: their predict follows PyOD's 0/1 convention, not sklearn's -1/+1.)
@parametrize_with_checks(DETECTORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _data(seed=0, n=400, p=12):
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, 3))
    return latent @ rng.normal(size=(3, p)) + 0.3 * rng.normal(size=(n, p))


@pytest.mark.parametrize(
    "det",
    [ZScoreDetector(), PCAMahalanobisDetector(), IsolationForestDetector(n_estimators=60)],
    ids=lambda d: d.name,
)
def test_contract_threshold_and_labels(det):
    """Broken variant: a threshold at another quantile (e.g. 0.98: 8 flagged) changes the
    exact count; the ``1 <= flagged <= 8`` range that stood here passed it."""
    X = _data()
    det.fit(X)
    assert det.decision_scores_.shape == (400,)
    # the threshold is the 99th percentile of the fit scores (linear interpolation:
    # position 0.99 * 399 = 395.01), so exactly the 4 scores above position 395 are flagged
    assert det.threshold_ == pytest.approx(np.quantile(det.decision_scores_, 0.99), rel=1e-12)
    assert np.unique(det.decision_scores_).size == 400
    assert det.labels_.sum() == 4
    np.testing.assert_array_equal(np.sort(np.argsort(det.decision_scores_)[-4:]), np.flatnonzero(det.labels_))
    assert set(np.unique(det.labels_)) <= {0, 1}
    np.testing.assert_allclose(det.decision_function(X), det.decision_scores_, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(det.predict(X), det.labels_)
    np.testing.assert_array_equal(type(det)(**det.get_params()).fit_predict(X), det.labels_)
    # a planted outlier in new data is scored above the threshold
    x = X[:1].copy()
    x[0, :] += 50
    assert det.predict(x)[0] == 1
    assert det.explain(X[:5]).shape == (5, 12)


def test_not_fitted_and_too_few_rows():
    with pytest.raises(NotFittedError):
        ZScoreDetector().decision_function(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="sample"):
        PCAMahalanobisDetector().fit(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="quantile"):
        IsolationForestDetector(quantile=0.3).fit(_data())


def test_zscore_explain_is_abs_z_and_constant_columns_are_neutral():
    X = _data()
    X[:, 3] = 7.0  # constant
    det = ZScoreDetector(robust=False, constant_floor=0).fit(X)
    z = det.explain(X)
    np.testing.assert_allclose(z.mean(axis=1), det.decision_scores_)
    np.testing.assert_allclose(z[:, 0], np.abs((X[:, 0] - X[:, 0].mean()) / X[:, 0].std()))
    Y = X[:3].copy()
    Y[:, 3] = 1e6  # a constant fit feature cannot say how unusual this is: neutral
    assert np.all(det.explain(Y)[:, 3] == 0)


def test_zscore_counter_silent_in_the_baseline_stands_out():
    X = _data()
    X[:, 3] = 0.0  # e.g. TCP retransmissions: never in the baseline
    X[:, 5] = 200.0  # a constant level
    X[:, 7] = np.nan  # absent from the baseline: unknown, stays neutral
    det = ZScoreDetector().fit(X)
    Y = X[:2].copy()
    Y[0, 3] = 12.0
    Y[1, 5] = 210.0
    Y[:, 7] = 5.0
    z = det.explain(Y)
    assert z[0, 3] == pytest.approx(120.0) and z[1, 5] == pytest.approx(5.0)
    assert (z[:, 7] == 0).all()
    assert det.predict(Y[:1])[0] == 1


def test_robust_z_resists_the_outliers_it_is_looking_for():
    X = _data(n=300)
    X[:15, 0] += 40  # 5 % contamination inflates the plain std
    robust = ZScoreDetector(robust=True).fit(X).explain(X[:1])[0, 0]
    plain = ZScoreDetector(robust=False).fit(X).explain(X[:1])[0, 0]
    assert robust > 3 * plain


def test_nan_inf_and_all_nan_features_are_imputed():
    X = _data()
    X[5, 2] = np.nan
    X[7, 1] = np.inf
    X[:, 9] = np.nan  # all-NaN feature
    for det in (ZScoreDetector(), PCAMahalanobisDetector(), IsolationForestDetector(n_estimators=30)):
        det.fit(X)
        assert np.isfinite(det.decision_scores_).all()
        assert det.impute_values_[9] == 0.0
        e = det.explain(X[:10])
        assert np.isfinite(e).all()
        assert np.all(e[:, 9] == 0) or det.name == "iforest"  # a constant feature never splits a tree
        Y = X[:2].copy()
        Y[:, :] = np.nan
        assert np.isfinite(det.decision_function(Y)).all()


@pytest.mark.parametrize("precision", ["float64", "mixed", "float32"])
@pytest.mark.parametrize("n,p", [(120, 300), (400, 12)], ids=["gram", "covariance"])
def test_mahalanobis_contributions_sum_to_the_score(n, p, precision):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 4)) @ rng.normal(size=(4, p)) + rng.normal(size=(n, p))
    det = PCAMahalanobisDetector(precision=precision).fit(X)
    assert 1 <= det.n_components_ < min(n, p)
    assert det.explained_variance_ratio_.sum() >= 0.95 - 1e-9
    assert det.explained_variance_ratio_[:-1].sum() < 0.95
    Y = X[:20] + rng.normal(size=(20, p))
    c = det.explain(Y)
    np.testing.assert_allclose(c.sum(axis=1), det.decision_function(Y), rtol=1e-8)
    np.testing.assert_allclose(det.explain(X).sum(axis=1), det.decision_function(X), rtol=1e-8)
    # fit scores (from the Gram eigenvectors) equal the projection to the working precision
    rtol = {"float64": 1e-8, "mixed": 1e-4, "float32": 1e-3}[precision]
    np.testing.assert_allclose(det.explain(X).sum(axis=1), det.decision_scores_, rtol=rtol)


def test_mahalanobis_matches_a_direct_computation():
    from sklearn.decomposition import PCA

    X = _data(p=8)
    det = PCAMahalanobisDetector().fit(X)
    Z = (X - X.mean(0)) / X.std(0, ddof=1)
    pca = PCA(n_components=0.95, svd_solver="full").fit(Z)
    T = pca.transform(Z)
    d2 = (T**2 / pca.explained_variance_).sum(axis=1)
    assert det.n_components_ == pca.n_components_
    np.testing.assert_allclose(det.decision_scores_, d2, rtol=1e-7)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_iforest_explanation_ranks_the_planted_feature_first(seed):
    rng = np.random.default_rng(seed)
    X = _data(seed, n=500, p=20)
    j = int(rng.integers(20))
    X[123, j] += 12 * X[:, j].std()
    det = IsolationForestDetector(n_estimators=100, random_state=seed).fit(X)
    e = det.explain(X[[123]])[0]
    assert int(np.argmax(e)) == j
    # and for a typical window no feature stands out that much
    assert e[j] > 1.5 * np.abs(det.explain(X[:50])).max(axis=1).mean()


def test_iforest_flags_and_explains_a_multi_feature_outlier():
    X = _data(0, n=500, p=10)
    X[77, [1, 5, 8]] += 10 * X[:, [1, 5, 8]].std(axis=0)
    det = IsolationForestDetector(n_estimators=100, random_state=0).fit(X)
    assert det.labels_[77] == 1
    assert set(np.argsort(-det.explain(X[[77]])[0])[:3]) == {1, 5, 8}


def test_ensemble_agreement_combined_and_baseline_mode():
    X = _data(n=600)
    ens = DetectorEnsemble(default_detectors(DetectConfig(iforest_estimators=50))).fit(X)
    res = ens.result_
    assert res.methods == ["zscore", "mahalanobis", "iforest"]
    np.testing.assert_array_equal(res.agreement, sum(res.labels.values()))
    assert res.agreement.max() <= 3
    # combined: mean of scores in units of each threshold (Mahalanobis as a distance)
    d = ens.detectors_
    manual = (
        res.scores["zscore"] / d["zscore"].threshold_
        + np.sqrt(res.scores["mahalanobis"] / d["mahalanobis"].threshold_)
        + res.scores["iforest"] / d["iforest"].threshold_
    ) / 3
    np.testing.assert_allclose(res.combined, manual)
    # fit on a baseline, score new windows: a shifted block is flagged by all three
    Y = _data(n=650)[600:]
    Y[10:15] += 6
    new = ens.score(Y)
    assert (new.agreement[10:15] == 3).all()
    assert new.agreement[:10].mean() < 0.5
    with pytest.raises(ValueError, match="unique"):
        DetectorEnsemble([ZScoreDetector(), ZScoreDetector()]).fit(X)


def test_mahalanobis_float32_agrees_with_float64():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 6)) @ rng.normal(size=(6, 500)) + 0.5 * rng.normal(size=(300, 500))
    a = PCAMahalanobisDetector().fit(X)
    for precision, rtol in (("mixed", 1e-4), ("float32", 1e-3)):
        b = PCAMahalanobisDetector(precision=precision).fit(X)
        assert a.n_components_ == b.n_components_
        np.testing.assert_allclose(b.decision_scores_, a.decision_scores_, rtol=rtol)
        np.testing.assert_allclose(b.decision_function(X), a.decision_scores_, rtol=rtol)
        np.testing.assert_array_equal(b.labels_, a.labels_)
    with pytest.raises(ValueError, match="precision"):
        PCAMahalanobisDetector(precision="half").fit(X)


def test_iforest_credits_follow_scikit_learns_own_decision_paths():
    """The level-by-level walk equals the paths scikit-learn's trees report."""
    X = _data(6, n=300, p=15)
    det = IsolationForestDetector(n_estimators=20, random_state=6).fit(X)
    Y = X[:40]
    credits = det._credits(Y)
    expected = np.zeros_like(credits)
    for tree, feats in zip(det.model_.estimators_, det.model_.estimators_features_, strict=True):
        Yt = Y[:, feats].astype(np.float32)
        path = tree.decision_path(Yt).toarray().astype(bool)
        leaves = tree.apply(Yt)
        internal = tree.tree_.children_left != -1
        depth = (path & internal).sum(axis=1)
        from reveal_lab.detectors._iforest import _average_path_length

        h = np.maximum(depth + _average_path_length(tree.tree_.n_node_samples[leaves]), 1.0)
        for i in range(Y.shape[0]):
            for node in np.flatnonzero(path[i] & internal):
                expected[i, feats[tree.tree_.feature[node]]] += 1.0 / h[i]
    np.testing.assert_allclose(credits, expected / 20, rtol=1e-12, atol=1e-15)


def test_zscore_robust_centre_and_scale_are_median_and_mad():
    """The fast path (medians shared with the imputation, MAD on their partition, std only
    where the MAD is 0) equals the definitions."""
    X = _data(n=301, p=9)
    X[:250, 4] = 0.0  # a mostly-zero counter: MAD 0, falls back to the std
    X[:, 6] = 3.0  # constant
    det = ZScoreDetector(constant_floor=0).fit(X)
    med = np.median(X, axis=0)
    mad = 1.4826 * np.median(np.abs(X - med), axis=0)
    scale = np.where(mad > 0, mad, X.std(axis=0))
    scale[6] = 0.0
    np.testing.assert_allclose(det.center_, med, rtol=1e-15)
    np.testing.assert_allclose(det.scale_, scale, rtol=1e-13)
    z = np.abs(np.divide(X - med, scale, out=np.zeros_like(X), where=scale > 0))
    np.testing.assert_allclose(det.decision_scores_, z.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(det.explain(X), z, rtol=1e-12)


@pytest.mark.parametrize("shared", [False, True])
def test_zscore_round_off_mad_falls_back_to_the_std(shared):
    """The variance of a metric constant in most windows is round-off there (``3e-30``,
    not 0) and real elsewhere: its MAD is numerically 0, so its scale is the std (as for
    an exact-zero MAD), not a constant floor of ``0.01 · 3e-30`` that scores ``z ≈ 1e27``."""
    X = _data(n=200, p=8)
    rng = np.random.default_rng(3)
    col = rng.choice([0.0, 7.9e-31, 3.2e-30], size=200)
    col[::10] = rng.uniform(1e-5, 9e-5, size=20)  # the metric moved in a tenth of the windows
    X[:, 5] = col
    det = DetectorEnsemble([ZScoreDetector()]).fit(X).detectors_["zscore"] if shared else ZScoreDetector().fit(X)
    np.testing.assert_allclose(det.scale_[5], col.std(), rtol=1e-12)
    assert det.explain(X)[:, 5].max() < 10
    # all fit values round-off: constant, and the floor of a round-off centre is that of 0
    X[:, 5] = rng.choice([0.0, 7.9e-31, 3.2e-30], size=200)
    X[0, 5] = 5e-31
    det = ZScoreDetector().fit(X)
    assert det.scale_[5] == pytest.approx(0.1)


@pytest.mark.parametrize("with_nan", [False, True])
def test_ensemble_shares_fit_statistics_without_changing_results(with_nan):
    X = _data(n=300, p=20)
    if with_nan:
        X[3, 2] = np.nan
        X[:, 7] = np.nan
    cfg = DetectConfig(iforest_estimators=30)
    ens = DetectorEnsemble(default_detectors(cfg)).fit(X)
    for det in default_detectors(cfg):
        alone = det.fit(X)
        shared = ens.detectors_[det.name]
        np.testing.assert_array_equal(shared.impute_values_, alone.impute_values_)
        np.testing.assert_allclose(shared.decision_scores_, alone.decision_scores_, rtol=1e-12)
        np.testing.assert_array_equal(shared.labels_, alone.labels_)
        assert not hasattr(shared, "_fit_stats")


def test_mahalanobis_components_formed_on_demand_and_pickled():
    import pickle

    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 5)) @ rng.normal(size=(5, 400)) + rng.normal(size=(150, 400))
    det = PCAMahalanobisDetector().fit(X)
    clone_ = pickle.loads(pickle.dumps(det))  # forms the loadings; the fit data is not pickled
    assert clone_.__dict__.get("_lazy_components") is None
    W = det.components_
    assert W.shape == (det.n_components_, 400)
    np.testing.assert_allclose(W @ W.T, np.eye(det.n_components_), atol=1e-9)
    np.testing.assert_allclose(clone_.components_, W, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(clone_.decision_function(X), det.decision_scores_, rtol=1e-9)


def test_mahalanobis_few_windows_scored_through_the_fit_data_equal_the_loadings_route():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(200, 6)) @ rng.normal(size=(6, 500)) + rng.normal(size=(200, 500))
    det = PCAMahalanobisDetector().fit(X)
    Y = X[:20] + rng.normal(size=(20, 500))
    assert det._gram_factors(20) is not None  # loadings not formed yet: the Gram route
    s_gram, c_gram = det.decision_function(Y), det.explain(Y)
    assert "_components" not in det.__dict__
    det.components_  # noqa: B018 - forms the loadings; now the same windows go through W
    assert det._gram_factors(20) is None
    np.testing.assert_allclose(det.decision_function(Y), s_gram, rtol=1e-10)
    np.testing.assert_allclose(det.explain(Y), c_gram, rtol=1e-8, atol=1e-10 * np.abs(c_gram).max())
    np.testing.assert_allclose(c_gram.sum(axis=1), s_gram, rtol=1e-8)


def test_fit_statistics_are_passed_explicitly():
    """The ensemble hands its one :func:`fit_stats` to each detector (no module-level state):
    statistics of another matrix change the result, and a wrong shape is refused."""
    from reveal_lab.detectors._base import fit_stats

    X = _data(n=200, p=12)
    X[5, 3] = np.nan
    other = X.copy()
    other[:, 3] += 100.0  # another median to impute column 3 with
    det = ZScoreDetector()
    own = det.fit(X).impute_values_.copy()
    given = ZScoreDetector().fit(X, stats=fit_stats(other)).impute_values_
    assert given[3] == pytest.approx(own[3] + 100.0) and np.array_equal(given[:3], own[:3])
    with pytest.raises(ValueError, match="fit statistics"):
        ZScoreDetector().fit(X, stats=fit_stats(X[:50]))


@pytest.mark.parametrize("max_features", [1.0, 0.5, 3])
def test_flat_forest_equals_sklearn_with_and_without_feature_subsampling(max_features):
    """FlatForest reads which features a tree saw from public attributes only (the per-tree
    feature lists, ``max_samples_``); with subsampled features a wrong mapping changes scores."""
    from sklearn.ensemble import IsolationForest

    from reveal_lab.detectors import FlatForest

    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 12))
    Y = rng.normal(size=(9, 12)) * 2
    model = IsolationForest(n_estimators=25, max_samples=32, max_features=max_features, random_state=0).fit(X)
    np.testing.assert_array_equal(FlatForest(model).score_samples(Y), model.score_samples(Y))


# ----------------------------------------------------------------------------- clipping
@pytest.mark.parametrize("cls", [ZScoreDetector, PCAMahalanobisDetector], ids=lambda c: c.name)
def test_clip_bounds_one_feature_and_keeps_the_explanation_exact(cls):
    """A window far out on one feature only: unclipped, its score grows with the distance
    (quadratically for Mahalanobis); clipped, it stops at the clip, and ``explain`` still
    sums (Mahalanobis) or averages (Z-score) to the score exactly. Within the clip nothing
    changes."""
    X = _data()
    plain, clipped = cls().fit(X), cls(clip=10.0).fit(X)
    # every fit value lies within 4 standard units here, so the clip changes nothing on them
    assert np.abs((X - X.mean(axis=0)) / X.std(axis=0)).max() < 4
    calm = X[:50]
    np.testing.assert_allclose(clipped.decision_function(calm), plain.decision_function(calm), rtol=1e-9)
    far, farther = X[:1].copy(), X[:1].copy()
    far[0, 3] += 1e3 * X[:, 3].std()
    farther[0, 3] += 1e6 * X[:, 3].std()
    assert plain.decision_function(farther)[0] > 100 * plain.decision_function(far)[0]
    assert clipped.decision_function(farther)[0] == pytest.approx(clipped.decision_function(far)[0], rel=1e-9)
    e = clipped.explain(farther)
    total = e.mean(axis=1) if cls is ZScoreDetector else e.sum(axis=1)
    np.testing.assert_allclose(total, clipped.decision_function(farther), rtol=1e-9)
    if cls is ZScoreDetector:
        assert e[0, 3] == 10.0 and e.max() == 10.0
    with pytest.raises(ValueError, match="clip must be > 0"):
        cls(clip=0.0).fit(X)


def test_zscore_clip_spares_a_counter_constant_in_the_fit_data():
    """A counter that never fired in the fit data (scaled by ``constant_floor``) keeps its
    full |z| under the clip (12 events: z = 120), while a feature with a real scale is
    clipped: an error that never happened before stays the loudest evidence."""
    X = _data()
    X[:, 5] = 0.0
    det = ZScoreDetector(clip=10.0).fit(X)
    x = X[:1].copy()
    x[0, 5] = 12.0
    x[0, 3] += 1e3 * X[:, 3].std()
    z = det.explain(x)[0]
    assert z[5] == pytest.approx(120.0) and z[3] == 10.0
    assert det.decision_function(x)[0] == pytest.approx(z.mean())


def test_default_detectors_clip_the_zscore_and_mahalanobis_only():
    cfg = DetectConfig()
    assert [getattr(d, "clip", "-") for d in default_detectors(cfg)] == [None, None, "-"]
    assert [getattr(d, "clip", "-") for d in default_detectors(cfg, clip=7.0)] == [7.0, 7.0, "-"]


@pytest.mark.parametrize("cls", [ZScoreDetector, PCAMahalanobisDetector], ids=lambda c: c.name)
def test_outlier_fence_caps_the_quantile_only_when_on(cls):
    """Six extreme fit windows of 300 (2 %, a spike spread over the windows that hold it):
    with ``outlier_fence=False`` the threshold is the 0.99 quantile of the fit scores, which
    lies among the extreme windows, and exactly the windows above it are flagged
    (``n - 1 - floor(0.99·(n - 1))`` of ``n`` distinct scores with numpy's linear quantile:
    3 of 300, the paper's top 1 %); with the fence on (the default) it is capped at
    ``outlier_fence(scores)``, below the quantile, and all six are flagged.

    Broken variants caught: the cap applied whatever the parameter (6 flagged, not 3), the
    parameter ignored by a detector, ``n_beyond_fence_`` left set when off."""
    X = _data(seed=4, n=300)
    extreme = [40, 41, 42, 140, 141, 142]
    X[extreme] += 1e6 * np.arange(1, 7)[:, None]
    off = cls(outlier_fence=False).fit(X)
    s = off.decision_scores_
    n = s.size
    q = np.quantile(s, 0.99)
    assert off.threshold_ == q and off.n_beyond_fence_ == 0
    assert np.unique(s).size == n
    assert off.labels_.sum() == n - 1 - int(np.floor(0.99 * (n - 1))) == 3
    assert set(np.flatnonzero(off.labels_)) == set(np.argsort(s)[-3:]) < set(extreme)
    on = cls().fit(X)  # the default: the fence on
    np.testing.assert_allclose(on.decision_scores_, s, rtol=1e-9)
    assert on.threshold_ == pytest.approx(outlier_fence(on.decision_scores_), rel=1e-12)
    assert on.threshold_ < q and on.n_beyond_fence_ >= 6
    assert set(extreme) <= set(np.flatnonzero(on.labels_))
    # an sklearn parameter: kept by get_params and clone
    assert off.get_params()["outlier_fence"] is False and cls().get_params()["outlier_fence"] is True
    assert clone(off).outlier_fence is False


def test_outlier_fence_reaches_every_default_detector_and_refuses_a_non_bool():
    for fence in (True, False):
        dets = default_detectors(DetectConfig(pcarecon=True, iforest_estimators=20), outlier_fence=fence)
        assert [d.outlier_fence for d in dets] == [fence] * 4
    with pytest.raises(ValueError, match="outlier_fence must be True or False"):
        ZScoreDetector(outlier_fence="no").fit(_data())


def test_shared_parameters_are_set_once_on_the_base_class():
    """quantile, outlier_fence (and clip where a detector standardizes) come from
    BaseDetector: every detector's signature defaults to the base's constants, and the
    threshold reads them, not a per-detector default."""
    import inspect

    from reveal_lab.detectors import OUTLIER_FENCE_ON, QUANTILE, BaseDetector, PCAReconstructionDetector

    for cls in (ZScoreDetector, PCAMahalanobisDetector, IsolationForestDetector, PCAReconstructionDetector):
        sig = inspect.signature(cls.__init__).parameters
        assert sig["quantile"].default == QUANTILE and sig["outlier_fence"].default is OUTLIER_FENCE_ON, cls
        assert ("clip" in sig) == cls.clips, cls
        assert "_quantile" not in vars(cls) and "contamination" not in sig, cls
    assert BaseDetector.__init__.__defaults__ == (QUANTILE, OUTLIER_FENCE_ON, None)
    X = _data()
    for cls in (ZScoreDetector, PCAMahalanobisDetector, IsolationForestDetector):
        d = cls(quantile=0.9, outlier_fence=False).fit(X)
        assert d.threshold_ == pytest.approx(np.quantile(d.decision_scores_, 0.9)), cls
        with pytest.raises(ValueError, match="quantile"):
            cls(quantile=1.0).fit(X)


def test_standardized_zscore_is_mean_and_standard_deviation():
    """The paper's Z-score (§4.3): standardized by the fit windows' mean and standard
    deviation; a feature constant in them is neutral (the robust form floors it)."""
    rng = np.random.default_rng(5)
    X = np.c_[rng.normal(3.0, 2.0, size=300), np.zeros(300)]
    X[:10, 0] += 30.0  # a few outliers move the mean and std, not the median and MAD
    std = ZScoreDetector.standardized().fit(X)
    np.testing.assert_allclose(std.center_, [X[:, 0].mean(), 0.0])
    np.testing.assert_allclose(std.scale_[0], X[:, 0].std())
    assert std.scale_[1] == 0.0  # neutral
    rob = ZScoreDetector().fit(X)
    assert rob.scale_[1] > 0 and rob.scale_[0] < std.scale_[0]
    new = np.array([[3.0, 5.0]])  # a counter that never moved in the fit now moves
    assert std.decision_function(new)[0] < 1.0 < rob.decision_function(new)[0]
    assert ZScoreDetector.form_params("standard") == {"robust": False, "constant_floor": 0.0}
    with pytest.raises(ValueError, match="form"):
        ZScoreDetector.form_params("median")
