"""Compiled window-feature kernels (numba), defined to agree with tsfresh.

Every feature is computed over the *valid* (non-NaN) samples of one window of one
channel, taken in time order as a contiguous series (exactly what tsfresh sees when
it is handed the same samples). The definitions follow the tsfresh 0.21 feature
calculators and the libraries they call, operation for operation where that is
cheap, so that the two backends agree to floating-point rounding:

======== ===================================================================
mean     ``np.mean``: numpy's pairwise summation / n (reproduced exactly)
var      ``np.var`` (population, ddof=0): two-pass, pairwise sums
std      ``np.std`` = sqrt(var)
min/max  ``np.min`` / ``np.max``
skew     pandas ``Series.skew`` (adjusted Fisher-Pearson G1, online moments as in
         pandas 3); a constant window gives NaN (0/0), as pandas does
kurtosis pandas ``Series.kurtosis`` (adjusted G2, excess); constant → NaN
slope    ``scipy.stats.linregress(range(n), x).slope``
acf1     tsfresh ``autocorrelation(x, 1)``: sum((x_t-m)(x_{t+1}-m)) / ((n-1) var);
         NaN when ``np.isclose(var, 0)`` (var <= 1e-8), as tsfresh does
adf      tsfresh ``augmented_dickey_fuller(attr="teststat", autolag="AIC")``, i.e.
         statsmodels ``adfuller(x, regression="c", autolag="AIC")``: maximum lag
         ``min(ceil(12 (n/100)^(1/4)), n//2 - 2)``, lag chosen by AIC over OLS fits
         on a common sample, t-statistic of the lagged level in the refit.
         NaN for a constant window or when the sample is too short (n < 4).
sum      ``np.sum`` (counters)
======== ===================================================================

A window with fewer than ``min_valid`` (default 3) valid samples gets NaN for
every feature.

The ADF regressions are solved by Householder QR of the centred design (the
intercept is then implicit, Frisch-Waugh), which gives the residual sum of squares
of *every* nested lag model from one factorisation. Where statsmodels' own
conventions make a difference (a rank-deficient or nearly collinear design, a
non-zero constant regressor that makes ``add_trend`` skip the intercept), the
kernel falls back to an exact emulation of statsmodels' pseudo-inverse path
(SVD, ``rcond=1e-15``, rank from ``matrix_rank``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "FEATURE_CODES",
    "N_FEATURES",
    "window_feature_kernel",
]

#: feature name → index in the kernel's output
FEATURE_CODES: dict[str, int] = {
    "mean": 0,
    "var": 1,
    "std": 2,
    "min": 3,
    "max": 4,
    "skew": 5,
    "kurtosis": 6,
    "slope": 7,
    "acf1": 8,
    "adf": 9,
    "sum": 10,
}
N_FEATURES = len(FEATURE_CODES)
N_FEATURES_CONST = 11  # numba-friendly literal; equals N_FEATURES

_LOG_2PI = math.log(2 * math.pi)
_EPS = np.finfo(np.float64).eps


@njit(cache=True, error_model="numpy")
def _pairwise_leaf(a, lo, n):
    """numpy's ``pairwise_sum_DOUBLE`` for ``n <= 128`` (8 accumulators)."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0 = a[lo]
    r1 = a[lo + 1]
    r2 = a[lo + 2]
    r3 = a[lo + 3]
    r4 = a[lo + 4]
    r5 = a[lo + 5]
    r6 = a[lo + 6]
    r7 = a[lo + 7]
    i = 8
    stop = n - (n % 8)
    while i < stop:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, error_model="numpy")
def _psum(a, n):
    """``np.sum(a[:n])`` bit for bit: numpy's pairwise summation, whose recursion
    (split at ``n // 2`` rounded down to a multiple of 8, leaves of <= 128) is
    unrolled here with an explicit stack (recursive numba functions do not cache)."""
    if n <= 128:
        return _pairwise_leaf(a, 0, n)
    los = np.empty(128, dtype=np.int64)
    ns = np.empty(128, dtype=np.int64)
    states = np.empty(128, dtype=np.int64)
    vals = np.empty(128)
    sp = 0
    vp = 0
    los[0] = 0
    ns[0] = n
    states[0] = 0
    sp = 1
    while sp > 0:
        top = sp - 1
        lo = los[top]
        m = ns[top]
        if m <= 128:
            vals[vp] = _pairwise_leaf(a, lo, m)
            vp += 1
            sp -= 1
            continue
        n2 = m // 2
        n2 -= n2 % 8
        st = states[top]
        if st == 0:
            states[top] = 1
            los[sp] = lo
            ns[sp] = n2
            states[sp] = 0
            sp += 1
        elif st == 1:
            states[top] = 2
            los[sp] = lo + n2
            ns[sp] = m - n2
            states[sp] = 0
            sp += 1
        else:
            right = vals[vp - 1]
            left = vals[vp - 2]
            vp -= 2
            vals[vp] = left + right
            vp += 1
            sp -= 1
    return vals[0]


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
    for k in range(1, p + 1):
        cols = k + (1 if has_const else 0)
        ssr, rank, _, _ = _pinv_fit(D, y, rows, cols)
        ssr_k[k - 1] = ssr
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


#: a regression whose residual sum of squares is below this share of the centred
#: total is an exact fit: its t-value (and an AIC of log 0) is rounding noise
EXACT_FIT_RTOL = 1e-20


@njit(cache=True, error_model="numpy")
def adf_teststat(x, n, X, y, A, ssr_k, rank_k):
    """ADF t-statistic of ``x[:n]`` (see module docstring). ``X, y, A, ssr_k,
    rank_k`` are scratch buffers sized for the largest window: ``X[n, L+2]``,
    ``y[n]``, ``A[L+3, n]`` (transposed), ``ssr_k[L+2]``, ``rank_k[L+2]`` with L the
    maximum lag.

    NaN where statsmodels raises (constant series, n < 4) and where a candidate
    regression fits exactly (RSS < ``EXACT_FIT_RTOL`` x centred TSS of the
    differences): there the lag choice and the t-value only reflect rounding
    (statsmodels then reports values like -1e15).
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
    p = maxlag + 1
    nzc = _fill_transposed(x, maxlag, rows, A, False)
    tss = _centered_ss(A[p], rows)
    if tss == 0.0:
        return np.nan  # constant differences: every model with an intercept is exact
    ok = not nzc and _householder_nested(A, rows, p, True, ssr_k, rank_k)
    if ok:
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
            return np.nan
    # ---- refit with the chosen lag on its own (longer) sample; the level last,
    # so its t-value is R[l, y] / sigma (sign of R[l, l]) after one factorisation
    rows = n - 1 - lag
    q = lag + 1
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


# ---------------------------------------------------------------------------------------
# all features of all windows × channels
# ---------------------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def _features_one(buf, n, want, out, dev, X, y, A, ssr_k, rank_k):
    # mean / var / std / sum: numpy's definitions
    total = _psum(buf, n)
    if want[10]:
        out[10] = total
    mean = total / n
    for i in range(n):
        d = buf[i] - mean
        dev[i] = d * d
    var = _psum(dev, n) / n
    out[0] = mean
    out[1] = var
    out[2] = math.sqrt(var)
    lo = buf[0]
    hi = buf[0]
    for i in range(1, n):
        v = buf[i]
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    out[3] = lo
    out[4] = hi
    if want[5] or want[6]:
        # pandas 3 online moments (moments_add_value / calc_skew / calc_kurt)
        nobs = 0
        mu = 0.0
        m2 = 0.0
        m3 = 0.0
        m4 = 0.0
        for i in range(n):
            delta = buf[i] - mu
            nobs += 1
            fn = float(nobs)
            delta_n = delta / fn
            term1 = delta * delta_n * (fn - 1.0)
            m4 += delta_n * (-4.0 * m3 + delta_n * (6.0 * m2 + term1 * (fn * fn - 3.0 * fn + 3.0)))
            m3 += delta_n * (term1 * (fn - 2.0) - 3.0 * m2)
            m2 += term1
            mu += delta_n
        dn = float(n)
        if n < 3:
            out[5] = np.nan
        else:
            out[5] = (m3 / (m2 * math.sqrt(m2))) * ((dn * math.sqrt(dn - 1.0)) / (dn - 2.0))
        if n < 4:
            out[6] = np.nan
        else:
            ratio = m4 / (m2 * m2)
            inner = dn * (dn + 1.0) * ratio - 3.0 * (dn - 1.0)
            out[6] = ((dn - 1.0) / ((dn - 2.0) * (dn - 3.0))) * inner
    if want[7]:
        # linregress(range(n), x).slope = cov(t, x) / var(t)
        tm = (n - 1) / 2.0
        sxx = 0.0
        sxy = 0.0
        for i in range(n):
            dt = i - tm
            sxx += dt * dt
            sxy += dt * (buf[i] - mean)
        out[7] = sxy / sxx if sxx > 0 else np.nan
    if want[8]:
        if n < 2 or abs(var) <= 1e-8:  # np.isclose(var, 0)
            out[8] = np.nan
        else:
            for i in range(n - 1):
                dev[i] = (buf[i] - mean) * (buf[i + 1] - mean)
            out[8] = _psum(dev, n - 1) / ((n - 1) * var)
    if want[9]:
        out[9] = adf_teststat(buf, n, X, y, A, ssr_k, rank_k)


@njit(cache=True, error_model="numpy")
def window_feature_kernel(values, row_start, row_end, want, min_valid, out):
    """Fill ``out[w, c, f]`` for every window ``w`` (rows ``row_start[w]:row_end[w]``
    of ``values``), channel ``c`` and wanted feature ``f`` (``want[c, f]``).

    ``values`` is ``float64[T, C]`` (Fortran order is fastest: one channel is
    contiguous); NaN samples are skipped.
    """
    n_win = row_start.shape[0]
    n_ch = values.shape[1]
    maxlen = 1
    for w in range(n_win):
        if row_end[w] - row_start[w] > maxlen:
            maxlen = row_end[w] - row_start[w]
    maxlag = int(math.ceil(12.0 * math.pow(maxlen / 100.0, 1.0 / 4.0))) + 2
    buf = np.empty(maxlen)
    dev = np.empty(maxlen)
    X = np.empty((maxlen, maxlag + 2))
    y = np.empty(maxlen)
    A = np.empty((maxlag + 3, maxlen))  # designs are stored transposed
    ssr_k = np.empty(maxlag + 2)
    rank_k = np.empty(maxlag + 2, dtype=np.int64)
    res = np.empty(N_FEATURES_CONST)
    for c in range(n_ch):
        wc = want[c]
        anyw = False
        for f in range(N_FEATURES_CONST):
            if wc[f]:
                anyw = True
        if not anyw:
            continue
        for w in range(n_win):
            n = 0
            for r in range(row_start[w], row_end[w]):
                v = values[r, c]
                if not math.isnan(v):
                    buf[n] = v
                    n += 1
            if n < min_valid or n == 0:
                for f in range(N_FEATURES_CONST):
                    out[w, c, f] = np.nan
                continue
            for f in range(N_FEATURES_CONST):
                res[f] = np.nan
            _features_one(buf, n, wc, res, dev, X, y, A, ssr_k, rank_k)
            for f in range(N_FEATURES_CONST):
                out[w, c, f] = res[f] if wc[f] else np.nan

