"""Shared helpers for the feature tests: the ADF statistic in exact rational arithmetic,
the referee where statsmodels (hence tsfresh) and the compiled kernel disagree."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest


def _independent(cols: list[list[Fraction]]) -> list[int]:
    """Indices of a maximal independent subset of ``cols`` (greedy, in order),
    decided exactly by Gram-Schmidt over the rationals."""
    basis: list[list[Fraction]] = []
    keep = []
    for j, c in enumerate(cols):
        r = c[:]
        for b in basis:
            bb = sum(v * v for v in b)
            f = sum(u * v for u, v in zip(r, b, strict=True)) / bb
            r = [u - f * v for u, v in zip(r, b, strict=True)]
        if any(v != 0 for v in r):
            basis.append(r)
            keep.append(j)
    return keep


def _solve(M: list[list[Fraction]], b: list[Fraction]) -> tuple[list[Fraction], list[list[Fraction]]]:
    """Gauss-Jordan on a non-singular system: solution and inverse, exactly."""
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
    return [aug[i][k] for i in range(k)], [aug[i][k + 1 :] for i in range(k)]


def _ols_exact(cols: list[list[Fraction]], y: list[Fraction]):
    """OLS on the independent columns (the fit, and any estimable coefficient such as
    the first column's when it is kept, do not depend on which basis is used)."""
    keep = _independent(cols)
    X = [cols[j] for j in keep]
    k = len(X)
    XtX = [[sum(u * v for u, v in zip(X[i], X[j], strict=True)) for j in range(k)] for i in range(k)]
    Xty = [sum(u * v for u, v in zip(X[i], y, strict=True)) for i in range(k)]
    b, inv = _solve(XtX, Xty)
    fit = [sum(X[j][r] * b[j] for j in range(k)) for r in range(len(y))]
    ssr = sum((u - v) ** 2 for u, v in zip(y, fit, strict=True))
    return keep, b, inv, ssr


EXACT_FIT_RTOL = Fraction(1, 10**10)  # reveal_lab.features._adf.EXACT_FIT_RTOL


def _tss(y: list[Fraction]) -> Fraction:
    mu = sum(y) / len(y)
    return sum((v - mu) ** 2 for v in y)


def exact_adf(x, with_kappa: bool = False):
    """statsmodels' ``adfuller(regression="c", autolag="AIC")`` t-statistic in exact
    arithmetic: ranks decided exactly, a lag that adds no independent column ties with
    the smaller lag (which wins), ``add_trend``'s skipping of the intercept when a
    design column is a non-zero constant. NaN where the kernel defines it so (an
    exact fit: RSS < 1e-10 TSS). With ``with_kappa`` returns ``(t, TSS/RSS)`` of the
    refit: rounding the float64 inputs moves t by about eps * kappa, relatively."""
    nan = (float("nan"), float("inf")) if with_kappa else float("nan")
    xs = [Fraction(float(v)) for v in x]
    n = len(xs)
    if max(xs) == min(xs):
        return nan
    maxlag = min(int(math.ceil(12.0 * math.pow(n / 100.0, 0.25))), n // 2 - 2)
    if maxlag < 0:
        return nan

    def design(lag):
        ts = [lag + i for i in range(n - 1 - lag)]
        cols = [[xs[t] for t in ts]] + [[xs[t - j + 1] - xs[t - j] for t in ts] for j in range(1, lag + 1)]
        return cols, [xs[t + 1] - xs[t] for t in ts]

    def has_const(cols):
        return not any(len(set(c)) == 1 and c[0] != 0 for c in cols)

    cols, y = design(maxlag)
    m = len(y)
    one = [Fraction(1)] * m
    c0 = has_const(cols)
    best = None
    prev_rank = -1
    tss = _tss(y)
    if tss == 0:
        return nan
    for k in range(1, maxlag + 2):
        keep, _, _, ssr = _ols_exact(([one] if c0 else []) + cols[:k], y)
        if ssr < EXACT_FIT_RTOL * tss:
            return nan  # an exact fit: the kernel's NaN
        if len(keep) == prev_rank:
            continue
        prev_rank = len(keep)
        aic = m * math.log(float(ssr) / m) + 2 * len(keep)
        if best is None or aic < best[0]:
            best = (aic, k - 1)
    cols, y = design(best[1])
    c1 = has_const(cols)
    keep, b, inv, ssr = _ols_exact(cols + ([[Fraction(1)] * len(y)] if c1 else []), y)
    assert keep[0] == 0, "the level is a combination of the other columns"
    tss = _tss(y)
    if ssr < EXACT_FIT_RTOL * tss:
        return nan
    df = len(y) - len(keep)
    t = float(b[0]) / math.sqrt(float(ssr) / df * float(inv[0][0]))
    return (t, float(tss / ssr)) if with_kappa else t


@pytest.fixture(scope="session", name="exact_adf")
def exact_adf_fixture():
    return exact_adf
