"""``reveal-lab bench labelled``: the reveal-lab pipeline on labelled server telemetry.

For each server: window features of the training half fit the three detectors; the
test half is scored window by window; every test row gets a score, a 0/1 decision and,
for each run of flagged rows, a ranking of the metrics most responsible. The files
written are the contract read by :mod:`reveal_lab.bench._score` (see there).

Choices (the same for every server; nothing is tuned per server):

* **Windows in samples.** The paper's windows are 30 samples (3 s at 100 ms). Here a
  window is ``window_rows`` consecutive rows (default :data:`DEFAULT_WINDOW_ROWS`) with a
  stride of one row, so that every test row has its own window; the time span follows
  the sampling (10 rows = 10 min on SMD at 1 min, 50 min on ASD at 5 min).
* **Features that a window of that size can estimate.** With at least 30 samples (the
  paper's window) all of the paper's features are used; shorter windows use the
  low-order ones (:data:`SHORT_WINDOW_FEATURES`: level, spread, extremes, trend), since
  skewness, kurtosis, lag-1 autocorrelation and the ADF statistic of 10 samples are
  mostly noise (measured: they lower every detection score here, see benchmarks/README).
* **The score of a row is the score of the window ending at it** (causal: what a live
  detector knows at that row, and the protocol of OmniAnomaly/InterFusion, which score
  the window ending at ``t``). The max over covering windows would smear a short
  anomaly ``W - 1`` rows to both sides instead of one. The last ``W - 1`` training rows
  are prepended to the test rows (the test half follows the training half in time), so
  the first test rows get full windows too.
* **Detectors:** Z-score, PCA-Mahalanobis, Isolation Forest and PCA reconstruction
  error, fitted on the first ``1 - calibration`` of the training windows.
* **Decisions** (``threshold="pot"``, default): each detector flags a window above the
  peaks-over-threshold level (:func:`~reveal_lab.detectors.pot_threshold`, risk
  ``pot_risk``) of its scores on the last ``calibration`` share of the training windows,
  which it did not fit on (a gap of ``W`` windows keeps them apart). The combined score
  is the mean of the detectors' scores in units of their in-sample thresholds, as
  :class:`~reveal_lab.detectors.DetectorEnsemble` (Mahalanobis and the reconstruction
  error as distances); its threshold is the same POT level of the combined calibration
  scores. ``threshold="quantile"``: fit on all training windows, ``quantile`` of the
  in-sample scores (the paper's rule; measured in benchmarks/README).
* **Attribution** (``attribution="window_z"``, default; the same rule for the combined
  score and every detector, and the rule of ``reveal-lab detect``:
  :func:`reveal_lab.attribution.metric_deviation`): a flagged run's metrics rank by their
  largest ``|z|`` over their window features and over the run's windows, ``z`` against
  the Z-score detector's fit (median, 1.4826·MAD). ``attribution="windows"``: each
  method by its ``explain`` contributions (negative parts clipped to 0; per window the
  top ``agg_k`` pairs as shares), summed over each metric's features and over the run's
  windows (the combined score: averaged over the detectors flagging each window);
  ``"sum"``: contributions summed over the run. ``attribution="deviation"`` ranks the
  metrics by their largest robust deviation from the training split over the
  run's own rows: ``max_t |x[t, m] - median_train(m)| / scale(m)``, with ``scale`` the
  training MAD (times 1.4826; the standard deviation where the MAD is 0) floored at
  ``deviation_floor`` (data units) so that a metric constant in training gets a finite
  scale and moves up only when it really moves. This is the raw-metric analogue of how
  OmniAnomaly/InterFusion rank (per-metric reconstruction probability of the anomalous
  points, InterFusion's ``cal_IPS`` keeping each metric's worst value over a segment's
  points): window features spread one metric's deviation over several features and
  over the ``W`` windows that hold it, and the detectors' contributions then credit
  correlated neighbours. Ties are broken by how far the run's mean lies from the
  metric's training median. All rules are measured in benchmarks/README.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from reveal_lab.bench._data import LabelledServer, label_runs, list_servers, load_server
from reveal_lab.pipeline import POLICIES

__all__ = [
    "LabelledConfig",
    "DEFAULT_WINDOW_ROWS",
    "SHORT_WINDOW_FEATURES",
    "DETECTOR_NAMES",
    "run_labelled",
    "bench_server",
    "server_frame",
    "server_features",
]

log = logging.getLogger(__name__)

DEFAULT_WINDOW_ROWS = 10
#: windows with at least this many samples get every feature (the paper's 3 s at 100 ms)
FULL_FEATURE_MIN_ROWS = 30
#: features of shorter windows
SHORT_WINDOW_FEATURES = ("mean", "std", "min", "max", "slope")
DETECTOR_NAMES = ("zscore", "mahalanobis", "iforest", "pcarecon")
COMBINED = "combined"
#: the reference baseline (the anchor's method, not reveal-lab) and where its files go
BASELINE = "pca_recon (reference)"
BASELINE_DIR = Path("baselines") / "pca_recon"

#: nominal sampling of the published sets (only sets the timestamps; windows are in rows)
_SAMPLING_S = {"SMD": 60.0, "ASD": 300.0}


@dataclass(frozen=True)
class LabelledConfig:
    """Settings of the labelled bench (one set for every server)."""

    window_rows: int = DEFAULT_WINDOW_ROWS
    #: the detectors' threshold quantile: the paper's top 1 %, the ``paper`` detection policy's
    quantile: float = POLICIES["paper"].quantile
    #: decisions: "pot" (each detector, and the combined score, flags above the
    #: peaks-over-threshold level of its scores on a calibration split that the detectors
    #: did not fit on, see :func:`reveal_lab.detectors.pot_threshold`) or "quantile" (the
    #: ``quantile`` of the in-sample training scores, fitted on all training windows)
    threshold: str = "pot"
    #: share of the training windows (the last ones, after a gap of one window) held out
    #: for calibration when ``threshold="pot"``
    calibration: float = 0.2
    pot_risk: float = 3e-3
    pot_init_quantile: float = 0.98
    pca_variance: float = 0.95
    iforest_estimators: int = 200
    seed: int = 0
    backend: str = "numba"
    #: attribution rule, for the combined score and every detector alike: "window_z"
    #: (largest |z| of each metric's window features over the run, reveal_lab.attribution's
    #: "deviation" rule), "deviation" (largest robust z of each metric's raw rows against the
    #: training split over the run's rows, see the module docstring), "windows" (per-window
    #: shares of the top ``agg_k`` explain() pairs, for the combined score averaged over the
    #: detectors that flag the window, summed over the run: reveal_lab.attribution's
    #: "shares" rule) or "sum" (contributions summed over the run).
    attribution: str = "window_z"
    #: smallest per-metric scale of the "deviation" rule, in data units (0.01: 1 % of the
    #: full range of the min-max normalised SMD/ASD metrics)
    deviation_floor: float = 0.01
    agg_k: int = 20
    #: window features to compute (None: by window size, see :meth:`feature_names`)
    features: tuple[str, ...] | None = None

    def feature_names(self) -> tuple[str, ...]:
        """The features used: ``features`` if given, else every dynamic feature for
        windows of at least :data:`FULL_FEATURE_MIN_ROWS` rows, else
        :data:`SHORT_WINDOW_FEATURES`."""
        if self.features is not None:
            return tuple(self.features)
        from reveal_lab.features import DYNAMIC_FEATURES

        return tuple(DYNAMIC_FEATURES) if self.window_rows >= FULL_FEATURE_MIN_ROWS else SHORT_WINDOW_FEATURES

    #: cap on training windows (evenly spaced) fed to the detectors; None: all
    max_train_windows: int | None = None
    extra: dict = field(default_factory=dict)


def server_frame(matrix: np.ndarray, host: str, *, interval_s: float, start_row: int = 0):
    """A canonical telemetry frame for a header-less matrix: one ``Server:mNN.<host>``
    column per metric (``NN`` the 1-based metric number), timestamps one interval apart."""
    import polars as pl

    from reveal_lab.telemetry import TIMESTAMP, TIMESTAMP_DTYPE, sanitize_host

    h = sanitize_host(host)
    width = max(2, len(str(matrix.shape[1])))
    t0 = dt.datetime(2000, 1, 1)
    step = int(round(interval_s * 1000))
    ts = pl.Series(
        TIMESTAMP,
        [t0 + dt.timedelta(milliseconds=step * (start_row + i)) for i in range(matrix.shape[0])],
        dtype=TIMESTAMP_DTYPE,
    )
    cols = {f"Server:m{j + 1:0{width}d}.{h}": matrix[:, j] for j in range(matrix.shape[1])}
    return pl.DataFrame({TIMESTAMP: ts, **cols}).with_columns(pl.exclude(TIMESTAMP).cast(pl.Float64))


@dataclass
class _Features:
    X: np.ndarray  # windows x pairs
    end_row: np.ndarray  # last row (inclusive) of each window, in the frame's rows
    pair_metric: np.ndarray  # 0-based metric index of each column of X


def server_features(
    matrix: np.ndarray, host: str, cfg: LabelledConfig, *, interval_s: float, start_row: int = 0
) -> _Features:
    """Window features of ``matrix`` with reveal-lab's ``window_features``: windows of
    ``cfg.window_rows`` rows, stride one row; only full windows are kept."""
    from reveal_lab.config import WindowConfig
    from reveal_lab.features import window_features

    frame = server_frame(matrix, host, interval_s=interval_s, start_row=start_row)
    wcfg = WindowConfig(
        window_s=cfg.window_rows * interval_s, stride_s=interval_s, interval_s=interval_s, min_fill=1.0
    )
    wf = window_features(frame, wcfg, backend=cfg.backend, features=list(cfg.feature_names()))
    X = np.asarray(wf.X, dtype=np.float64)
    win = wf.windows
    n = win.get_column("n_samples").to_numpy()
    row_end = win.get_column("row_end").to_numpy().astype(np.int64)
    row_start = win.get_column("row_start").to_numpy().astype(np.int64)
    # row_end may be exclusive (slice convention) or inclusive; normalise to inclusive
    last = np.where(row_end - row_start == n, row_end - 1, row_end)
    full = n >= cfg.window_rows
    names = frame.columns[1:]
    index = {c: i for i, c in enumerate(names)}
    metric = wf.pairs.get_column("metric").to_list()
    try:
        pair_metric = np.array([index[m] for m in metric], dtype=np.int64)
    except KeyError as exc:
        raise RuntimeError(f"window_features returned a pair for unknown metric {exc}") from None
    return _Features(X[full], last[full], pair_metric)


def _fit_detectors(X: np.ndarray, cfg: LabelledConfig):
    from reveal_lab.detectors import (
        IsolationForestDetector,
        PCAMahalanobisDetector,
        PCAReconstructionDetector,
        ZScoreDetector,
    )

    dets = {
        "zscore": ZScoreDetector(quantile=cfg.quantile),
        "mahalanobis": PCAMahalanobisDetector(variance=cfg.pca_variance, quantile=cfg.quantile),
        "iforest": IsolationForestDetector(
            quantile=cfg.quantile, n_estimators=cfg.iforest_estimators, random_state=cfg.seed
        ),
        "pcarecon": PCAReconstructionDetector(variance=cfg.pca_variance, quantile=cfg.quantile),
    }
    return {k: d.fit(X) for k, d in dets.items()}


def _metric_shares(contrib: np.ndarray, pair_metric: np.ndarray, n_metrics: int) -> np.ndarray:
    """Per-metric share of a block of per-window, per-pair contributions."""
    c = np.clip(np.nan_to_num(contrib, nan=0.0, posinf=0.0, neginf=0.0), 0.0, None).sum(axis=0)
    per_metric = np.bincount(pair_metric, weights=c, minlength=n_metrics)
    tot = per_metric.sum()
    return per_metric / tot if tot > 0 else per_metric


def _window_shares(contrib: np.ndarray, cfg: LabelledConfig) -> np.ndarray:
    """Per window: positive contributions, the ``cfg.agg_k`` largest normalised to sum to 1
    (the rule of :mod:`reveal_lab.attribution`)."""
    c = np.clip(np.nan_to_num(contrib, nan=0.0, posinf=0.0, neginf=0.0), 0.0, None)
    n, p = c.shape
    if cfg.agg_k < p and n:
        cut = np.partition(c, p - cfg.agg_k, axis=1)[:, p - cfg.agg_k][:, None]
        c = np.where(c >= cut, c, 0.0)
    tot = c.sum(axis=1, keepdims=True)
    return np.divide(c, tot, out=np.zeros_like(c), where=tot > 0)


def robust_scale(train: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-metric training median and robust scale: 1.4826 x MAD, the standard deviation
    where the MAD is 0 (a metric mostly at one value), never below ``floor`` (a metric
    constant in training)."""
    if floor <= 0:
        raise ValueError(f"deviation_floor must be > 0, got {floor}")
    med = np.median(train, axis=0)
    mad = 1.4826 * np.median(np.abs(train - med), axis=0)
    scale = np.where(mad > 0, mad, train.std(axis=0))
    return med, np.maximum(np.nan_to_num(scale, nan=0.0), floor)


def deviation_scores(rows: np.ndarray, med: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Per metric, the largest robust z ``|x - med| / scale`` over ``rows`` (rows x metrics)."""
    if rows.shape[0] == 0:
        return np.zeros(med.shape[0])
    return np.nan_to_num(np.abs(rows - med) / scale, nan=0.0).max(axis=0)


def _ranking(shares: np.ndarray, tiebreak: np.ndarray) -> list[int]:
    order = np.lexsort((-tiebreak, -np.round(shares, 12)))
    return [int(i) + 1 for i in order]


def _write_outputs(
    out_dir: Path, name: str, score: np.ndarray, dec: np.ndarray, rankings: list[tuple[int, int, list[int]]]
) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / f"{name}.scores.csv").open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["score", "label"])
        for s, d in zip(score.tolist(), dec.tolist(), strict=True):
            w.writerow([repr(float(s)), int(d)])
    with (out_dir / f"{name}.attribution.jsonl").open("w") as fh:
        for a, b, r in rankings:
            fh.write(json.dumps({"start": a, "end": b, "ranking": r}) + "\n")


def bench_server(
    server: LabelledServer,
    out_dir: Path,
    cfg: LabelledConfig,
    *,
    featurize: Callable[..., _Features] = server_features,
) -> dict:
    """Fit on ``server.train``, score ``server.test``; write the combined outputs to
    ``out_dir`` and each detector's to ``out_dir/detectors/<name>/``. Returns timings."""
    t0 = time.perf_counter()
    interval = _SAMPLING_S.get(server.family, 60.0)
    Xtr, Xcal = _train_windows(server, cfg, featurize, interval)
    t_feat_train = time.perf_counter() - t0
    Xte, te = _test_windows(server, cfg, featurize, interval)
    t_feat = time.perf_counter() - t0

    t1 = time.perf_counter()
    dets = _fit_detectors(Xtr, cfg)
    t_fit = time.perf_counter() - t1
    t1 = time.perf_counter()
    scores, decisions = _decisions(dets, Xte, Xcal, cfg)
    t_score = time.perf_counter() - t1
    t1 = time.perf_counter()
    _attribute_and_write(server, out_dir, cfg, dets, Xte, te.pair_metric, scores, decisions)
    t_attr = time.perf_counter() - t1
    return {
        "server": server.name,
        "n_train_windows": int(Xtr.shape[0]),
        "n_features": int(Xte.shape[1]),
        "seconds": {
            "features": t_feat,
            "features_train": t_feat_train,
            "fit": t_fit,
            "score": t_score,
            "attribution": t_attr,
            "total": time.perf_counter() - t0,
        },
    }


def _train_windows(server, cfg, featurize, interval):  # noqa: ANN001, ANN202
    """The training half's window features ``(fit windows, calibration windows or None)``:
    with POT thresholds its last ``calibration`` share, after a gap of one window, is held
    out; at most ``max_train_windows`` fit windows, evenly spaced."""
    W = cfg.window_rows
    if server.train.shape[0] < W + 2:
        raise ValueError(f"{server.name}: {server.train.shape[0]} training rows; need more than {W + 1}")
    if not np.ptp(server.train, axis=0).any():  # as detect refuses an all-constant baseline
        raise ValueError(
            f"{server.name}: the training half is constant in every one of its {server.train.shape[1]} "
            "metrics, so no detector can learn what normal looks like (every score would be the same); "
            "check NAME_train.csv.gz"
        )
    tr = featurize(server.train, server.name, cfg, interval_s=interval)
    Xtr = tr.X
    Xcal = None
    if cfg.threshold == "pot":
        # the last ``calibration`` share of the training windows, after a gap of W windows
        # (no row shared with a fit window), scores the fitted detectors out of sample
        cut = int(round(Xtr.shape[0] * (1.0 - cfg.calibration)))
        if cut < 2 or Xtr.shape[0] - cut - W < 10:
            raise ValueError(
                f"{server.name}: {Xtr.shape[0]} training windows are too few for a calibration split "
                f"of {cfg.calibration}"
            )
        Xtr, Xcal = Xtr[:cut], Xtr[cut + W :]
    if cfg.max_train_windows and Xtr.shape[0] > cfg.max_train_windows:
        idx = np.linspace(0, Xtr.shape[0] - 1, cfg.max_train_windows).round().astype(int)
        Xtr = Xtr[idx]
    return Xtr, Xcal


def _test_windows(server, cfg, featurize, interval):  # noqa: ANN001, ANN202
    """``(features, featurized)`` of one full window ending at every test row: the test rows
    preceded by the last ``W - 1`` training rows."""
    W = cfg.window_rows
    # test rows preceded by the last W-1 training rows: a full window ends at every test row
    pad = server.train[-(W - 1) :] if W > 1 else server.train[:0]
    te = featurize(
        np.vstack([pad, server.test]),
        server.name,
        cfg,
        interval_s=interval,
        start_row=server.train.shape[0] - pad.shape[0],
    )
    row_of_window = te.end_row - pad.shape[0]
    n_test = server.test.shape[0]
    ok = (row_of_window >= 0) & (row_of_window < n_test)
    Xte, row_of_window = te.X[ok], row_of_window[ok]
    if not np.array_equal(row_of_window, np.arange(n_test)):
        raise RuntimeError(
            f"{server.name}: expected one full window ending at each of the {n_test} test rows, "
            f"got {row_of_window.size}"
        )
    return Xte, te


def _decisions(dets, Xte, Xcal, cfg):  # noqa: ANN001, ANN202
    """``(scores, 0/1 decisions)`` of the test windows per detector and for the combined score
    (the mean of each detector's score in units of its threshold); thresholds in sample, or
    POT on the calibration windows."""
    norm_test, norm_train, scores = {}, {}, {}
    for k, d in dets.items():
        scores[k] = d.decision_function(Xte)
        # in units of each detector's in-sample threshold, as DetectorEnsemble's combined score
        # (Mahalanobis and the reconstruction error as distances)
        norm_test[k] = d.normalize(scores[k])
        norm_train[k] = d.normalize(d.decision_scores_)
    comb_train = np.mean(list(norm_train.values()), axis=0)
    comb_test = np.mean(list(norm_test.values()), axis=0)
    if Xcal is None:
        thresholds = {k: float(d.threshold_) for k, d in dets.items()}
        comb_thr = float(np.quantile(comb_train, cfg.quantile))
    else:
        from reveal_lab.detectors import pot_threshold

        cal = {k: d.decision_function(Xcal) for k, d in dets.items()}
        thresholds = {k: pot_threshold(c, cfg.pot_risk, cfg.pot_init_quantile) for k, c in cal.items()}
        comb_cal = np.mean([d.normalize(cal[k]) for k, d in dets.items()], axis=0)
        comb_thr = pot_threshold(comb_cal, cfg.pot_risk, cfg.pot_init_quantile)
    decisions = {k: (scores[k] > thresholds[k]).astype(np.int8) for k in dets}
    decisions[COMBINED] = (comb_test > comb_thr).astype(np.int8)
    scores[COMBINED] = comb_test
    return scores, decisions


def _attribute_and_write(server, out_dir, cfg, dets, Xte, pm, scores, decisions):  # noqa: ANN001, ANN202
    """Rank the metrics of every flagged run of test rows by the attribution rule, and write
    the combined outputs to ``out_dir`` and each detector's to ``out_dir/detectors/<name>/``;
    only the windows of flagged runs are explained."""
    n_test = server.test.shape[0]
    n_metrics = server.n_metrics
    med = np.median(server.train, axis=0)
    dev_med, dev_scale = robust_scale(server.train, cfg.deviation_floor)
    flagged_any = np.zeros(n_test, dtype=bool)
    for d in decisions.values():
        flagged_any |= d.astype(bool)
    rows_needed = np.flatnonzero(flagged_any)
    contrib = {k: np.zeros((0, Xte.shape[1])) for k in dets}
    pos = np.full(n_test, -1, dtype=np.int64)
    explained = cfg.attribution in ("windows", "sum")  # the other rules need no explain()
    if rows_needed.size:
        pos[rows_needed] = np.arange(rows_needed.size)
        for k, d in dets.items():
            if explained:
                contrib[k] = d.explain(Xte[rows_needed])
    if cfg.attribution == "window_z":
        from reveal_lab.attribution import metric_deviation

        wz = metric_deviation(np.abs(dets["zscore"].zscores(Xte)), pm, n_metrics)
    det_flags = {k: decisions[k][rows_needed].astype(bool) for k in dets}
    window_pairs = {k: _window_shares(contrib[k], cfg) for k in dets} if cfg.attribution == "windows" else None
    for method, dec in decisions.items():
        rankings = []
        for a, b in label_runs(dec):
            sel = pos[a:b]
            dev = np.abs(server.test[a:b].mean(axis=0) - med)
            if cfg.attribution == "window_z":
                shares = wz[a:b].max(axis=0)
            elif cfg.attribution == "deviation":
                shares = deviation_scores(server.test[a:b], dev_med, dev_scale)
            elif cfg.attribution == "windows":
                if method == COMBINED:
                    # as reveal_lab.attribution: a window's pair scores are the mean share over
                    # the detectors that flag it (all three when only the combined score does)
                    flags = np.stack([det_flags[k][sel] for k in dets])
                    flags[:, ~flags.any(axis=0)] = True
                    w = np.stack([window_pairs[k][sel] for k in dets])  # det x windows x pairs
                    pair = (w * flags[:, :, None]).sum(axis=0) / flags.sum(axis=0)[:, None]
                else:
                    pair = window_pairs[method][sel]
                shares = np.bincount(pm, weights=pair.sum(axis=0), minlength=n_metrics)
            elif method == COMBINED:
                shares = np.mean([_metric_shares(contrib[k][sel], pm, n_metrics) for k in dets], axis=0)
            else:
                shares = _metric_shares(contrib[method][sel], pm, n_metrics)
            rankings.append((a, b, _ranking(shares, dev)))
        target = out_dir if method == COMBINED else out_dir / "detectors" / method
        _write_outputs(target, server.name, scores[method], dec, rankings)


def pca_reconstruction_baseline(server: LabelledServer, out_dir: Path, cfg: LabelledConfig) -> dict:
    """The published anchor's method, on the same servers and protocol: per-row PCA
    reconstruction error (components explaining ``cfg.pca_variance`` of the training
    variance, fit on the training rows as given), threshold the ``cfg.quantile`` quantile
    of the training errors, attribution by each metric's squared residual summed over the
    flagged run. Not part of reveal-lab's pipeline: a like-for-like reference."""
    from sklearn.decomposition import PCA

    t0 = time.perf_counter()
    pca = PCA(n_components=cfg.pca_variance, svd_solver="full", random_state=cfg.seed).fit(server.train)

    def resid(x: np.ndarray) -> np.ndarray:
        return (x - pca.inverse_transform(pca.transform(x))) ** 2

    thr = float(np.quantile(resid(server.train).sum(axis=1), cfg.quantile))
    r = resid(server.test)
    score = r.sum(axis=1)
    dec = (score > thr).astype(np.int8)
    med = np.median(server.train, axis=0)
    rankings = []
    for a, b in label_runs(dec):
        dev = np.abs(server.test[a:b].mean(axis=0) - med)
        rankings.append((a, b, _ranking(r[a:b].sum(axis=0), dev)))
    _write_outputs(out_dir, server.name, score, dec, rankings)
    return {
        "server": server.name,
        "n_components": int(pca.n_components_),
        "seconds": time.perf_counter() - t0,
    }


def _machine() -> dict:
    from reveal_lab.machine import machine_info

    m = machine_info()
    return {"cpu": m["cpu_model"], "cpus": m["cores"], "python": m["python"], "platform": m["platform"]}


def run_labelled(
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    servers: Sequence[str] | None = None,
    config: LabelledConfig | None = None,
    featurize: Callable[..., _Features] = server_features,
) -> dict:
    """Run the bench on every server (or ``servers``), score the outputs with the separate
    scorer, write ``out_dir/summary.json`` and return it."""
    from reveal_lab.bench._score import score_folder
    from reveal_lab.jsonsafe import dumps

    cfg = config or LabelledConfig()
    if cfg.attribution not in ("window_z", "deviation", "windows", "sum"):
        raise ValueError(
            f"attribution must be 'window_z', 'deviation', 'windows' or 'sum', got {cfg.attribution!r}"
        )
    if cfg.deviation_floor <= 0:
        raise ValueError(f"deviation_floor must be > 0, got {cfg.deviation_floor}")
    if cfg.threshold not in ("pot", "quantile"):
        raise ValueError(f"threshold must be 'pot' or 'quantile', got {cfg.threshold!r}")
    if not 0 < cfg.calibration < 1:
        raise ValueError(f"calibration must be in (0, 1), got {cfg.calibration}")
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    names = list(servers) if servers else list_servers(data_dir)
    missing = sorted(set(names) - set(list_servers(data_dir)))
    if missing:
        raise FileNotFoundError(f"{data_dir}: no data for server(s) {missing}")
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = []
    for name in names:
        srv = load_server(data_dir, name)
        info = bench_server(srv, out_dir, cfg, featurize=featurize)
        log.info(
            "%s: %d test rows, %d features, %.1f s",
            name,
            srv.test.shape[0],
            info["n_features"],
            info["seconds"]["total"],
        )
        info["pca_recon_baseline"] = pca_reconstruction_baseline(srv, out_dir / BASELINE_DIR, cfg)
        runs.append(info)
    results = {COMBINED: score_folder(out_dir, data_dir, names)}
    for k in DETECTOR_NAMES:
        results[k] = score_folder(out_dir / "detectors" / k, data_dir, names)
    results[BASELINE] = score_folder(out_dir / BASELINE_DIR, data_dir, names)
    summary = {
        "benchmark": "labelled_servers",
        "data": str(data_dir),
        "servers": names,
        "config": asdict(cfg),
        "protocol": {
            "point_score": "score of the window ending at the row (causal)",
            "windows": f"{cfg.window_rows} rows, stride 1 row, "
            f"last {cfg.window_rows - 1} train rows prepended",
            "features": list(cfg.feature_names()),
            "decision": (
                f"score > peaks-over-threshold level (risk {cfg.pot_risk}, initial quantile "
                f"{cfg.pot_init_quantile}) of the scores of the last {cfg.calibration} of the training "
                "windows, held out from fitting"
                if cfg.threshold == "pot"
                else f"score > threshold_ ({cfg.quantile} quantile of the training scores)"
            ),
            "attribution": (
                "every method: per metric, the largest |z| of its window features over the flagged "
                "run's windows, z against the Z-score detector's fit (median, 1.4826*MAD)"
                if cfg.attribution == "window_z"
                else "every method: per metric, the largest |x - train median| / max(train 1.4826*MAD "
                f"(std where 0), {cfg.deviation_floor}) over the flagged run's rows"
                if cfg.attribution == "deviation"
                else "per window, the positive explain() contributions of the top "
                f"{cfg.agg_k} pairs as shares, averaged over the detectors flagging it, summed "
                "per metric over the flagged run"
                if cfg.attribution == "windows"
                else "explain() contributions clipped at 0, summed per metric over the flagged run, "
                "shares averaged over the detectors"
            ),
        },
        "machine": _machine(),
        "runs": runs,
        "results": results,
    }
    (out_dir / "summary.json").write_text(dumps(summary, indent=2))
    return summary
