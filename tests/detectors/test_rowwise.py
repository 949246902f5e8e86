"""A row's score and verdict never depend on which other rows are scored with it.

Scored alone, in batches of odd sizes, or with the whole set: every detector and the
ensemble give the same verdict per row, and the same score up to round-off. The cases
include data whose variance the kept PCA components explain entirely (the residual is
round-off there, where a threshold fitted on round-off used to flip a row by batch).
"""

from __future__ import annotations

import numpy as np
import pytest

from reveal_lab.detectors import (
    DetectorEnsemble,
    IsolationForestDetector,
    PCAMahalanobisDetector,
    PCAReconstructionDetector,
    ZScoreDetector,
)

DETECTORS = [
    ZScoreDetector(),
    PCAMahalanobisDetector(),
    IsolationForestDetector(random_state=0),
    PCAReconstructionDetector(),
    PCAReconstructionDetector(standardize=False),
]


def _cases():
    rng = np.random.RandomState(0)
    yield "uniform 20x3 (full rank: residual is round-off)", 3 * rng.uniform(size=(20, 3))
    t = rng.normal(size=(300, 2))
    low = np.hstack([t, t @ rng.normal(size=(2, 8))]) + 1e-3 * rng.normal(size=(300, 10))
    yield "low rank 300x10", low
    wide = rng.normal(size=(40, 120))
    wide[:, :5] = 0.0  # constant features
    yield "wide 40x120 with constant features", wide


def _batched(fn, X, size):
    return np.concatenate([fn(X[i : i + size]) for i in range(0, len(X), size)])


@pytest.mark.parametrize("det", DETECTORS, ids=lambda d: repr(d))
@pytest.mark.parametrize("case", list(_cases()), ids=lambda c: c[0])
def test_detector_rows_are_independent(det, case):
    _, X = case
    fitted = type(det)(**det.get_params()).fit(X)
    full_scores, full_pred = fitted.decision_function(X), fitted.predict(X)
    for size in (1, 3, 7, len(X) - 1):
        np.testing.assert_array_equal(_batched(fitted.predict, X, size), full_pred, err_msg=f"batches of {size}")
        np.testing.assert_allclose(
            _batched(fitted.decision_function, X, size), full_scores, rtol=1e-9, atol=1e-12, err_msg=f"batches of {size}"
        )
    # the fit's own verdicts are the verdicts of scoring the fit data again
    np.testing.assert_array_equal(fitted.labels_, full_pred)


@pytest.mark.parametrize("case", list(_cases()), ids=lambda c: c[0])
def test_ensemble_rows_are_independent(case):
    _, X = case
    ens = DetectorEnsemble().fit(X)
    whole = ens.score(X)
    for size in (1, 5):
        parts = [ens.score(X[i : i + size]) for i in range(0, len(X), size)]
        agreement = np.concatenate([p.agreement for p in parts])
        combined = np.concatenate([p.combined for p in parts])
        np.testing.assert_array_equal(agreement, whole.agreement, err_msg=f"batches of {size}")
        np.testing.assert_allclose(combined, whole.combined, rtol=1e-9, atol=1e-12)
