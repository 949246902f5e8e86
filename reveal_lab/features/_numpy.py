"""Vectorised numpy backend: the same features as the compiled kernel.

Windows × channels are laid out as one padded 3-D array with the valid samples
of each window-channel packed to the front (NaNs moved behind, order kept), so
every feature is a masked reduction along one axis. The ADF regressions are
batched ``np.linalg.qr`` factorisations of the centred designs, grouped by
series length; degenerate designs (collinear, or a non-zero constant regressor)
go through the exact statsmodels emulation of the compiled kernel.

Moments are computed with plain (not pairwise) sums, so this backend agrees with
the others to rounding (~1e-12 relative), not bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from reveal_lab.features._adf import EXACT_FIT_RTOL, adf_teststat
from reveal_lab.features._kernels import FEATURE_CODES, N_FEATURES

__all__ = ["numpy_features"]

_F = FEATURE_CODES
_LOG_2PI = math.log(2 * math.pi)


def _packed(values: np.ndarray, row_start: np.ndarray, row_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(P, n)``: ``P[w, i, c]`` is the i-th valid sample of channel c in window w
    (NaN beyond ``n[w, c]``)."""
    lens = row_end - row_start
    L = int(lens.max()) if lens.size else 0
    W, C = len(row_start), values.shape[1]
    idx = row_start[:, None] + np.arange(L)[None, :]
    inside = np.arange(L)[None, :] < lens[:, None]
    idx = np.where(inside, idx, 0)
    P = values[idx]  # (W, L, C)
    P[~inside] = np.nan
    valid = ~np.isnan(P)
    order = np.argsort(~valid, axis=1, kind="stable")  # valid first, time order kept
    P = np.take_along_axis(P, order, axis=1)
    n = valid.sum(axis=1)  # (W, C)
    del W, C
    return P, n


def _adf_batch(series: np.ndarray, n: int) -> np.ndarray:
    """ADF t-statistics of ``series[B, n]`` (see ``_adf.adf_teststat``)."""
    B = series.shape[0]
    out = np.full(B, np.nan)
    if B == 0 or n < 4:
        return out
    maxlag = min(int(math.ceil(12.0 * math.pow(n / 100.0, 1.0 / 4.0))), n // 2 - 2)
    if maxlag < 0:
        return out
    const = series.max(axis=1) == series.min(axis=1)
    diff = np.diff(series, axis=1)  # (B, n-1)

    def design(lag: int) -> tuple[np.ndarray, np.ndarray]:
        rows = n - 1 - lag
        t = lag + np.arange(rows)
        X = np.empty((B, rows, lag + 1))
        X[:, :, 0] = series[:, t]
        for j in range(1, lag + 1):
            X[:, :, j] = diff[:, t - j]
        return X, diff[:, t]

    def nonzero_const(X: np.ndarray) -> np.ndarray:
        return ((X == X[:, :1, :]).all(axis=1) & (X[:, 0, :] != 0)).any(axis=1)

    def nested_qr(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Centred QR of [X | y]: per model k (first k columns + intercept) the ssr,
        plus R and a 'well-conditioned' flag."""
        A = np.concatenate([X, y[:, :, None]], axis=2)
        A = A - A.mean(axis=1, keepdims=True)
        R = np.linalg.qr(A, mode="r")
        p = X.shape[2]
        diag = np.abs(np.diagonal(R, axis1=1, axis2=2))[:, :p]
        colnorm = np.linalg.norm(A[:, :, :p], axis=1)
        zero = colnorm == 0
        ok = ((diag > 1e-8 * colnorm) | zero).all(axis=1) & (~zero).all(axis=1)
        tail = R[:, :, p] ** 2  # (B, p+1)
        ssr = np.cumsum(tail[:, ::-1], axis=1)[:, ::-1][:, 1:]  # ssr_k = sum_{i>=k} R[i, y]^2
        return ssr, R, ok

    X, y = design(maxlag)
    rows = y.shape[1]
    tss = ((y - y.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    slow = const | (tss == 0) | nonzero_const(X)
    ssr, _, ok = nested_qr(X, y)
    slow |= ~ok
    rank = 1 + np.arange(1, maxlag + 2)[None, :]
    nobs2 = rows / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        llf = -nobs2 * _LOG_2PI - nobs2 * np.log(ssr / rows) - nobs2
        aic = -2.0 * llf + 2.0 * rank
    exact = (ssr < EXACT_FIT_RTOL * tss[:, None]).any(axis=1)
    lag = np.argmin(np.where(np.isnan(aic), np.inf, aic), axis=1)
    fast = ~slow & ~exact
    for L in np.unique(lag[fast]):
        sel = np.flatnonzero(fast & (lag == L))
        Xl, yl = design(int(L))
        Xl, yl = Xl[sel], yl[sel]
        # columns [dx_1..dx_L, level]: the level last
        Xo = np.concatenate([Xl[:, :, 1:], Xl[:, :, :1]], axis=2)
        ssr_l, R, ok_l = nested_qr(Xo, yl)
        q = int(L) + 1
        rows_l = yl.shape[1]
        tss_l = ((yl - yl.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
        nzc = nonzero_const(Xl)
        good = ok_l & ~nzc
        with np.errstate(divide="ignore", invalid="ignore"):
            sigma = np.sqrt(ssr_l[:, q - 1] / (rows_l - q - 1))
            t = np.sign(R[:, q - 1, q - 1]) * R[:, q - 1, q] / sigma
        t = np.where(ssr_l[:, q - 1] >= EXACT_FIT_RTOL * tss_l, t, np.nan)
        out[sel[good]] = t[good]
        slow[sel[~good]] = True
    # degenerate designs: the kernel's exact statsmodels emulation, one series at a time
    todo = np.flatnonzero(slow & ~const)
    if todo.size:
        Xb = np.empty((n, maxlag + 4))
        yb = np.empty(n)
        Ab = np.empty((maxlag + 5, n))
        sb = np.empty(maxlag + 4)
        rb = np.empty(maxlag + 4, dtype=np.int64)
        for b in todo:
            out[b] = adf_teststat(np.ascontiguousarray(series[b]), n, Xb, yb, Ab, sb, rb)
    return out


def numpy_features(
    values: np.ndarray, row_start: np.ndarray, row_end: np.ndarray, want: np.ndarray, min_valid: int
) -> np.ndarray:
    """Same contract as the compiled kernel: ``out[w, c, f]``."""
    W, C = len(row_start), values.shape[1]
    out = np.full((W, C, N_FEATURES), np.nan)
    if W == 0 or C == 0:
        return out
    P, n = _packed(np.asarray(values, dtype=np.float64), row_start, row_end)
    L = P.shape[1]
    pos = np.arange(L)[None, :, None]
    m = pos < n[:, None, :]  # valid mask (W, L, C)
    enough = n >= max(min_valid, 1)
    nf = np.where(enough, n, 1).astype(np.float64)
    Z = np.where(m, P, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = Z.sum(axis=1)
        mean = total / nf
        # deviations of values shifted by each window's first valid one (the kernel's shift:
        # a high level with a small spread keeps its digits in the higher moments)
        first = np.take_along_axis(P, np.argmax(m, axis=1)[:, None, :], axis=1)
        S = np.where(m, P - first, 0.0)
        dev = np.where(m, S - (S.sum(axis=1) / nf)[:, None, :], 0.0)
        m2 = (dev**2).sum(axis=1)
        var = m2 / nf
        m3 = (dev**3).sum(axis=1)
        m4 = (dev**4).sum(axis=1)
        lo = np.where(m, P, np.inf).min(axis=1)
        hi = np.where(m, P, -np.inf).max(axis=1)
        skew = (m3 / (m2 * np.sqrt(m2))) * (nf * np.sqrt(nf - 1.0) / (nf - 2.0))
        skew = np.where(n >= 3, skew, np.nan)
        kurt = ((nf - 1.0) / ((nf - 2.0) * (nf - 3.0))) * (
            nf * (nf + 1.0) * (m4 / (m2 * m2)) - 3.0 * (nf - 1.0)
        )
        kurt = np.where(n >= 4, kurt, np.nan)
        flat = hi == lo  # pandas' online moments give m2 == 0 exactly: 0/0
        skew = np.where(flat, np.nan, skew)
        kurt = np.where(flat, np.nan, kurt)
        tm = (nf - 1.0) / 2.0
        tdev = np.where(m, pos - tm[:, None, :], 0.0)
        slope = (tdev * dev).sum(axis=1) / (tdev**2).sum(axis=1)
        lagprod = np.where(m[:, 1:, :], dev[:, :-1, :] * dev[:, 1:, :], 0.0).sum(axis=1)
        acf = lagprod / ((nf - 1.0) * var)
        acf = np.where((np.abs(var) <= 1e-8) | (n < 2), np.nan, acf)
    feats = {
        "mean": mean,
        "var": var,
        "std": np.sqrt(var),
        "min": lo,
        "max": hi,
        "skew": skew,
        "kurtosis": kurt,
        "slope": slope,
        "acf1": acf,
        "sum": total,
    }
    for name, arr in feats.items():
        f = _F[name]
        out[:, :, f] = np.where(enough & want[None, :, f], arr, np.nan)
    fa = _F["adf"]
    need = enough & want[None, :, fa]
    if need.any():
        adf = np.full((W, C), np.nan)
        for length in np.unique(n[need]):
            ws, cs = np.nonzero(need & (n == length))
            series = P[ws, : int(length), cs]
            adf[ws, cs] = _adf_batch(series, int(length))
        out[:, :, fa] = np.where(need, adf, np.nan)
    return out
