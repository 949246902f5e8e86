"""Shared helpers for the feature tests: the ADF statistic in exact rational arithmetic,
the referee where statsmodels (hence tsfresh) and the compiled kernel disagree."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest


def _det(M: list[list[int]]) -> int:
    """The determinant of a square integer matrix, exactly (Bareiss' fraction-free
    elimination: every division is exact)."""
    a = [row[:] for row in M]
    k = len(a)
    if k == 0:
        return 1
    sign, prev = 1, 1
    for c in range(k - 1):
        if a[c][c] == 0:
            piv = next((r for r in range(c + 1, k) if a[r][c] != 0), None)
            if piv is None:
                return 0
            a[c], a[piv] = a[piv], a[c]
            sign = -sign
        p = a[c][c]
        for r in range(c + 1, k):
            arc = a[r][c]
            row, top = a[r], a[c]
            for j in range(c + 1, k):
                row[j] = (row[j] * p - arc * top[j]) // prev
        prev = p
    return sign * a[k - 1][k - 1]


def _sub(G: list[list[int]], idx: list[int]) -> list[list[int]]:
    return [[G[i][j] for j in idx] for i in idx]


def _ols_exact(cols: list[list[int]], y: list[int], scale: list[int], yscale: int):
    """OLS on the independent columns, exactly, from the Gram matrix of integer columns:
    column ``j`` is ``cols[j] / scale[j]`` and ``y`` is ``y / yscale`` in the caller's units.
    A column is kept (greedy, in order) when it adds to the rank (the Gram determinant of
    the kept ones stays non-zero); with ``A`` the Gram matrix of the kept columns and ``c``
    their products with ``y``: SSR = det([[A, c], [c', y'y]]) / det(A) (the Schur
    complement), the first coefficient det(A with c for its first column) / det(A) (Cramer)
    and the first diagonal entry of A's inverse det(A without its first row and column) /
    det(A). Returns ``(keep, b0, inv00, ssr)`` in the caller's units."""
    p = len(cols)
    G = [[sum(u * v for u, v in zip(cols[i], cols[j], strict=True)) for j in range(p)] for i in range(p)]
    keep: list[int] = []
    for j in range(p):
        if _det(_sub(G, [*keep, j])) != 0:
            keep.append(j)
    A = _sub(G, keep)
    c = [sum(u * v for u, v in zip(cols[i], y, strict=True)) for i in keep]
    yy = sum(v * v for v in y)
    det_a = _det(A)
    aug = [[*row, ci] for row, ci in zip(A, c, strict=True)] + [[*c, yy]]
    ssr = Fraction(_det(aug), det_a * yscale * yscale)
    first = [[c[i], *row[1:]] for i, row in enumerate(A)]
    s0 = scale[keep[0]]
    b0 = Fraction(_det(first) * s0, det_a * yscale)
    inv00 = Fraction(_det([row[1:] for row in A[1:]]) * s0 * s0, det_a)
    return keep, b0, inv00, ssr


EXACT_FIT_RTOL = Fraction(1, 10**10)  # reveal_lab.features._adf.EXACT_FIT_RTOL


def _tss(y: list[int], yscale: int) -> Fraction:
    m = len(y)
    return Fraction(m * sum(v * v for v in y) - sum(y) ** 2, m * yscale * yscale)


def exact_adf(x, with_kappa: bool = False):
    """statsmodels' ``adfuller(regression="c", autolag="AIC")`` t-statistic in exact
    arithmetic: ranks decided exactly, a lag that adds no independent column ties with
    the smaller lag (which wins), ``add_trend``'s skipping of the intercept when a
    design column is a non-zero constant. NaN where the kernel defines it so (an
    exact fit: RSS < 1e-10 TSS). With ``with_kappa`` returns ``(t, TSS/RSS)`` of the
    refit: rounding the float64 inputs moves t by about eps * kappa, relatively.

    The float64 samples are dyadic rationals: times their common denominator ``D`` they
    are integers, and so are the design's columns and ``y`` (the intercept's column is
    1); every sum and determinant is then taken on Python integers, exactly, and the
    results are brought back to the samples' units."""
    nan = (float("nan"), float("inf")) if with_kappa else float("nan")
    fr = [Fraction(float(v)) for v in x]
    n = len(fr)
    den = math.lcm(*(f.denominator for f in fr)) if fr else 1
    xs = [f.numerator * (den // f.denominator) for f in fr]
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
    one = [1] * m
    c0 = has_const(cols)
    best = None
    prev_rank = -1
    tss = _tss(y, den)
    if tss == 0:
        return nan
    for k in range(1, maxlag + 2):
        design_k = ([one] if c0 else []) + cols[:k]
        scale = ([1] if c0 else []) + [den] * k
        keep, _, _, ssr = _ols_exact(design_k, y, scale, den)
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
    scale = [den] * len(cols) + ([1] if c1 else [])
    keep, b0, inv00, ssr = _ols_exact(cols + ([[1] * len(y)] if c1 else []), y, scale, den)
    assert keep[0] == 0, "the level is a combination of the other columns"
    tss = _tss(y, den)
    if ssr < EXACT_FIT_RTOL * tss:
        return nan
    df = len(y) - len(keep)
    t = float(b0) / math.sqrt(float(ssr) / df * float(inv00))
    return (t, float(tss / ssr)) if with_kappa else t


@pytest.fixture(scope="session", name="exact_adf")
def exact_adf_fixture():
    return exact_adf
