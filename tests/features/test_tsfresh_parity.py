"""The compiled kernel computes tsfresh's features: parity on real telemetry.

Tolerance: relative 1e-9, plus an absolute floor only where a value near 0 is the
result of cancellation (so its relative error is meaningless):

* mean, var, std, min, max, sum, acf1: none; the kernel reproduces numpy's
  pairwise summation and tsfresh's formulas, so these agree bit for bit;
* slope: ``1e-12 * max|x|`` of the window; scipy's ``linregress`` centres with
  ``np.cov`` (BLAS dot products, another summation order), and a slope near 0 is a
  difference of O(max|x|) terms;
* skew, kurtosis: ``1e-12`` (dimensionless; pandas' and our online moments round
  differently at the last bits, a symmetric window gives ±1e-16 instead of 0);
* adf: where the two disagree beyond 1e-9, exact rational arithmetic on the same
  float64 samples is the referee (``conftest.exact_adf``): where the kernel says NaN
  and tsfresh a number, the definition must give NaN (a numerically exact fit,
  RSS < 1e-10 TSS, where statsmodels reports t-values like -1e15); where both give
  numbers, the kernel must match the exact value to 1e-9 relative plus 100 times
  the statistic's own sensitivity to its inputs' last bit (the spread of the exact
  value when every sample is moved by one part in 2**52; near-exact fits and
  collinear lags make it large). These are statsmodels' losses of digits (its
  pseudo-inverse of the uncentred design on large-offset levels, lag choices
  decided by rounding among equivalent fits).
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from reveal_lab.config import PROJECT_ROOT, WindowConfig
from reveal_lab.derive import add_derived
from reveal_lab.features import window_features

pytest.importorskip("tsfresh")
statsmodels = pytest.importorskip("statsmodels")

SMD = (
    Path(os.environ.get("REVEAL_SHARED_DATA", PROJECT_ROOT.parent / "shared" / "data"))
    / "labelled-servers"
    / "machine-1-6_test.csv.gz"
)

ATOL_ONLY = {"skew": 1e-12, "kurtosis": 1e-12}


def _rounding_spread(x: np.ndarray, t: float, exact_adf) -> float:
    """How far the exact t moves when every sample moves by one part in 2**52
    (two seeded random sign patterns): the resolution float64 inputs allow."""
    rng = np.random.default_rng(0)
    spread = 0.0
    for _ in range(2):
        xp = x * (1.0 + np.ldexp(1.0, -52) * rng.choice([-1.0, 1.0], size=x.size))
        tp = exact_adf(xp)
        spread = max(spread, abs(tp - t) if np.isfinite(tp) else np.inf)
    return spread


def assert_parity(frame: pl.DataFrame, cfg: WindowConfig, exact_adf) -> dict[str, int]:
    fast = window_features(frame, cfg, backend="numba")
    ref = window_features(frame, cfg, backend="tsfresh")
    assert fast.pairs.equals(ref.pairs) and fast.windows.equals(ref.windows)
    A, B = fast.X, ref.X
    feats = fast.pairs["feature"].to_numpy()
    metrics = fast.pairs["metric"].to_numpy()
    rows = fast.windows.select("row_start", "row_end").rows()
    counts = {"cells": int(np.isfinite(B).sum()), "adf_exact_fit": 0, "adf_statsmodels_digits": 0}
    for j in range(A.shape[1]):
        col = frame[metrics[j]].to_numpy()
        for w, (r0, r1) in enumerate(rows):
            a, b = A[w, j], B[w, j]
            if np.isnan(a) and np.isnan(b):
                continue
            x = col[r0:r1]
            x = x[~np.isnan(x)]
            f = feats[j]
            if f == "adf" and not (abs(a - b) <= 1e-9 * abs(b)):
                t, kappa = exact_adf(x, with_kappa=True)
                if np.isnan(a):
                    assert np.isnan(t), (metrics[j], w, b, t)
                    counts["adf_exact_fit"] += 1
                else:
                    spread = _rounding_spread(x, t, exact_adf)
                    assert abs(a - t) <= 1e-9 * abs(t) + 100 * spread, (metrics[j], w, a, b, t, kappa, spread)
                    counts["adf_statsmodels_digits"] += 1
                continue
            floor = ATOL_ONLY.get(f, 0.0)
            if f == "slope":
                floor = 1e-12 * float(np.abs(x).max())
            assert not np.isnan(a) and not np.isnan(b), (metrics[j], f, w, a, b)
            assert abs(a - b) <= 1e-9 * abs(b) + floor, (metrics[j], f, w, a, b)
    return counts


@pytest.mark.slow
@pytest.mark.skipif(not SMD.exists(), reason=f"labelled server telemetry not found at {SMD}")
def test_parity_on_real_server_telemetry(exact_adf):
    """SMD machine-1-6 (real server telemetry, 1-minute samples): 30-sample windows."""
    raw = np.loadtxt(SMD, delimiter=",")
    raw = raw[:6030]
    keep = [j for j in range(raw.shape[1]) if np.ptp(raw[:, j]) > 0][:12]
    t0 = dt.datetime(2025, 1, 1)
    ts = pl.datetime_range(t0, t0 + dt.timedelta(minutes=len(raw) - 1), "1m", eager=True).cast(
        pl.Datetime("ms")
    )
    frame = pl.DataFrame({"timestamp": ts, **{f"SMD:m{j:02d}.machine-1-6[-]": raw[:, j] for j in keep}})
    cfg = WindowConfig(window_s=30 * 60, stride_s=30 * 60, interval_s=60)
    counts = assert_parity(frame, cfg, exact_adf)
    assert counts["cells"] > 200 * 12 * 8  # a few hundred windows, all features
    # exact fits are the exception (spiky, mostly-zero windows), not the rule
    assert counts["adf_exact_fit"] < 0.05 * 200 * 12


def _sample_procfs(seconds: float, step: float) -> pl.DataFrame:
    """Read real /proc counters and gauges every ``step`` seconds."""
    host = "localhost"
    rows = []
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        now = dt.datetime.now()
        row: dict[str, object] = {"timestamp": now}
        cpu = Path("/proc/stat").read_text().splitlines()[0].split()[1:9]
        for name, v in zip(
            ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"), cpu, strict=True
        ):
            row[f"CPU:{name}.-.{host}[jiffies]"] = float(v)
        mem = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        for name in ("MemTotal", "MemFree", "MemAvailable", "Cached", "Active", "Dirty"):
            if name in mem:
                row[f"Memory:{name}.{host}[kB]"] = float(mem[name].split()[0])
        vm = dict(line.split() for line in Path("/proc/vmstat").read_text().splitlines())
        for name in ("pgfault", "pgalloc_normal", "pgfree", "nr_free_pages", "nr_anon_pages"):
            if name in vm:
                row[f"Vmstat:{name}.{host}[count]"] = float(vm[name])
        load = Path("/proc/loadavg").read_text().split()
        row[f"System:procs_running.{host}[count]"] = float(load[3].split("/")[0])
        rows.append(row)
        time.sleep(step)
    df = pl.DataFrame(rows).with_columns(pl.col("timestamp").cast(pl.Datetime("ms")))
    return df.unique("timestamp", keep="first", maintain_order=True)


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux procfs")
def test_parity_on_real_procfs_sample(exact_adf):
    """Four seconds of this machine's own /proc, derived like a collector run."""
    frame = add_derived(_sample_procfs(4.0, 0.04))
    assert "CPU_diff:idle.-.localhost[jiffies]" in frame.columns
    assert "Derived:CPUUtilization.-.localhost[%]" in frame.columns
    cfg = WindowConfig(window_s=1.0, stride_s=0.5, interval_s=0.04)
    counts = assert_parity(frame, cfg, exact_adf)
    assert counts["cells"] > 0


def test_parity_on_a_high_level_low_spread_metric(exact_adf):
    """MemAvailable-like: ~1.2e7 kB moving by a few hundred per sample. Higher moments of
    such windows lose digits unless the kernel works on shifted values (a live /proc
    sample once gave kurtosis off by 2.3e-9 relative)."""
    rng = np.random.default_rng(1)
    n = 2000
    x = 1.2e7 + np.cumsum(rng.integers(-200, 200, n)).astype(float)
    t0 = dt.datetime(2025, 1, 1)
    ts = pl.datetime_range(t0, t0 + dt.timedelta(milliseconds=40 * (n - 1)), "40ms", eager=True)
    frame = pl.DataFrame({"timestamp": ts.cast(pl.Datetime("ms")), "Memory:MemAvailable.h[kB]": x})
    cfg = WindowConfig(window_s=1.0, stride_s=0.5, interval_s=0.04)
    counts = assert_parity(frame, cfg, exact_adf)
    assert counts["cells"] > 150 * 8
    # the numpy backend keeps the same digits
    a, b = window_features(frame, cfg, backend="numpy"), window_features(frame, cfg, backend="numba")
    feats = a.pairs["feature"].to_numpy()
    for f in ("var", "skew", "kurtosis"):
        j = int(np.flatnonzero(feats == f)[0])
        np.testing.assert_allclose(a.X[:, j], b.X[:, j], rtol=1e-9, atol=0)
