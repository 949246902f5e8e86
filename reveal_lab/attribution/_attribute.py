"""Attribution (paper §4.4): which metric–feature pairs explain each anomalous window,
which subsystems (jointly) and which host.

Two rules rank the pairs of a window (``rule``):

* ``"deviation"`` (default): each pair's ``|z|`` against the fit data (the centre and
  scale of the Z-score detector: median and 1.4826·MAD), whichever detectors flag the
  window. A metric ranks by its largest ``|z|`` over its features
  (:func:`metric_deviation`), and over a run of windows by the largest over the run.
  Measured on labelled server telemetry (``reveal-lab bench labelled``, chosen on
  machine-1-6): it ranks the operators' metrics higher than the detectors' own
  contributions for every detector (benchmarks/README.md), because those spread one
  metric's deviation over correlated neighbours (Mahalanobis, PCA residuals) or over
  random splits (Isolation Forest).
* ``"shares"``: for a window flagged by detector ``d``, ``d.explain(x)`` (Z-score:
  ``|z|``; Mahalanobis: the exact additive terms of ``d²``; Isolation Forest:
  path-based credit; PCA reconstruction: squared residuals), averaged over the
  detectors that flag the window (the paper's per-detector attribution).

Either way the positive scores are kept and the window's ``agg_k`` largest are
normalized to shares that sum to 1; a subsystem's (or host's) score is the sum of its
pairs' shares. Evidence rows: the ``top_k`` metrics of the rule (each with its
strongest feature) and the ``top_k`` pairs of every flagging detector's own ``explain`` (``evidence_of`` names those detectors:
the per-detector rankings stay visible), ordered by the rule's shares, each with a
claim in words; every subsystem whose score is at least ``joint_fraction`` of the top
one is named (joint attribution).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from reveal_lab.attribution._words import claim
from reveal_lab.numeric import safe_divide
from reveal_lab.telemetry import SUBSYSTEMS

if TYPE_CHECKING:
    from reveal_lab.detectors import BaseDetector, EnsembleResult

__all__ = [
    "Attribution",
    "attribute",
    "metric_deviation",
    "RULES",
    "SUBSYSTEM_BY",
    "EVIDENCE_SCHEMA",
    "WINDOW_SCHEMA",
]

#: the pair-ranking rules of :func:`attribute`
RULES = ("deviation", "shares")
#: how :func:`attribute` scores a window's subsystems: by its pairs or by its metrics
SUBSYSTEM_BY = ("pairs", "metrics")
#: largest ``|z|`` a pair counts with in the ``"deviation"`` rule (see :func:`metric_deviation`)
DEVIATION_CAP = 100.0

EVIDENCE_SCHEMA: dict[str, pl.DataType] = {
    "window_id": pl.Int64,
    "start": pl.Datetime("ms"),
    "end": pl.Datetime("ms"),
    "host": pl.String,
    "methods": pl.String,
    "agreement": pl.Int64,
    "subsystem": pl.String,
    "metric": pl.String,
    "feature": pl.String,
    "score": pl.Float64,
    "claim": pl.String,
    "evidence_of": pl.String,
    "rank": pl.Int64,
    "value": pl.Float64,
    "baseline": pl.Float64,
    "z": pl.Float64,
    "combined": pl.Float64,
}

WINDOW_SCHEMA: dict[str, pl.DataType] = {
    "window_id": pl.Int64,
    "start": pl.Datetime("ms"),
    "end": pl.Datetime("ms"),
    "host": pl.String,
    "methods": pl.String,
    "agreement": pl.Int64,
    "combined": pl.Float64,
    "subsystems": pl.String,
    "top_subsystem": pl.String,
    "top_share": pl.Float64,
    **{f"share_{s}": pl.Float64 for s in SUBSYSTEMS},
}


@dataclass
class Attribution:
    """``evidence``: one row per anomalous window × metric–feature pair (columns of
    ``anomalies.csv`` first, then ``evidence_of`` (the detectors whose top pairs include
    it), ``rank``, ``value``, ``baseline``, ``z``, ``combined``).
    ``windows``: one row per anomalous window with its (joint) subsystems and shares."""

    evidence: pl.DataFrame
    windows: pl.DataFrame


def _shares(contrib: np.ndarray, agg_k: int) -> np.ndarray:
    """Positive contributions, the ``agg_k`` largest per row normalized to sum to 1."""
    c = np.where(np.isfinite(contrib), np.maximum(contrib, 0.0), 0.0)
    n, p = c.shape
    if agg_k < p:
        cut = np.partition(c, p - agg_k, axis=1)[:, p - agg_k][:, None]
        c = np.where(c >= cut, c, 0.0)
    tot = c.sum(axis=1, keepdims=True)
    return safe_divide(c, np.where(tot > 0, tot, 0.0)) if n else c


def metric_deviation(
    absz: np.ndarray, pair_metric: np.ndarray, n_metrics: int, *, cap: float = DEVIATION_CAP
) -> np.ndarray:
    """Per row and metric, the largest ``|z|`` over the metric's features, capped at ``cap``.

    ``absz``: ``rows × pairs`` (non-finite values count as 0); ``pair_metric``: the
    0-based metric of each pair. Returns ``rows × n_metrics``; rank a run of rows by
    its column maxima. The cap keeps a numerically degenerate feature (the ADF statistic
    of a counter that fired once: ``|z| ≈ 1e11``) from outranking a metric that really
    moved; metrics at the cap are told apart by the mean of their capped ``|z|`` over
    their features (added as ``mean / (cap + 1)``, below 1: it orders only metrics
    whose largest ``|z|`` ties), so one that moved in several features at once leads.

    >>> metric_deviation(np.array([[1.0, 5.0, 2.0]]), np.array([0, 0, 1]), 2, cap=1e9)
    array([[5., 2.]])
    >>> m = metric_deviation(np.array([[1e11, 0.0, 150.0, 120.0]]), np.array([0, 0, 1, 1]), 2)
    >>> bool(m[0, 1] > m[0, 0] > 100)
    True
    """
    a = np.minimum(np.where(np.isfinite(absz), np.abs(absz), 0.0), cap)
    out = np.zeros((a.shape[0], n_metrics))
    for m in np.unique(pair_metric):
        block = a[:, pair_metric == m]
        out[:, m] = block.max(axis=1) + block.mean(axis=1) / (cap + 1.0)
    return out


def attribute(
    detectors: Mapping[str, BaseDetector],
    X: np.ndarray,
    pairs: pl.DataFrame,
    windows: pl.DataFrame,
    result: EnsembleResult,
    *,
    center: np.ndarray | None = None,
    scale: np.ndarray | None = None,
    top_k: int = 5,
    agg_k: int = 20,
    joint_fraction: float = 0.5,
    host: str | None = None,
    rule: str = "deviation",
    subsystem_by: str = "pairs",
) -> Attribution:
    """Explain every anomalous window (``result.agreement > 0``).

    Parameters
    ----------
    detectors : fitted detectors by name (``DetectorEnsemble.detectors_``).
    X : the scored feature matrix (``n_windows × n_pairs``), rows aligned with ``windows``.
    pairs : one row per column of ``X`` with ``metric, feature, subsystem`` (and ``host``).
    windows : ``window_id, start, end`` per row of ``X``.
    result : the ensemble's scores of ``X``.
    center, scale : typical value and spread of each pair in the fit data (for the
        claims' baseline and z); default: the ``zscore`` detector's.
    host : host name for every window (single-host scoring); otherwise the host with
        the largest attribution share is named.
    rule : ``"deviation"`` (rank pairs by ``|z|`` against the fit data) or ``"shares"``
        (by the flagging detectors' own contributions), see the module docstring.
    subsystem_by : ``"pairs"`` (a subsystem's score is the sum of its pairs' shares: a
        metric that moved in ten features counts ten times) or ``"metrics"`` (``deviation``
        rule only: the ``agg_k`` largest metrics by :func:`metric_deviation`, normalized to
        shares, each metric once).
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    if subsystem_by not in SUBSYSTEM_BY:
        raise ValueError(f"subsystem_by must be one of {SUBSYSTEM_BY}, got {subsystem_by!r}")
    if subsystem_by == "metrics" and rule != "deviation":
        raise ValueError("subsystem_by='metrics' needs rule='deviation' (metrics ranked by |z|)")
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] != windows.height or X.shape[1] != pairs.height:
        raise ValueError(f"X is {X.shape}, windows has {windows.height} rows, pairs {pairs.height} rows")
    if center is None or scale is None:
        zdet = detectors.get("zscore")
        if zdet is None:
            raise ValueError("attribute needs center/scale or a fitted 'zscore' detector")
        center, scale = zdet.center_, zdet.scale_
    p = _PairIndex(pairs, host)
    anom = np.flatnonzero(result.agreement > 0)
    names = [n for n in result.methods if n in detectors]
    if anom.size == 0:
        return Attribution(pl.DataFrame(schema=EVIDENCE_SCHEMA), pl.DataFrame(schema=WINDOW_SCHEMA))

    Xa = X[anom]
    imputed = detectors[names[0]]._impute(Xa) if names else Xa
    z_all = safe_divide(imputed - center, scale)
    shares, contribs = _detector_shares(detectors, names, result, anom, Xa, agg_k)
    dev = _Deviation(z_all, p, agg_k, subsystem_by == "metrics") if rule == "deviation" else None
    wins = windows.select("window_id", "start", "end").rows()
    ev_rows: list[dict[str, object]] = []
    win_rows: list[dict[str, object]] = []
    for r, i in enumerate(anom):
        methods = [n for n in names if result.labels[n][i] == 1]
        pair_score = dev.shares[r] if dev is not None else np.mean([shares[n][r] for n in methods], axis=0)
        if dev is not None and dev.metric_shares is not None:
            sub_scores = {s: float(dev.metric_shares[r][ix].sum()) for s, ix in dev.metric_sub_index.items()}
        else:
            sub_scores = {s: float(pair_score[idx].sum()) for s, idx in p.sub_index.items()}
        if host is not None:
            w_host = host
        elif p.host_index:
            w_host = max(p.host_index, key=lambda h: float(pair_score[p.host_index[h]].sum()))
        else:
            w_host = None
        common = {"window_id": wins[i][0], "start": wins[i][1], "end": wins[i][2]}
        win_rows.append(_window_row(common, w_host, methods, result, i, sub_scores, joint_fraction))
        evidence_of = _evidence_pairs(r, methods, contribs, dev, top_k)
        if dev is not None:  # metrics in the rule's order, then the pair's share
            ranked = sorted(evidence_of, key=lambda j: (-dev.metric[r, dev.pair_metric[j]], -pair_score[j]))
        else:
            ranked = sorted(evidence_of, key=lambda j: -pair_score[j])
        for rank, j in enumerate(ranked, start=1):
            value, base, z = float(imputed[r, j]), float(center[j]), float(z_all[r, j])
            ev_rows.append(
                {
                    **common,
                    "host": p.host[j] if p.host[j] is not None else w_host,
                    "methods": "+".join(methods),
                    "agreement": int(result.agreement[i]),
                    "subsystem": p.subsystem[j],
                    "metric": p.metric[j],
                    "feature": p.feature[j],
                    "score": float(pair_score[j]),
                    "claim": claim(p.metric[j], p.feature[j], value, base, z),
                    "evidence_of": "+".join(evidence_of[j]) or "deviation",
                    "rank": rank,
                    "value": value,
                    "baseline": base,
                    "z": z,
                    "combined": float(result.combined[i]),
                }
            )
    return Attribution(
        pl.DataFrame(ev_rows, schema=EVIDENCE_SCHEMA), pl.DataFrame(win_rows, schema=WINDOW_SCHEMA)
    )


class _PairIndex:
    """The columns of the feature matrix: each pair's metric, feature, subsystem and host,
    and the pairs of each subsystem and of each host."""

    def __init__(self, pairs: pl.DataFrame, host: str | None) -> None:
        self.metric = pairs["metric"].to_list()
        self.feature = pairs["feature"].to_list()
        self.subsystem = np.asarray(pairs["subsystem"].to_list(), dtype=object)
        self.host = np.asarray(
            pairs["host"].to_list() if "host" in pairs.columns else [host] * pairs.height, dtype=object
        )
        self.sub_index = {s: np.flatnonzero(self.subsystem == s) for s in SUBSYSTEMS}
        hosts = [h for h in dict.fromkeys(self.host.tolist()) if h is not None]
        self.host_index = {h: np.flatnonzero(self.host == h) for h in hosts}


def _detector_shares(detectors, names, result, anom, Xa, agg_k):  # noqa: ANN001, ANN202
    """Per detector, its contributions (``explain``) and their shares over the anomalous
    windows it flags (zero rows elsewhere): ``(shares, contributions)``."""
    shares: dict[str, np.ndarray] = {}
    contribs: dict[str, np.ndarray] = {}
    for n in names:
        flagged = result.labels[n][anom] == 1
        sh = np.zeros_like(Xa)
        co = np.zeros_like(Xa)
        if flagged.any():
            co[flagged] = detectors[n].explain(Xa[flagged])
            sh[flagged] = _shares(co[flagged], agg_k)
        shares[n], contribs[n] = sh, co
    return shares, contribs


class _Deviation:
    """The ``deviation`` rule's quantities over the anomalous windows: each pair's capped
    ``|z|`` share, each metric's deviation (:func:`metric_deviation`), and with
    ``by_metrics`` each metric's share and the metrics of each subsystem."""

    def __init__(self, z_all: np.ndarray, p: _PairIndex, agg_k: int, by_metrics: bool) -> None:
        codes = {m: i for i, m in enumerate(dict.fromkeys(p.metric))}
        self.pair_metric = np.array([codes[m] for m in p.metric], dtype=np.int64)
        self.absz = np.where(np.isfinite(z_all), np.abs(z_all), 0.0)
        self.shares = _shares(np.minimum(self.absz, DEVIATION_CAP), agg_k)
        self.metric = metric_deviation(self.absz, self.pair_metric, len(codes))  # windows × metrics
        self.metric_shares = self.metric_sub_index = None
        if by_metrics:
            metric_sub = np.empty(len(codes), dtype=object)
            metric_sub[self.pair_metric] = p.subsystem
            self.metric_shares = _shares(np.minimum(self.metric, DEVIATION_CAP), agg_k)
            self.metric_sub_index = {s: np.flatnonzero(metric_sub == s) for s in SUBSYSTEMS}


def _window_row(common, w_host, methods, result, i, sub_scores, joint_fraction):  # noqa: ANN001, ANN202
    """One row of the windows table: the flagging detectors, the subsystems within
    ``joint_fraction`` of the top one, and every subsystem's share."""
    top_sub = max(sub_scores, key=sub_scores.get)  # type: ignore[arg-type]
    top_val = sub_scores[top_sub]
    ranked = sorted(sub_scores.items(), key=lambda kv: -kv[1])
    joint = [s for s, v in ranked if top_val > 0 and v >= joint_fraction * top_val]
    return {
        **common,
        "host": w_host,
        "methods": "+".join(methods),
        "agreement": int(result.agreement[i]),
        "combined": float(result.combined[i]),
        "subsystems": "+".join(joint),
        "top_subsystem": top_sub if top_val > 0 else None,
        "top_share": top_val,
        **{f"share_{s}": v for s, v in sub_scores.items()},
    }


def _evidence_pairs(r, methods, contribs, dev, top_k):  # noqa: ANN001, ANN202
    """The evidence pairs of anomalous window ``r`` (pair column → the detectors that put it
    in their ``top_k``): with the deviation rule first the ``top_k`` metrics by deviation,
    each with its strongest feature; then each flagging detector's ``top_k`` pairs."""
    evidence_of: dict[int, list[str]] = {}
    if dev is not None:
        for m in np.argsort(-dev.metric[r], kind="stable")[:top_k]:
            if dev.metric[r, m] > 0:
                cols = np.flatnonzero(dev.pair_metric == m)
                evidence_of.setdefault(int(cols[np.argmax(dev.absz[r, cols])]), [])
    for n in methods:
        c = contribs[n][r]
        order = np.argsort(-np.where(np.isfinite(c), c, -np.inf), kind="stable")[:top_k]
        for j in order:
            if c[j] > 0:
                evidence_of.setdefault(int(j), []).append(n)
    return evidence_of
