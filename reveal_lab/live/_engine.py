"""Incremental windowing, features and scoring of a telemetry stream.

:class:`LiveDetector` is fed canonical rows (``timestamp`` + Float64 metric columns,
the dataset view) in whatever chunks they arrive. It keeps only the rows the next
windows need, and each time a window completes (its last sample has arrived) it
computes that one window's features (:func:`reveal_lab.features.window_features` on
the window's rows only), scores them with detectors fitted on a warm-up period or a
baseline run, and returns a :class:`Verdict` with the attribution of an anomaly.

Windows are the offline ones: anchored at the first sample, ``window_s`` long, every
``stride_s`` (:class:`reveal_lab.config.WindowConfig`).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl

from reveal_lab.config import DetectConfig, WindowConfig
from reveal_lab.telemetry import TIMESTAMP, Run, TelemetryError, parse_metric_name

__all__ = ["Verdict", "LiveDetector", "make_detectors", "pair_keys"]


@dataclass
class Verdict:
    """The verdict on one completed window.

    ``evidence`` holds the top metric-feature pairs of an anomalous window (empty
    otherwise), each with ``subsystem, metric, feature, contribution, claim``.
    """

    window_id: int
    start: dt.datetime
    end: dt.datetime
    host: str | None
    phase: str  # "warmup" (fitting) or "scored"
    anomalous: bool = False
    methods: list[str] = field(default_factory=list)
    agreement: int = 0
    score: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    n_samples: int = 0
    compute_ms: float = 0.0
    #: wall-clock time (epoch seconds) the verdict was made
    decided_at: float = 0.0

    @property
    def subsystem(self) -> str | None:
        return self.evidence[0]["subsystem"] if self.evidence else None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["start"] = self.start.isoformat(timespec="milliseconds")
        d["end"] = self.end.isoformat(timespec="milliseconds")
        d["subsystem"] = self.subsystem
        d["metric"] = self.evidence[0]["metric"] if self.evidence else None
        d["feature"] = self.evidence[0]["feature"] if self.evidence else None
        d["claim"] = self.evidence[0]["claim"] if self.evidence else None
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=float)

    def line(self) -> str:
        """One human line (what ``reveal-lab watch`` prints)."""
        t = self.end.strftime("%H:%M:%S.%f")[:-3]
        if self.phase == "warmup":
            return f"{t} window {self.window_id}: warm-up ({self.n_samples} samples, {self.compute_ms:.1f} ms)"
        if not self.anomalous:
            return (f"{t} window {self.window_id}: ok (agreement {self.agreement}, score {self.score:.2f}, "
                    f"{self.compute_ms:.1f} ms)")
        ev = self.evidence[0] if self.evidence else {}
        return (f"{t} window {self.window_id}: ANOMALY [{','.join(self.methods)}] "
                f"{ev.get('subsystem')} {ev.get('metric')} {ev.get('feature')}: {ev.get('claim')} "
                f"(score {self.score:.2f}, {self.compute_ms:.1f} ms)")


def make_detectors(cfg: DetectConfig) -> list[Any]:
    """The three detectors of the paper with ``cfg``'s settings (fresh, unfitted)."""
    from reveal_lab.detectors import default_detectors

    return default_detectors(cfg)


def pair_keys(pairs: pl.DataFrame) -> list[str]:
    """Host-free identity of each feature column: ``<metric key>|<feature>`` (align across hosts)."""
    if "key" in pairs.columns:
        return [f"{k}|{f}" for k, f in pairs.select("key", "feature").iter_rows()]
    keys = []
    for metric, feature in pairs.select("metric", "feature").iter_rows():
        m = parse_metric_name(metric)
        keys.append(f"{m.key() if m is not None else metric}|{feature}")
    return keys


def _claim(subsystem: str, metric: str, feature: str, z: float | None) -> str:
    direction = "" if z is None or not np.isfinite(z) else ("above" if z > 0 else "below")
    if direction:
        return f"{subsystem}: {feature} of {metric} {abs(z):.1f} sd {direction} its baseline"
    return f"{subsystem}: {feature} of {metric} departs from its baseline"


class LiveDetector:
    """Windows, features and verdicts, one window at a time.

    Parameters
    ----------
    window : window length / stride / sampling interval.
    detect : detector settings.
    warmup_s : without a baseline, the first ``warmup_s`` seconds of the stream
        are the reference the detectors are fitted on (those windows get
        ``phase="warmup"`` verdicts).
    baseline : a reference :class:`~reveal_lab.telemetry.Run` to fit on instead
        (metrics are matched by their host-free key, so another host's run works).
    min_agreement : detectors that must flag a window for it to be an anomaly.
    top_k : evidence pairs reported per anomalous window.
    """

    def __init__(self, window: WindowConfig | None = None, detect: DetectConfig | None = None, *,
                 warmup_s: float = 30.0, baseline: Run | None = None, min_agreement: int = 2,
                 top_k: int | None = None, backend: str = "numba") -> None:
        self.window = window or WindowConfig()
        self.detect = detect or DetectConfig()
        self.warmup_s = float(warmup_s)
        self.min_agreement = int(min_agreement)
        self.top_k = int(top_k or self.detect.top_k)
        self.backend = backend
        self._buf: pl.DataFrame | None = None
        self._t0: int | None = None  # epoch ms of the first sample
        self._last_ts: int | None = None
        self._next_id = 0
        self._warm_X: list[np.ndarray] = []
        self._warm_keys: list[str] | None = None
        self.detectors: list[Any] = []
        self.keys: list[str] | None = None  # feature columns the detectors were fitted on
        self.pairs: pl.DataFrame | None = None
        self.host: str | None = None
        self.fitted_on: str | None = None
        self._plan_cols: list[str] | None = None
        self._plan_state: tuple[Any, ...] = ()
        self._pairs_keys: list[str] = []
        self._feat_index: np.ndarray | None = None
        self._feat_keys: list[str] | None = None
        self._live_pairs: pl.DataFrame | None = None
        if baseline is not None:
            self.fit_baseline(baseline)

    # -- fitting ----------------------------------------------------------------------------
    @property
    def fitted(self) -> bool:
        return bool(self.detectors)

    def _fit(self, X: np.ndarray, keys: list[str], pairs: pl.DataFrame, what: str) -> None:
        if X.shape[0] < 3:
            raise TelemetryError(f"{what}: {X.shape[0]} window(s) to fit the detectors on; need at least 3 "
                                 f"(a longer warm-up or baseline: >= {self.window.window_s + 2 * self.window.stride_s:g} s)")
        from reveal_lab.live._forest import FlatForest

        dets = make_detectors(self.detect)
        self._fast: dict[str, Any] = {}
        for d in dets:
            d.fit(X)
            model = getattr(d, "model_", None)
            if model is not None and type(model).__name__ == "IsolationForest":
                self._fast[d.name] = FlatForest(model)  # exact, ~100x faster on one window
        self.detectors, self.keys, self.pairs, self.fitted_on = dets, keys, pairs, what
        self._key_index = {k: i for i, k in enumerate(keys)}
        self._feat_index: np.ndarray | None = None
        self._feat_keys: list[str] | None = None

    def fit_baseline(self, run: Run) -> LiveDetector:
        """Fit the detectors on every window of a reference run."""
        from reveal_lab.features import window_features

        wf = window_features(run.frame, self.window, backend=self.backend)
        self._fit(np.asarray(wf.X, dtype=np.float64), pair_keys(wf.pairs), wf.pairs,
                  f"baseline run {run.meta.run_id}")
        return self

    # -- streaming --------------------------------------------------------------------------
    def _window_bounds(self, k: int) -> tuple[int, int]:
        assert self._t0 is not None
        start = self._t0 + round(k * self.window.stride_s * 1000)
        return start, start + round(self.window.window_s * 1000)

    def push(self, rows: pl.DataFrame) -> list[Verdict]:
        """Add new rows (any number, in time order); return the verdicts of the windows they complete."""
        if rows.height == 0:
            return []
        if TIMESTAMP not in rows.columns:
            raise TelemetryError(f"live rows have no {TIMESTAMP!r} column")
        ts = rows.get_column(TIMESTAMP).dt.epoch("ms")
        if self._last_ts is not None:
            keep = ts > self._last_ts  # a re-read overlap (journal rotation) is ignored
            if not keep.all():
                rows = rows.filter(keep)
                if rows.height == 0:
                    return []
                ts = rows.get_column(TIMESTAMP).dt.epoch("ms")
        if self._t0 is None:
            self._t0 = int(ts[0])
        self._last_ts = int(ts[-1])
        self._buf = rows if self._buf is None else pl.concat([self._buf, rows], how="diagonal_relaxed")
        out = []
        half = round(self.window.interval_s * 500)
        while True:
            start, end = self._window_bounds(self._next_id)
            # complete once the window's last sample (at end - interval) has arrived
            if self._last_ts < end - half - 1:
                break
            out.append(self._close_window(self._next_id, start, end))
            self._next_id += 1
        # drop rows no future window needs
        nxt, _ = self._window_bounds(self._next_id)
        cut = self._buf.get_column(TIMESTAMP).dt.epoch("ms").search_sorted(nxt)
        if cut:
            self._buf = self._buf.slice(int(cut))
        return out

    def _window_rows(self, start: int, end: int) -> pl.DataFrame:
        assert self._buf is not None
        ts = self._buf.get_column(TIMESTAMP).dt.epoch("ms")
        a = int(ts.search_sorted(start))
        b = int(ts.search_sorted(end))
        return self._buf.slice(a, b - a)

    def _plan(self, cols: list[str]) -> None:
        """Which (metric, feature) pairs to compute for this column set (once per column set).

        The same plan :func:`reveal_lab.features.window_features` makes; computing it
        once and then running only the compiled kernel on each new window's rows keeps
        the per-window cost to the window itself.
        """
        from reveal_lab.features._features import feature_plan
        from reveal_lab.features._kernels import FEATURE_CODES, N_FEATURES
        from reveal_lab.telemetry import catalogue

        metric_cols = [c for c in cols if c != TIMESTAMP]
        pairs, _excluded = feature_plan(catalogue(metric_cols))
        metrics = pairs.get_column("metric").unique(maintain_order=True).to_list()
        ch_of = {m: i for i, m in enumerate(metrics)}
        ch_idx = np.array([ch_of[m] for m in pairs["metric"]], dtype=np.int64)
        f_idx = np.array([FEATURE_CODES[f] for f in pairs["feature"]], dtype=np.int64)
        want = np.zeros((len(metrics), N_FEATURES), dtype=np.bool_)
        want[ch_idx, f_idx] = True
        self._plan_cols = cols
        self._plan_state = (pairs, metrics, ch_idx, f_idx, want, N_FEATURES)
        self._pairs_keys = pair_keys(pairs)

    def _features(self, rows: pl.DataFrame) -> tuple[np.ndarray, list[str], pl.DataFrame]:
        """Features of the one window ``rows`` (only these rows are read)."""
        from reveal_lab.features._features import MIN_VALID
        from reveal_lab.features._kernels import window_feature_kernel

        if rows.columns != self._plan_cols:
            self._plan(rows.columns)
        pairs, metrics, ch_idx, f_idx, want, nf = self._plan_state
        if not metrics:
            return np.empty(0), self._pairs_keys, pairs
        values = np.asfortranarray(rows.select(metrics).to_numpy().astype(np.float64, copy=False))
        out = np.full((1, len(metrics), nf), np.nan)
        window_feature_kernel(values, np.zeros(1, dtype=np.int64), np.full(1, rows.height, dtype=np.int64),
                              want, int(MIN_VALID), out)
        return out[0, ch_idx, f_idx], self._pairs_keys, pairs

    def _align(self, x: np.ndarray, keys: list[str]) -> np.ndarray:
        if keys != self._feat_keys:  # the column set changed (or first window): rebuild the index
            assert self.keys is not None
            idx = np.full(len(self.keys), -1, dtype=np.int64)
            pos = {k: i for i, k in enumerate(keys)}
            for j, k in enumerate(self.keys):
                idx[j] = pos.get(k, -1)
            self._feat_index, self._feat_keys = idx, keys
        idx = self._feat_index
        assert idx is not None
        out = np.where(idx >= 0, x[np.maximum(idx, 0)], np.nan)
        return out

    def _close_window(self, k: int, start: int, end: int) -> Verdict:
        t_start = time.perf_counter()
        rows = self._window_rows(start, end)
        expected = self.window.window_s / self.window.interval_s
        v = Verdict(k, _dt(start), _dt(end), self.host, "scored", n_samples=rows.height)
        if self.host is None and rows.width > 1:
            m = parse_metric_name(rows.columns[1])
            self.host = m.host if m is not None else None
            v.host = self.host
        if rows.height < max(2, self.window.min_fill * expected):
            v.phase = "gap"
            v.compute_ms = (time.perf_counter() - t_start) * 1e3
            v.decided_at = time.time()
            return v
        x, keys, pairs = self._features(rows)
        if not self.fitted:
            v.phase = "warmup"
            if self._warm_keys is None:
                self._warm_keys, self._warm_pairs = keys, pairs
            if keys == self._warm_keys:
                self._warm_X.append(x)
            if (end - (self._t0 or 0)) / 1000.0 >= self.warmup_s:
                self._fit(np.vstack(self._warm_X), self._warm_keys, self._warm_pairs,
                          f"warm-up ({len(self._warm_X)} windows, {self.warmup_s:g} s)")
                self._warm_X = []
            v.compute_ms = (time.perf_counter() - t_start) * 1e3
            v.decided_at = time.time()
            return v
        xa = self._align(x, keys)[None, :]
        flagged, norm = [], {}
        for d in self.detectors:
            fast = self._fast.get(d.name)
            if fast is not None:  # the detector's own _score is -model_.score_samples(imputed X)
                s = float(-fast.score_samples(d._transform_input(xa))[0])
            else:
                s = float(d.decision_function(xa)[0])
            thr = float(d.threshold_)
            norm[d.name] = s / thr if thr > 0 else s - thr + 1.0
            if s > thr:
                flagged.append(d)
        v.methods = [d.name for d in flagged]
        v.agreement = len(flagged)
        v.scores = {n: round(s, 4) for n, s in norm.items()}
        v.score = float(np.mean(list(norm.values())))
        v.anomalous = v.agreement >= self.min_agreement
        if v.anomalous:
            v.evidence = self._attribute(xa, flagged, pairs)
        v.compute_ms = (time.perf_counter() - t_start) * 1e3
        v.decided_at = time.time()
        return v

    def _attribute(self, xa: np.ndarray, flagged: list[Any], live_pairs: pl.DataFrame) -> list[dict[str, Any]]:
        """Top pairs by their summed share of each flagging detector's score (named as in the stream).

        The Isolation Forest's path explanation costs ~0.2 ms a tree; it is used only
        when the forest is the sole detector that flagged the window (otherwise the
        Z-score and PCA-Mahalanobis contributions, exact and ~1 ms, decide the pairs).
        """
        assert self.pairs is not None and self._feat_index is not None
        total = np.zeros(xa.shape[1])
        cheap = [d for d in flagged if d.name not in self._fast]
        for d in cheap or flagged:
            c = np.asarray(d.explain(xa)[0], dtype=np.float64)
            c = np.where(np.isfinite(c), np.maximum(c, 0.0), 0.0)
            s = c.sum()
            if s > 0:
                total += c / s
        explained = len(cheap or flagged)
        z = None
        for d in self.detectors:
            if hasattr(d, "zscores"):
                z = d.zscores(xa)[0]
        order = np.argsort(-total, kind="stable")[: self.top_k]
        ev = []
        for j in order:
            if total[j] <= 0:
                break
            li = int(self._feat_index[j])
            src, row = (live_pairs, li) if li >= 0 else (self.pairs, int(j))
            metric, feature, subsystem = (src.get_column(c)[row] for c in ("metric", "feature", "subsystem"))
            zj = float(z[j]) if z is not None else None
            ev.append({"subsystem": subsystem, "metric": metric, "feature": feature,
                       "contribution": round(float(total[j]) / explained, 4),
                       "claim": _claim(subsystem, metric, feature, zj)})
        return ev


def _dt(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)
