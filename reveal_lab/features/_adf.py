"""The augmented Dickey-Fuller t-statistic of one window, compiled (numba): statsmodels'
``adfuller(x, regression="c", autolag="AIC")``, t-statistic only, as tsfresh's
``augmented_dickey_fuller(attr="teststat", autolag="AIC")`` computes it (maximum lag
``min(ceil(12 (n/100)^(1/4)), n//2 - 2)``, lag chosen by AIC over OLS fits on a common
sample, t-statistic of the lagged level in the refit).

ADF: the lagged differences are shifted copies of one series, so the centred Gram
matrix of the whole lag-search design follows a recurrence (O(n p + p^2)); one
Cholesky sweep then gives the residual sum of squares of every nested lag model.
Where that is not accurate enough (a nearly collinear column, a nearly exact fit;
the refit of the chosen lag uses stricter limits because its t-value is the
output), the kernel uses Householder QR of the centred design (intercept implicit,
Frisch-Waugh), and where statsmodels' own conventions make a difference (a
rank-deficient design, a non-zero constant regressor that makes ``add_trend``
skip the intercept) an exact emulation of statsmodels' pseudo-inverse path (SVD,
``rcond=1e-15``, rank from ``matrix_rank``). Two deliberate departures, both where
statsmodels' answer is decided by rounding: a numerically exact fit (RSS < 1e-10
TSS) gives NaN, and a lag that adds no independent column ties with (and loses to)
the smaller lag. Elsewhere the kernel is *more* accurate than statsmodels, whose
pseudo-inverse of the uncentred design loses digits on large-offset levels (e.g.
byte counters); ``tests/features`` checks the kernel against exact rational
arithmetic.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["EXACT_FIT_RTOL", "adf_teststat"]

_LOG_2PI = math.log(2 * math.pi)
_EPS = np.finfo(np.float64).eps


# ---------------------------------------------------------------------------------------
# ADF: statsmodels adfuller(x, regression="c", autolag="AIC"), t-statistic only
# ---------------------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def _adf_design(x, n, lag, rows, X, y):
    """Fill ``X[:rows, :lag+1]`` = [level, dx_1..dx_lag] and ``y[:rows]`` = dx_t
    exactly as statsmodels' ``lagmat(trim="both", original="in")`` does."""
    for i in range(rows):
        t = lag + i  # index into xdiff
        y[i] = x[t + 1] - x[t]
        X[i, 0] = x[t]
        for j in range(1, lag + 1):
            X[i, j] = x[t - j + 1] - x[t - j]


@njit(cache=True, error_model="numpy")
def _householder_nested(A, rows, p, center, ssr_out, rank_out):
    """Householder QR of the design stored *transposed* in ``A[:p+1, :rows]``
    (row j = column j of the design; the last row is y), in place.

    Writes, for k = 1..p, the residual sum of squares and the rank of the model
    with the first k columns (plus an intercept when ``center``). Returns False
    when a column is nearly (but not exactly) collinear with the ones before it:
    the caller then uses the exact statsmodels emulation instead.
    """
    q = p + 1
    if center:
        for j in range(q):
            s = 0.0
            for i in range(rows):
                s += A[j, i]
            mu = s / rows
            for i in range(rows):
                A[j, i] -= mu
    rank = 1 if center else 0
    r = 0  # next pivot row (= number of independent columns so far)
    for k in range(p):
        ak = A[k]
        nrm0 = 0.0
        for i in range(r):
            nrm0 += ak[i] * ak[i]
        s = 0.0
        for i in range(r, rows):
            s += ak[i] * ak[i]
        nrm0 += s
        if nrm0 == 0.0:
            pass  # an exactly-zero column adds nothing (statsmodels' pinv drops it too)
        elif s <= nrm0 * 1e-16 or r >= rows:
            return False  # collinear: let the exact path decide rank and fit
        else:
            alpha = math.sqrt(s)
            if ak[r] > 0:
                alpha = -alpha
            v0 = ak[r] - alpha
            vnorm2 = s - ak[r] * ak[r] + v0 * v0
            ak[r] = v0
            if vnorm2 > 0.0:
                for j in range(k + 1, q):
                    aj = A[j]
                    d = 0.0
                    for i in range(r, rows):
                        d += ak[i] * aj[i]
                    f = 2.0 * d / vnorm2
                    for i in range(r, rows):
                        aj[i] -= f * ak[i]
            ak[r] = alpha
            r += 1
            rank += 1
        ay = A[p]
        ssr = 0.0
        for i in range(r, rows):
            ssr += ay[i] * ay[i]
        ssr_out[k] = ssr
        rank_out[k] = rank
    return True


@njit(cache=True, error_model="numpy")
def _fill_transposed(x, lag, rows, A, level_last):
    """The ADF design of ``lag`` transposed into ``A``: rows [level, dx_1..dx_lag]
    (or [dx_1..dx_lag, level] with ``level_last``), then y. Returns True when a
    design column is a non-zero constant (statsmodels then skips the intercept)."""
    q = lag + 1
    lev = q - 1 if level_last else 0
    off = 0 if level_last else 1
    for i in range(rows):
        t = lag + i
        A[q, i] = x[t + 1] - x[t]
        A[lev, i] = x[t]
        for j in range(1, lag + 1):
            A[j - 1 + off, i] = x[t - j + 1] - x[t - j]
    for j in range(q):
        aj = A[j]
        v0 = aj[0]
        if v0 == 0.0:
            continue
        const = True
        for i in range(1, rows):
            if aj[i] != v0:
                const = False
                break
        if const:
            return True
    return False


@njit(cache=True, error_model="numpy")
def _aic(ssr, nobs, rank):
    nobs2 = nobs / 2.0
    llf = -nobs2 * _LOG_2PI - nobs2 * math.log(ssr / nobs) - nobs2
    return -2.0 * llf + 2.0 * rank


@njit(cache=True, error_model="numpy")
def _pinv_fit(D, y, rows, cols):
    """statsmodels OLS(method="pinv") on ``D[:rows, :cols]``: returns
    (ssr, rank, beta0, cov00) with ``cov00`` the [0, 0] entry of pinv pinv'."""
    Dm = np.ascontiguousarray(D[:rows, :cols])
    u, s, vt = np.linalg.svd(Dm, full_matrices=False)
    smax = 0.0
    for i in range(s.shape[0]):
        if s[i] > smax:
            smax = s[i]
    cutoff = 1e-15 * smax
    tol = smax * cols * _EPS  # matrix_rank(np.diag(s))
    rank = 0
    sinv = np.zeros(s.shape[0])
    for i in range(s.shape[0]):
        if s[i] > cutoff:
            sinv[i] = 1.0 / s[i]
        if s[i] > tol:
            rank += 1
    # pinv = V diag(sinv) U'
    k = s.shape[0]
    pinv = np.zeros((cols, rows))
    for a in range(cols):
        for b in range(rows):
            acc = 0.0
            for c in range(k):
                acc += vt[c, a] * sinv[c] * u[b, c]
            pinv[a, b] = acc
    beta = np.zeros(cols)
    for a in range(cols):
        acc = 0.0
        for b in range(rows):
            acc += pinv[a, b] * y[b]
        beta[a] = acc
    ssr = 0.0
    for b in range(rows):
        fit = 0.0
        for a in range(cols):
            fit += Dm[b, a] * beta[a]
        e = y[b] - fit
        ssr += e * e
    cov00 = 0.0
    for b in range(rows):
        cov00 += pinv[0, b] * pinv[0, b]
    return ssr, rank, beta[0], cov00


@njit(cache=True, error_model="numpy")
def _adf_exact_search(X, y, rows, p, has_const, ssr_k):
    """Lag search with the statsmodels pinv path; returns the chosen lag and fills
    ``ssr_k``."""
    ncol = p + (1 if has_const else 0)
    D = np.empty((rows, ncol))
    for i in range(rows):
        off = 0
        if has_const:
            D[i, 0] = 1.0
            off = 1
        for j in range(p):
            D[i, off + j] = X[i, j]
    best_aic = np.inf
    best_k = -1
    prev_rank = -1
    for k in range(1, p + 1):
        cols = k + (1 if has_const else 0)
        ssr, rank, _, _ = _pinv_fit(D, y, rows, cols)
        ssr_k[k - 1] = ssr
        if rank == prev_rank:
            # the new lag is a linear combination of the others: the same fit, the
            # same AIC in exact arithmetic, so the smaller lag stands (statsmodels
            # lets rounding in the last bit decide these ties)
            ssr_k[k - 1] = ssr_k[k - 2]
            continue
        prev_rank = rank
        aic = _aic(ssr, float(rows), rank)
        if best_k < 0 or aic < best_aic:
            best_aic = aic
            best_k = k
    return best_k - 1


@njit(cache=True, error_model="numpy")
def _adf_exact_tstat(X, y, rows, q, has_const):
    """Refit with the statsmodels pinv path: (t-value of the level, ssr)."""
    ncol = q + (1 if has_const else 0)
    D = np.empty((rows, ncol))
    for i in range(rows):
        for j in range(q):
            D[i, j] = X[i, j]
        if has_const:
            D[i, q] = 1.0  # add_trend(prepend=False): the constant goes last
    ssr, rank, b0, cov00 = _pinv_fit(D, y, rows, ncol)
    df_resid = rows - rank
    scale = ssr / df_resid
    return b0 / math.sqrt(cov00 * scale), ssr


@njit(cache=True, error_model="numpy")
def _centered_ss(y, rows):
    s = 0.0
    for i in range(rows):
        s += y[i]
    mu = s / rows
    ss = 0.0
    for i in range(rows):
        d = y[i] - mu
        ss += d * d
    return ss


@njit(cache=True, error_model="numpy")
def _nonzero_const_design(x, lag, rows):
    """``add_trend(has_constant="skip")`` test on the design of ``lag`` without
    building it: is the level or a lagged difference a non-zero constant column?"""
    t0 = lag
    v0 = x[t0]
    if v0 != 0.0:
        const = True
        for i in range(1, rows):
            if x[t0 + i] != v0:
                const = False
                break
        if const:
            return True
    for j in range(1, lag + 1):
        v0 = x[t0 - j + 1] - x[t0 - j]
        if v0 == 0.0:
            continue
        const = True
        for i in range(1, rows):
            t = t0 + i
            if x[t - j + 1] - x[t - j] != v0:
                const = False
                break
        if const:
            return True
    return False


#: the Gram-matrix paths hand over to the QR path below these (see _adf_gram)
GRAM_PIVOT_RTOL = 1e-6
GRAM_FIT_RTOL = 1e-10
#: stricter limits for the refit, whose t-value must keep ~1e-12 relative accuracy
GRAM_REFIT_PIVOT_RTOL = 1e-3
GRAM_REFIT_FIT_RTOL = 1e-4


@njit(cache=True, error_model="numpy")
def _adf_gram(x, n, lag, G, d, W, level_last):
    """Centred Gram matrix of the ADF design of ``lag`` (rows t = lag .. n-2) with y
    appended: columns [level, dx_1..dx_lag, y], or [dx_1..dx_lag, level, y] with
    ``level_last``. ``W`` is scratch (at least ``lag + 2`` rows and columns).
    Returns False (and the QR path decides) when a lagged column or y is
    constant, or the level is zero throughout.

    The lagged differences are shifted copies of one series, so their inner
    products follow ``S[j+1, k+1] = S[j, k] + d[a-1-j] d[a-1-k] - d[b-1-j] d[b-1-k]``:
    the whole matrix costs O(n p + p^2) instead of the O(n p^2) of a QR
    factorisation of the design.
    """
    m = n - 1 - lag  # rows t = lag .. n-2
    p = lag + 1  # regressors; y is column p
    nd = n - 1
    s = 0.0
    for i in range(nd):
        d[i] = x[i + 1] - x[i]
        s += d[i]
    # a constant lagged column (zero: rank-deficient; y: every model exact) or a
    # zero level column is a question for the QR path
    for k in range(p):
        v0 = d[lag - k]
        const = True
        for t in range(lag + 1, n - 1):
            if d[t - k] != v0:
                const = False
                break
        if const:
            return False
    zero = True
    for t in range(lag, n - 1):
        if x[t] != 0.0:
            zero = False
            break
    if zero:
        return False
    mu = s / nd
    for i in range(nd):
        d[i] -= mu  # a global shift: centred inner products unchanged, less cancellation
    # S[j, k] = sum_t d[t-j] d[t-k] (lag 0 is y) and the column sums
    S = W[:p, :p]
    sums = W[p]
    for k in range(p):
        acc = 0.0
        sk = 0.0
        for t in range(lag, n - 1):
            acc += d[t] * d[t - k]
            sk += d[t - k]
        S[0, k] = acc
        S[k, 0] = acc
        sums[k] = sk
    for j in range(p - 1):
        for k in range(j, p - 1):
            v = S[j, k] + d[lag - 1 - j] * d[lag - 1 - k] - d[n - 2 - j] * d[n - 2 - k]
            S[j + 1, k + 1] = v
            S[k + 1, j + 1] = v
    # where each lag family member and the level go
    lev = lag if level_last else 0
    sl = 0.0
    for t in range(lag, n - 1):
        sl += x[t]
    mul = sl / m
    lsum = 0.0
    cll = 0.0
    for t in range(lag, n - 1):
        v = x[t] - mul
        lsum += v
        cll += v * v
    G[lev, lev] = cll
    for k in range(p):
        acc = 0.0
        for t in range(lag, n - 1):
            acc += (x[t] - mul) * d[t - k]
        c = acc - lsum * sums[k] / m
        if k == 0:
            col = p
        elif level_last:
            col = k - 1
        else:
            col = k
        if lev <= col:
            G[lev, col] = c
        else:
            G[col, lev] = c
    for j in range(p):
        for k in range(j, p):
            v = S[j, k] - sums[j] * sums[k] / m
            cj = p if j == 0 else (j - 1 if level_last else j)
            ck = p if k == 0 else (k - 1 if level_last else k)
            if cj <= ck:
                G[cj, ck] = v
            else:
                G[ck, cj] = v
    return True


@njit(cache=True, error_model="numpy")
def _cholesky_nested(G, p, pivot_rtol, fit_rtol, ssr_k):
    """In-place Cholesky of the Gram ``G[:p+1, :p+1]`` (y last, upper triangle),
    writing every nested model's RSS. False when a pivot or an RSS falls below
    its relative limit (near-collinear column, near-exact fit)."""
    tss = G[p, p]
    if not tss > 0.0:
        return False
    ssr = tss
    for k in range(p):
        gkk = G[k, k]
        piv = gkk
        for i in range(k):
            piv -= G[i, k] * G[i, k]
        if not (gkk > 0.0 and piv > pivot_rtol * gkk):
            return False
        rkk = math.sqrt(piv)
        G[k, k] = rkk
        for j in range(k + 1, p + 1):
            v = G[k, j]
            for i in range(k):
                v -= G[i, k] * G[i, j]
            G[k, j] = v / rkk
        ssr -= G[k, p] * G[k, p]
        if not ssr > fit_rtol * tss:
            return False
        ssr_k[k] = ssr
    return True


@njit(cache=True, error_model="numpy")
def _adf_search_gram(x, n, maxlag, G, d, W, ssr_k):
    """The AIC lag search from the Gram matrix (:func:`_adf_gram`) and one Cholesky
    sweep. Squaring the design costs accuracy, which only the *choice* of lag needs
    here; returns -1, leaving it to the QR path, when a column is nearly collinear
    (pivot below ``GRAM_PIVOT_RTOL`` of its diagonal) or a fit nearly exact (RSS
    below ``GRAM_FIT_RTOL`` of the total)."""
    m = n - 1 - maxlag
    p = maxlag + 1
    if not _adf_gram(x, n, maxlag, G, d, W, False):
        return -1
    if not _cholesky_nested(G, p, GRAM_PIVOT_RTOL, GRAM_FIT_RTOL, ssr_k):
        return -1
    best_aic = np.inf
    best_k = -1
    for k in range(p):
        aic = _aic(ssr_k[k], float(m), k + 2)  # rank: intercept + k + 1 regressors
        if best_k < 0 or aic < best_aic:
            best_aic = aic
            best_k = k
    return best_k


@njit(cache=True, error_model="numpy")
def _adf_refit_gram(x, n, lag, G, d, W, ssr_k):
    """t-value of the level in the refit with ``lag``, from the Gram matrix with the
    level last (t = R[l, y] / sigma); NaN when the stricter refit limits send it to
    the QR path."""
    p = lag + 1
    rows = n - 1 - lag
    if not _adf_gram(x, n, lag, G, d, W, True):
        return np.nan
    if not _cholesky_nested(G, p, GRAM_REFIT_PIVOT_RTOL, GRAM_REFIT_FIT_RTOL, ssr_k):
        return np.nan
    sigma = math.sqrt(ssr_k[p - 1] / (rows - (p + 1)))
    return G[p - 1, p] / sigma


#: a regression whose residual sum of squares is below this share of the centred
#: total (R^2 > 1 - 1e-10) counts as an exact fit: its t-value (|t| ~ 1e5 and up) and
#: the AIC comparison are then dominated by rounding, in float64 as in statsmodels
#: (which reports values like -1e15 where the fit is exact)
EXACT_FIT_RTOL = 1e-10


@njit(cache=True, error_model="numpy")
def _adf_search_qr(x, n, maxlag, X, y, A, ssr_k, rank_k):
    """The AIC lag search by Householder QR of the centred design (or the exact
    statsmodels emulation for degenerate designs). Returns the lag, or -1 when the
    ADF statistic is undefined (constant differences, or an exact fit)."""
    rows = n - 1 - maxlag
    p = maxlag + 1
    nzc = _fill_transposed(x, maxlag, rows, A, False)
    tss = _centered_ss(A[p], rows)
    if tss == 0.0:
        return -1  # constant differences: every model with an intercept is exact
    if not nzc and _householder_nested(A, rows, p, True, ssr_k, rank_k):
        best_aic = np.inf
        best_k = -1
        for k in range(p):
            aic = _aic(ssr_k[k], float(rows), rank_k[k])
            # min over (aic, k): ties go to the smaller lag
            if best_k < 0 or aic < best_aic:
                best_aic = aic
                best_k = k
        lag = best_k
    else:
        _adf_design(x, n, maxlag, rows, X, y)
        lag = _adf_exact_search(X, y, rows, p, not nzc, ssr_k)
    for k in range(p):
        if ssr_k[k] < EXACT_FIT_RTOL * tss:
            return -1
    return lag


@njit(cache=True, error_model="numpy")
def adf_teststat(x, n, X, y, A, ssr_k, rank_k):
    """ADF t-statistic of ``x[:n]`` (see module docstring). ``X, y, A, ssr_k,
    rank_k`` are scratch buffers sized for the largest window: ``X[n, L+2]``,
    ``y[n]``, ``A[L+3, n]`` (transposed), ``ssr_k[L+2]``, ``rank_k[L+2]`` with L the
    maximum lag.

    NaN where statsmodels raises (constant series, n < 4) and where a candidate
    regression fits (numerically) exactly (RSS < ``EXACT_FIT_RTOL`` x centred TSS
    of the differences): there the lag choice and the t-value only reflect
    rounding (statsmodels then reports values like -1e15).
    """
    if n < 1:
        return np.nan
    xmin = x[0]
    xmax = x[0]
    for i in range(1, n):
        if x[i] < xmin:
            xmin = x[i]
        if x[i] > xmax:
            xmax = x[i]
    if xmax == xmin:
        return np.nan  # statsmodels: "Invalid input, x is constant"
    maxlag = int(math.ceil(12.0 * math.pow(n / 100.0, 1.0 / 4.0)))
    maxlag = min(n // 2 - 1 - 1, maxlag)
    if maxlag < 0:
        return np.nan  # "sample size is too short"
    # ---- lag search on the common sample
    rows = n - 1 - maxlag
    lag = -1
    if not _nonzero_const_design(x, maxlag, rows):
        lag = _adf_search_gram(x, n, maxlag, X, y, A, ssr_k)  # -1: not accurate enough here
    if lag < 0:
        lag = _adf_search_qr(x, n, maxlag, X, y, A, ssr_k, rank_k)
        if lag < 0:
            return np.nan
    # ---- refit with the chosen lag on its own (longer) sample; the level last,
    # so its t-value is R[l, y] / sigma (sign of R[l, l]) after one factorisation
    rows = n - 1 - lag
    q = lag + 1
    if not _nonzero_const_design(x, lag, rows):
        t = _adf_refit_gram(x, n, lag, X, y, A, ssr_k)
        if not math.isnan(t):
            return t
    nzc = _fill_transposed(x, lag, rows, A, True)
    tss = _centered_ss(A[q], rows)
    if not nzc and _householder_nested(A, rows, q, True, ssr_k, rank_k) and rank_k[q - 1] == q + 1:
        ssr = ssr_k[q - 1]
        if not ssr >= EXACT_FIT_RTOL * tss:
            return np.nan
        df_resid = rows - (q + 1)
        sigma = math.sqrt(ssr / df_resid)
        t = A[q, q - 1] / sigma  # R[l, y]; A holds R transposed
        return t if A[q - 1, q - 1] > 0 else -t
    _adf_design(x, n, lag, rows, X, y)
    t, ssr = _adf_exact_tstat(X, y, rows, q, not nzc)
    if not ssr >= EXACT_FIT_RTOL * tss:
        return np.nan
    return t
