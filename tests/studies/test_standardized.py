"""The projections' standardization, worked in place, gives the plain formula's floats."""

import numpy as np
import pytest

from reveal_lab.studies import standardized


def _plain(X):
    X = np.where(np.isfinite(X), X, np.nan)
    med = np.nanmedian(np.where(np.isnan(X).all(axis=0), 0.0, X), axis=0)
    X = np.where(np.isnan(X), med, X)
    sd = X.std(axis=0)
    return (X[:, sd > 0] - X[:, sd > 0].mean(axis=0)) / sd[sd > 0]


def test_standardized_equals_the_plain_formula_bit_for_bit_and_leaves_its_input():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n, p = rng.integers(3, 60), rng.integers(1, 40)
        X = rng.normal(size=(n, p)) * rng.choice([1, 1e6, 1e-6], size=p)
        X[rng.random((n, p)) < 0.1] = np.nan
        X[rng.random((n, p)) < 0.03] = np.inf
        X[:, rng.random(p) < 0.15] = 3.0  # constant columns
        X[:, rng.random(p) < 0.1] = np.nan  # columns without a value
        before = X.copy()
        got, want = standardized(X), _plain(X)
        assert got.shape == want.shape and np.array_equal(got, want)
        assert np.array_equal(X, before, equal_nan=True)
    with pytest.raises(ValueError, match="at least 3 rows"):
        standardized(np.zeros((2, 4)))
