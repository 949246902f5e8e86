"""Window features: the matrix every detector scores (paper §4.2)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

import reveal_lab.derive  # noqa: F401  (registers the "Derived:" source with the registry)
from reveal_lab.config import WindowConfig
from reveal_lab.features._kernels import FEATURE_CODES, N_FEATURES
from reveal_lab.features._windows import make_windows
from reveal_lab.telemetry import (
    DEFAULT_REGISTRY,
    TIMESTAMP,
    UNSCORED_KINDS,
    Frame,
    TelemetryError,
    metric_columns,
    metric_key,
)
from reveal_lab.telemetry import catalogue as make_catalogue

__all__ = [
    "pair_keys",
    "DYNAMIC_FEATURES",
    "COUNTER_FEATURES",
    "FEATURES",
    "BACKENDS",
    "MIN_VALID",
    "WindowFeatures",
    "window_features",
    "feature_plan",
    "WindowPlan",
    "window_plan",
]

#: statistical and temporal features of dynamic metrics (paper §4.2)
DYNAMIC_FEATURES: tuple[str, ...] = (
    "mean",
    "var",
    "std",
    "min",
    "max",
    "skew",
    "kurtosis",
    "slope",
    "acf1",
    "adf",
)
#: sparse event/error counters: how many events in the window, and the largest burst
COUNTER_FEATURES: tuple[str, ...] = ("sum", "max")
#: why each of the telemetry's ``UNSCORED_KINDS`` gets no features (recorded in ``excluded``)
_NOT_SCORED = {
    "static": "static metric: kept for cross-host comparison, not single-host detection",
    "instrument": "the collector's own telemetry: data quality, not the host's state",
    "smoothed": "a kernel average over minutes: it cannot place a change in a window",
}
FEATURES: tuple[str, ...] = tuple(FEATURE_CODES)
BACKENDS: tuple[str, ...] = ("numba", "numpy", "tsfresh")
#: a window-channel with fewer valid (non-NaN) samples than this gets NaN features
MIN_VALID = 3

PAIR_SCHEMA = {
    "metric": pl.String,
    "feature": pl.String,
    "subsystem": pl.String,
    "kind": pl.String,
    "host": pl.String,
    "key": pl.String,
}


def pair_keys(pairs: pl.DataFrame) -> list[str]:
    """Host-free identity of each feature column of a :class:`WindowFeatures`' ``pairs``:
    ``<metric key>|<feature>``, so that columns of different hosts and runs line up."""
    if "key" in pairs.columns:
        return [f"{k}|{f}" for k, f in pairs.select("key", "feature").iter_rows()]
    return [f"{metric_key(m)}|{feature}" for m, feature in pairs.select("metric", "feature").iter_rows()]


@dataclass
class WindowFeatures:
    """Features of every window: ``X[i, j]`` is pair ``pairs[j]`` in window ``windows[i]``.

    Attributes
    ----------
    windows : the kept windows (:func:`make_windows` columns).
    X : ``float64[n_windows, n_pairs]``; NaN where a feature is undefined (see
        :mod:`reveal_lab.features`): too few valid samples, constant window for
        skew/kurtosis/acf1/adf.
    pairs : one row per column of ``X``: ``metric, feature, subsystem, kind, host, key``
        (``key`` is the host-free metric identity, to align hosts and runs).
    excluded : metrics left out and why (``metric, kind, reason``).
    """

    windows: pl.DataFrame
    X: np.ndarray
    pairs: pl.DataFrame
    excluded: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(
            schema={"metric": pl.String, "kind": pl.String, "reason": pl.String}
        )
    )
    backend: str = "numba"
    config: WindowConfig = field(default_factory=WindowConfig)

    @property
    def n_windows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_pairs(self) -> int:
        return int(self.X.shape[1])

    @property
    def pair_names(self) -> list[str]:
        """``"<metric>|<feature>"`` for every column of ``X``."""
        return [f"{m}|{f}" for m, f in self.pairs.select("metric", "feature").iter_rows()]

    def index(self, metric: str, feature: str) -> int:
        """Column of ``X`` holding ``feature`` of ``metric``."""
        hits = np.flatnonzero(
            (self.pairs["metric"] == metric).to_numpy() & (self.pairs["feature"] == feature).to_numpy()
        )
        if hits.size == 0:
            raise KeyError(f"no pair ({metric!r}, {feature!r})")
        return int(hits[0])

    def column(self, metric: str, feature: str) -> np.ndarray:
        return self.X[:, self.index(metric, feature)]

    def to_frame(self) -> pl.DataFrame:
        """Windows with one column per pair (named as :attr:`pair_names`)."""
        feats = pl.DataFrame(self.X, schema=self.pair_names, orient="row") if self.n_pairs else pl.DataFrame()
        return pl.concat([self.windows, feats], how="horizontal")

    def imputed(self, fill: str = "median") -> np.ndarray:
        """``X`` with NaN replaced per column (``"median"`` of the column's finite values,
        or ``"zero"``); all-NaN columns become 0. ``X`` itself is left untouched."""
        X = self.X.copy()
        bad = ~np.isfinite(X)
        if not bad.any():
            return X
        if fill == "zero":
            X[bad] = 0.0
            return X
        if fill != "median":
            raise ValueError(f"fill must be 'median' or 'zero', got {fill!r}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: handled below
            med = np.nanmedian(np.where(bad, np.nan, X), axis=0) if X.shape[0] else np.zeros(X.shape[1])
        med = np.where(np.isfinite(med), med, 0.0)
        rows, cols = np.nonzero(bad)
        X[rows, cols] = med[cols]
        return X

    def select(self, mask: np.ndarray | pl.Series | Sequence[bool]) -> WindowFeatures:
        """A copy keeping the pairs where ``mask`` is true."""
        m = np.asarray(mask, dtype=bool)
        return WindowFeatures(
            self.windows,
            self.X[:, m],
            self.pairs.filter(pl.Series(m)),
            self.excluded,
            self.backend,
            self.config,
        )


def feature_plan(
    cat: pl.DataFrame, features: Sequence[str] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Which (metric, feature) pairs to compute, from a catalogue.

    Returns ``(pairs, excluded)``: dynamic metrics get :data:`DYNAMIC_FEATURES`,
    counters :data:`COUNTER_FEATURES` (each intersected with ``features`` when
    given); static metrics are excluded, with the reason.
    """
    if features is not None:
        unknown = sorted(set(features) - set(FEATURES))
        if unknown:
            raise ValueError(f"unknown features {unknown}; expected some of {FEATURES}")
    want = set(features) if features is not None else None
    rows = []
    excluded = []
    for r in cat.iter_rows(named=True):
        kind = r["kind"]
        if kind in UNSCORED_KINDS:
            excluded.append({"metric": r["column"], "kind": kind, "reason": _NOT_SCORED[kind]})
            continue
        names = COUNTER_FEATURES if kind == "counter" else DYNAMIC_FEATURES
        if want is not None:
            names = tuple(f for f in names if f in want)
        if not names:
            excluded.append(
                {"metric": r["column"], "kind": kind, "reason": "none of the requested features applies"}
            )
            continue
        key = r["column"]
        if r["parsed"]:
            src = r["source"]
            inst = f".{r['instance']}" if r["instance"] is not None else ""
            key = f"{src}:{r['field']}{inst}"
        for f in names:
            rows.append(
                {
                    "metric": r["column"],
                    "feature": f,
                    "subsystem": r["subsystem"],
                    "kind": kind,
                    "host": r["host"],
                    "key": key,
                }
            )
    pairs = pl.DataFrame(rows, schema=PAIR_SCHEMA)
    excl = pl.DataFrame(excluded, schema={"metric": pl.String, "kind": pl.String, "reason": pl.String})
    return pairs, excl


def _pair_index(pairs: pl.DataFrame, metrics: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each pair's channel (position in ``metrics``) and feature code, and the kernels'
    ``want[channel, feature]`` mask."""
    ch_of = {m: i for i, m in enumerate(metrics)}
    ch_idx = np.array([ch_of[m] for m in pairs["metric"]], dtype=np.int64)
    f_idx = np.array([FEATURE_CODES[f] for f in pairs["feature"]], dtype=np.int64)
    want = np.zeros((len(metrics), N_FEATURES), dtype=np.bool_)
    want[ch_idx, f_idx] = True
    return ch_idx, f_idx, want


@dataclass(frozen=True, eq=False)
class WindowPlan:
    """The (metric, feature) pairs :func:`window_features` computes for a column set, made
    once, and the features of one window from its rows (the live engine's per-window step).

    Build it with :func:`window_plan`. :meth:`features` gives, for ``values[n_samples,
    n_metrics]`` (the window's rows, columns in :attr:`metrics` order), the row of
    :attr:`pairs`' features that :func:`window_features` (numba backend) gives that window.

    Examples
    --------
    >>> plan = window_plan(["timestamp", "CPU:Busy%.0.h1[%]"])
    >>> list(plan.metrics), plan.pairs.height
    (['CPU:Busy%.0.h1[%]'], 10)
    >>> x = plan.features(np.array([[1.0], [2.0], [4.0]]))
    >>> float(dict(zip(plan.pairs["feature"], x.round(3)))["mean"])
    2.333
    """

    pairs: pl.DataFrame
    excluded: pl.DataFrame
    metrics: tuple[str, ...]
    ch_idx: np.ndarray
    f_idx: np.ndarray
    want: np.ndarray
    min_valid: int = MIN_VALID

    def features(self, values: np.ndarray) -> np.ndarray:
        """Features of one window from its rows only (``float64[n_pairs]``)."""
        from reveal_lab.features._kernels import window_feature_kernel

        if not self.metrics:
            return np.empty(0)
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 2 or values.shape[1] != len(self.metrics):
            raise ValueError(f"expected values[n_samples, {len(self.metrics)}], got {values.shape}")
        out = np.full((1, len(self.metrics), N_FEATURES), np.nan)
        window_feature_kernel(
            np.asfortranarray(values),
            np.zeros(1, dtype=np.int64),
            np.full(1, values.shape[0], dtype=np.int64),
            self.want,
            int(self.min_valid),
            out,
        )
        return out[0, self.ch_idx, self.f_idx]


def window_plan(
    columns: Sequence[str], features: Sequence[str] | None = None, *, catalogue: pl.DataFrame | None = None
) -> WindowPlan:
    """The :class:`WindowPlan` of a frame's ``columns`` (the timestamp is ignored), from
    ``catalogue`` or the default registry, as :func:`window_features` plans."""
    cols = tuple(c for c in columns if c != TIMESTAMP)
    if catalogue is None:
        wanted = tuple(features) if features is not None else None
        pairs, excluded = _default_plan(cols, wanted, _registry_state())
    else:
        pairs, excluded = feature_plan(catalogue.filter(pl.col("column").is_in(list(cols))), features)
    metrics = tuple(pairs.get_column("metric").unique(maintain_order=True).to_list())
    ch_idx, f_idx, want = _pair_index(pairs, metrics)
    return WindowPlan(pairs, excluded, metrics, ch_idx, f_idx, want)


def _registry_state() -> tuple[int, int]:
    """Changes when a rule is registered (the cached plans below then miss)."""
    rules = DEFAULT_REGISTRY.rules
    return len(rules), id(rules[0]) if rules else 0


@functools.lru_cache(maxsize=32)
def _default_plan(
    cols: tuple[str, ...], features: tuple[str, ...] | None, registry_state: tuple[int, int]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The feature plan of a column set from the default registry; cached because
    classifying ~700 names costs more than the features of a few hundred windows
    (``registry_state`` keys the cache to the registry's rules)."""
    del registry_state
    return feature_plan(make_catalogue(cols), features)


def window_features(
    frame: Frame,
    config: WindowConfig | None = None,
    *,
    backend: str = "numba",
    catalogue: pl.DataFrame | None = None,
    features: Sequence[str] | None = None,
    windows: pl.DataFrame | None = None,
    min_valid: int = MIN_VALID,
    parallel: bool = False,
) -> WindowFeatures:
    """Features of every time window of ``frame``.

    Parameters
    ----------
    frame : canonical telemetry frame (``timestamp`` + Float64 metric columns).
    config : windowing (default 3 s windows, 1 s stride, 100 ms sampling).
    backend : ``"numba"`` (compiled, default), ``"numpy"`` (vectorised) or
        ``"tsfresh"`` (tsfresh's own feature calculators: the reference, slow).
    catalogue : metric catalogue (:func:`reveal_lab.telemetry.catalogue`) deciding
        each metric's kind; computed from the column names when omitted.
    features : restrict to these feature names.
    windows : precomputed windows (:func:`make_windows`) to reuse.
    min_valid : fewest valid samples for a window-channel to get features.
    parallel : ``backend="numba"`` only: spread channels over numba's threads
        (``numba.set_num_threads``); results are identical.

    Examples
    --------
    >>> import datetime as dt
    >>> t0 = dt.datetime(2025, 1, 1)
    >>> ts = [t0 + dt.timedelta(milliseconds=100 * i) for i in range(40)]
    >>> df = pl.DataFrame({"timestamp": ts, "CPU:user.h[%]": [0.5 * i for i in range(40)]},
    ...                   schema_overrides={"timestamp": pl.Datetime("ms")})
    >>> wf = window_features(df, WindowConfig(3, 1, 0.1), features=["mean", "slope"])
    >>> wf.X.shape, wf.pair_names
    ((2, 2), ['CPU:user.h[%]|mean', 'CPU:user.h[%]|slope'])
    >>> [round(float(v), 6) for v in wf.X[:, 1]]
    [0.5, 0.5]
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    config = config or WindowConfig()
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    cols = metric_columns(frame)
    if catalogue is None:
        pairs, excluded = _default_plan(
            tuple(cols), None if features is None else tuple(features), _registry_state()
        )
        pairs, excluded = pairs.clone(), excluded.clone()  # callers may mutate theirs
    else:
        missing = sorted(set(catalogue["column"]) - set(cols))
        if missing:
            raise TelemetryError(
                f"catalogue names {len(missing)} columns the frame lacks (first: {missing[0]!r})",
                column=missing[0],
            )
        pairs, excluded = feature_plan(catalogue.filter(pl.col("column").is_in(cols)), features)
    if windows is None:
        windows = make_windows(frame, config)
    metrics = pairs.get_column("metric").unique(maintain_order=True).to_list()
    schema = frame.schema
    for c in metrics:
        if schema[c] != pl.Float64:
            raise TelemetryError(f"metric columns must be Float64, found {schema[c]}", column=c)
    rs = windows.get_column("row_start").to_numpy().astype(np.int64)
    re_ = windows.get_column("row_end").to_numpy().astype(np.int64)
    if not metrics:
        return WindowFeatures(windows, np.empty((windows.height, 0)), pairs, excluded, backend, config)
    values = np.asfortranarray(frame.select(metrics).to_numpy().astype(np.float64, copy=False))
    ch_idx, f_idx, want = _pair_index(pairs, metrics)
    if backend == "numba":
        from reveal_lab.features._kernels import window_feature_kernel, window_feature_kernel_parallel

        out = np.full((len(rs), len(metrics), N_FEATURES), np.nan)
        kernel = window_feature_kernel_parallel if parallel else window_feature_kernel
        kernel(values, rs, re_, want, int(min_valid), out)
    elif backend == "numpy":
        from reveal_lab.features._numpy import numpy_features

        out = numpy_features(values, rs, re_, want, int(min_valid))
    else:
        from reveal_lab.features._tsfresh import tsfresh_features

        out = tsfresh_features(values, rs, re_, want, int(min_valid))
    X = np.ascontiguousarray(out[:, ch_idx, f_idx])
    return WindowFeatures(windows, X, pairs, excluded, backend, config)
