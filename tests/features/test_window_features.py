"""Window features on inputs whose answers are known; NaN, constant and static columns;
the compiled and vectorised backends agree; the ADF against exact rational arithmetic."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import polars as pl
import pytest

from reveal_lab.config import WindowConfig
from reveal_lab.features import COUNTER_FEATURES, DYNAMIC_FEATURES, window_features
from reveal_lab.features._adf import adf_teststat

T0 = dt.datetime(2025, 5, 11, 12, 0, 0)
CFG = WindowConfig(window_s=3.0, stride_s=1.0, interval_s=0.1)


def make_frame(columns: dict[str, np.ndarray], step_ms: int = 100) -> pl.DataFrame:
    n = len(next(iter(columns.values())))
    ts = pl.Series("timestamp", [T0 + dt.timedelta(milliseconds=step_ms * i) for i in range(n)]).cast(
        pl.Datetime("ms")
    )
    return pl.DataFrame({"timestamp": ts, **{k: np.asarray(v, dtype=float) for k, v in columns.items()}})


RAMP = "CPU:Busy%.-.h1[%]"
CONST = "GPU: utilization.gpu.0.h1[%]"
SKEWED = "Memory:Dirty.h1[kB]"
HOLES = "NetworkInterStat_diff:rx_bytes.ib0.h1[Bytes]"
EMPTY = "GPU: power.draw.0.h1[W]"
ERRORS = "NetworkTCPRetrans_diff:TcpRetransSegs.h1[count]"
STATIC = "Memory:MemTotal.h1[kB]"


@pytest.fixture(scope="module")
def wf():
    n = 60
    rng = np.random.default_rng(11)
    skewed = np.tile(np.r_[np.zeros(9), 10.0], 6)  # per window: 27 zeros and 3 tens
    holes = rng.normal(100.0, 5.0, n)
    holes[[3, 4, 17, 31, 32, 33]] = np.nan
    errors = np.zeros(n)
    errors[[5, 12, 40]] = [1.0, 3.0, 2.0]
    frame = make_frame(
        {
            RAMP: 2.0 + 0.5 * np.arange(n),
            CONST: np.full(n, 7.0),
            SKEWED: skewed,
            HOLES: holes,
            EMPTY: np.full(n, np.nan),
            ERRORS: errors,
            STATIC: np.full(n, 1.6e7),
        }
    )
    return frame, window_features(frame, CFG)


def test_shape_pairs_and_static_exclusion(wf):
    frame, f = wf
    assert f.X.dtype == np.float64 and f.X.shape == (f.windows.height, f.pairs.height)
    assert f.windows.height == 4  # 6 s of data, 3 s windows every 1 s
    assert STATIC not in set(f.pairs["metric"])
    assert f.excluded.filter(pl.col("metric") == STATIC)["reason"].item().startswith("static")
    errs = f.pairs.filter(pl.col("metric") == ERRORS)
    assert tuple(errs["feature"]) == COUNTER_FEATURES and errs["kind"].unique().to_list() == ["counter"]
    assert tuple(f.pairs.filter(pl.col("metric") == RAMP)["feature"]) == DYNAMIC_FEATURES
    ramp = f.pairs.filter(pl.col("metric") == RAMP).row(0, named=True)
    assert (ramp["subsystem"], ramp["kind"], ramp["host"], ramp["key"]) == (
        "cpu",
        "dynamic",
        "h1",
        "CPU:Busy%.-",
    )
    assert len(f.pair_names) == f.n_pairs and f.pair_names[0] == f"{f.pairs['metric'][0]}|mean"


def test_linear_ramp(wf):
    _, f = wf
    assert np.allclose(f.column(RAMP, "slope"), 0.5, rtol=1e-12)
    start = 2.0 + 0.5 * 10 * np.arange(4)
    assert np.allclose(f.column(RAMP, "mean"), start + 0.5 * 14.5, rtol=1e-12)
    assert np.allclose(f.column(RAMP, "min"), start) and np.allclose(f.column(RAMP, "max"), start + 14.5)
    assert np.allclose(f.column(RAMP, "var"), 0.25 * (30**2 - 1) / 12, rtol=1e-12)
    assert np.allclose(f.column(RAMP, "skew"), 0.0, atol=1e-12)
    assert np.allclose(
        f.column(RAMP, "kurtosis"), -1.2, atol=1e-12
    )  # excess kurtosis of a uniform grid, n=30
    # acf1 of a ramp under tsfresh's definition: sum((i-m)(i+1-m)) / ((n-1) var)
    i = np.arange(30.0)
    d = i - i.mean()
    assert np.allclose(f.column(RAMP, "acf1"), (d[:-1] * d[1:]).sum() / (29 * d.var()), rtol=1e-12)
    # a deterministic ramp has constant differences: the ADF regression is exact, t undefined
    assert np.isnan(f.column(RAMP, "adf")).all()


def test_constant_and_empty_columns_give_nan_not_inf(wf):
    _, f = wf
    assert np.all(f.column(CONST, "mean") == 7.0) and np.all(f.column(CONST, "var") == 0.0)
    assert np.all(f.column(CONST, "slope") == 0.0)
    for feat in ("skew", "kurtosis", "acf1", "adf"):
        assert np.isnan(f.column(CONST, feat)).all(), feat
    empty = f.X[:, (f.pairs["metric"] == EMPTY).to_numpy()]
    assert np.isnan(empty).all()
    assert not np.isinf(f.X).any()


def test_known_skew_and_counter_sums(wf):
    _, f = wf
    x = np.r_[np.zeros(27), np.full(3, 10.0)]
    n, m = 30, x.mean()
    g1 = ((x - m) ** 3).mean() / ((x - m) ** 2).mean() ** 1.5
    adjusted = g1 * math.sqrt(n * (n - 1)) / (n - 2)
    assert np.allclose(f.column(SKEWED, "skew"), adjusted, rtol=1e-12)
    assert adjusted > 2.5
    assert f.column(ERRORS, "sum").tolist() == [4.0, 3.0, 2.0, 2.0]
    assert f.column(ERRORS, "max").tolist() == [3.0, 3.0, 2.0, 2.0]


def test_nan_samples_are_skipped(wf):
    frame, f = wf
    x = frame[HOLES].to_numpy()
    for k in range(f.windows.height):
        w = x[10 * k : 10 * k + 30]
        v = w[~np.isnan(w)]
        assert f.column(HOLES, "mean")[k] == pytest.approx(v.mean(), rel=1e-13)
        assert f.column(HOLES, "std")[k] == pytest.approx(v.std(), rel=1e-12)


def test_too_few_valid_samples_gives_nan():
    x = np.full(40, np.nan)
    x[[0, 1, 35]] = [1.0, 2.0, 3.0]  # windows hold 2, 0 and 1 valid samples
    f = window_features(make_frame({RAMP: x}), CFG)
    assert np.isnan(f.X).all()


def test_numba_and_numpy_backends_agree():
    rng = np.random.default_rng(5)
    n = 200
    cols = {
        "CPU:Busy%.-.h1[%]": np.clip(50 + np.cumsum(rng.normal(0, 2, n)), 0, 100),
        "NetworkInterStat_diff:rx_bytes.ib0.h1[Bytes]": rng.gamma(2.0, 1e6, n),
        "GPU: utilization.gpu.0.h1[%]": np.round(rng.random(n) * 3) * 10,
        "Turbostat:Bzy_MHz.3.h1[MHz]": np.where(rng.random(n) < 0.1, 3400.0, 2100.0),
        "NetworkTCPRetrans_diff:TcpRetransSegs.h1[count]": rng.poisson(0.2, n).astype(float),
    }
    cols["CPU:Busy%.-.h1[%]"][rng.random(n) < 0.1] = np.nan
    frame = make_frame(cols)
    a = window_features(frame, CFG, backend="numba")
    b = window_features(frame, CFG, backend="numpy")
    assert a.pairs.equals(b.pairs) and a.windows.equals(b.windows)
    assert np.array_equal(np.isnan(a.X), np.isnan(b.X))
    ok = ~np.isnan(a.X)
    # moments are summed in a different order: agree to rounding, scaled by the data
    scale = np.nanmax(np.abs(frame.drop("timestamp").to_numpy()), axis=0)
    ch = {m: i for i, m in enumerate(cols)}
    s = np.array([scale[ch[m]] for m in a.pairs["metric"]])
    feat = a.pairs["feature"].to_numpy()
    floor = np.where(np.isin(feat, ["skew", "kurtosis", "acf1", "adf"]), 1e-9, 1e-12 * s)
    floor = np.where(feat == "var", 1e-12 * s**2, floor)
    diff = np.abs(a.X - b.X)
    assert np.all(diff[ok] <= (1e-9 * np.abs(a.X) + floor[None, :].repeat(a.n_windows, 0))[ok])


def test_backend_and_feature_validation():
    frame = make_frame({RAMP: np.arange(40.0)})
    with pytest.raises(ValueError, match="unknown backend"):
        window_features(frame, CFG, backend="cuda")
    with pytest.raises(ValueError, match="unknown features"):
        window_features(frame, CFG, features=["entropy"])
    f = window_features(frame, CFG, features=["mean", "sum"])
    assert f.pairs["feature"].to_list() == ["mean"]  # "sum" is for counters only


def test_imputed_fills_nan_per_column(wf):
    _, f = wf
    X = f.imputed()
    assert np.isfinite(X).all()
    assert np.isnan(f.X).any()  # the original is untouched


# --- ADF: exact rational arithmetic as the referee (helpers in conftest.py) ---------


def _adf(x: np.ndarray) -> float:
    n = len(x)
    return adf_teststat(
        np.ascontiguousarray(x, dtype=float),
        n,
        np.empty((n, 16)),
        np.empty(n),
        np.empty((17, n)),
        np.empty(16),
        np.empty(16, dtype=np.int64),
    )


@pytest.mark.parametrize("n", [6, 12, 30])
def test_adf_matches_exact_arithmetic_even_where_statsmodels_loses_digits(n, exact_adf):
    rng = np.random.default_rng(n)
    for x in (rng.standard_normal(n), np.cumsum(rng.standard_normal(n)), 1e9 + 1e3 * rng.standard_normal(n)):
        ref = exact_adf(x)
        assert _adf(x) == pytest.approx(ref, rel=1e-9), x


def test_adf_undefined_cases():
    assert np.isnan(_adf(np.full(30, 3.0)))  # constant: statsmodels refuses
    assert np.isnan(_adf(np.array([1.0, 2.0, 4.0])))  # too short for any lag
    assert np.isnan(_adf(np.arange(30.0)))  # exact fit
    spike = np.zeros(30)
    spike[9] = 0.5
    assert np.isnan(_adf(spike))  # y is a multiple of the level: exact fit


def test_lazyframe_and_precomputed_windows(wf):
    frame, f = wf
    lazy = window_features(frame.lazy(), CFG)
    again = window_features(frame, CFG, windows=f.windows.tail(2))
    assert np.array_equal(lazy.X, f.X, equal_nan=True)
    assert np.array_equal(again.X, f.X[-2:], equal_nan=True)
