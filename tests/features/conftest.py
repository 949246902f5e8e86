"""Shared helpers for the feature tests: the ADF statistic in exact arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

def _solve(M: list[list[Fraction]], b: list[Fraction]) -> tuple[list[Fraction], list[list[Fraction]]]:
    """Gauss-Jordan on the normal equations: solution and inverse, exactly."""
    k = len(M)
    aug = [row[:] + [b[i]] + [Fraction(int(i == j)) for j in range(k)] for i, row in enumerate(M)]
    for c in range(k):
        piv = next(r for r in range(c, k) if aug[r][c] != 0)
        aug[c], aug[piv] = aug[piv], aug[c]
        p = aug[c][c]
        aug[c] = [v / p for v in aug[c]]
        for r in range(k):
            if r != c and aug[r][c] != 0:
                f = aug[r][c]
                aug[r] = [a - f * bb for a, bb in zip(aug[r], aug[c], strict=True)]
    return [aug[i][k] for i in range(k)], [aug[i][k + 1:] for i in range(k)]


def _ols_exact(X: list[list[Fraction]], y: list[Fraction]):
    k = len(X[0])
    XtX = [[sum(r[i] * r[j] for r in X) for j in range(k)] for i in range(k)]
    Xty = [sum(r[i] * yy for r, yy in zip(X, y, strict=True)) for i in range(k)]
    b, inv = _solve(XtX, Xty)
    ssr = sum((yy - sum(r[j] * b[j] for j in range(k))) ** 2 for r, yy in zip(X, y, strict=True))
    return b, inv, ssr


def exact_adf(x: np.ndarray) -> float:
    """statsmodels' adfuller(regression="c", autolag="AIC") t-statistic in exact arithmetic
    (full-rank designs only)."""
    xs = [Fraction(float(v)) for v in x]
    n = len(xs)
    maxlag = min(int(math.ceil(12.0 * math.pow(n / 100.0, 0.25))), n // 2 - 2)

    def design(lag):
        rows = [(lag + i) for i in range(n - 1 - lag)]
        X = [[xs[t]] + [xs[t - j + 1] - xs[t - j] for j in range(1, lag + 1)] for t in rows]
        return X, [xs[t + 1] - xs[t] for t in rows]

    X, y = design(maxlag)
    best = None
    for k in range(1, maxlag + 2):
        _, _, ssr = _ols_exact([[Fraction(1)] + r[:k] for r in X], y)
        aic = len(y) * math.log(float(ssr) / len(y)) + 2 * (k + 1)
        if best is None or aic < best[0]:
            best = (aic, k - 1)
    X, y = design(best[1])
    b, inv, ssr = _ols_exact([r + [Fraction(1)] for r in X], y)
    df = len(y) - len(X[0]) - 1
    return float(b[0]) / math.sqrt(float(ssr) / df * float(inv[0][0]))



@pytest.fixture(scope="session", name="exact_adf")
def exact_adf_fixture():
    return exact_adf
