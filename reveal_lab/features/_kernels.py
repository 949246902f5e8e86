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
         NaN for a constant window, when the sample is too short (n < 4) and
         when a candidate regression fits exactly (see below).
sum      ``np.sum`` (counters)
======== ===================================================================

A window with fewer than ``min_valid`` (default 3) valid samples gets NaN for
every feature.

The ADF t-statistic is computed by :func:`reveal_lab.features._adf.adf_teststat`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from reveal_lab.features._adf import adf_teststat

__all__ = [
    "FEATURE_CODES",
    "N_FEATURES",
    "window_feature_kernel",
    "window_feature_kernel_parallel",
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
#: the kernels' output width (a module global: numba freezes it as a constant at compile time)
N_FEATURES = len(FEATURE_CODES)



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
        # pandas 3 online moments (moments_add_value / calc_skew / calc_kurt), on values
        # shifted by the first one: central moments do not change, and a level far above
        # the spread (MemAvailable ~1e7 kB moving by a few hundred) no longer costs digits
        # (unshifted: kurtosis off by up to ~4e-9 relative; shifted: ~4e-13, as pandas)
        shift = buf[0]
        nobs = 0
        mu = 0.0
        m2 = 0.0
        m3 = 0.0
        m4 = 0.0
        for i in range(n):
            delta = (buf[i] - shift) - mu
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
def _max_window(row_start, row_end):
    maxlen = 1
    for w in range(row_start.shape[0]):
        if row_end[w] - row_start[w] > maxlen:
            maxlen = row_end[w] - row_start[w]
    return maxlen


@njit(cache=True, error_model="numpy")
def _channel(values, c, row_start, row_end, want, min_valid, out, maxlen):
    """Every window of channel ``c`` (scratch buffers allocated once per channel)."""
    wc = want[c]
    anyw = False
    for f in range(N_FEATURES):
        if wc[f]:
            anyw = True
    if not anyw:
        return
    maxlag = int(math.ceil(12.0 * math.pow(maxlen / 100.0, 1.0 / 4.0))) + 2
    buf = np.empty(maxlen)
    dev = np.empty(maxlen)
    X = np.empty((maxlen, maxlag + 2))
    y = np.empty(maxlen)
    A = np.empty((maxlag + 3, maxlen))  # designs are stored transposed
    ssr_k = np.empty(maxlag + 2)
    rank_k = np.empty(maxlag + 2, dtype=np.int64)
    res = np.empty(N_FEATURES)
    for w in range(row_start.shape[0]):
        n = 0
        for r in range(row_start[w], row_end[w]):
            v = values[r, c]
            if not math.isnan(v):
                buf[n] = v
                n += 1
        if n < min_valid or n == 0:
            for f in range(N_FEATURES):
                out[w, c, f] = np.nan
            continue
        for f in range(N_FEATURES):
            res[f] = np.nan
        _features_one(buf, n, wc, res, dev, X, y, A, ssr_k, rank_k)
        for f in range(N_FEATURES):
            out[w, c, f] = res[f] if wc[f] else np.nan


@njit(cache=True, error_model="numpy")
def window_feature_kernel(values, row_start, row_end, want, min_valid, out):
    """Fill ``out[w, c, f]`` for every window ``w`` (rows ``row_start[w]:row_end[w]``
    of ``values``), channel ``c`` and wanted feature ``f`` (``want[c, f]``).

    ``values`` is ``float64[T, C]`` (Fortran order is fastest: one channel is
    contiguous); NaN samples are skipped. Single-threaded.
    """
    maxlen = _max_window(row_start, row_end)
    for c in range(values.shape[1]):
        _channel(values, c, row_start, row_end, want, min_valid, out, maxlen)


@njit(cache=True, error_model="numpy", parallel=True)
def window_feature_kernel_parallel(values, row_start, row_end, want, min_valid, out):
    """:func:`window_feature_kernel` with the channels spread over numba's threads
    (``numba.set_num_threads``); identical results."""
    maxlen = _max_window(row_start, row_end)
    for c in prange(values.shape[1]):
        _channel(values, c, row_start, row_end, want, min_valid, out, maxlen)
