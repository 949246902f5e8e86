"""Detection and attribution metrics with the field's protocols.

Detection (per test row, higher score = more anomalous):

* :func:`best_f1`: point-wise F1 at the best threshold, no point adjustment.
* :func:`best_f1_point_adjusted`: best F1 after point adjustment (Xu et al., WWW 2018;
  used by OmniAnomaly and InterFusion): when any row of a labelled anomaly run is
  flagged, the whole run counts as flagged. At a threshold ``t`` a run is flagged iff
  its maximum score is ``>= t``, so replacing each run's scores by their maximum and
  taking the point-wise best F1 is exact.
* :func:`average_precision`: AUC-PR as average precision (no adjustment).
* :func:`decision_f1`: F1 of a fixed 0/1 decision (the pipeline's own threshold).

Attribution (InterFusion ``algorithm/cal_IPS.py``; NDCG as in TranAD's
``src/diagnosis.py``): for a labelled segment with metric set ``L`` and a ranking of
metrics, ``k = min(floor(P * |L|), len(ranking))``;

* ``HitRate@P = |top-k ∩ L| / |L|``;
* ``NDCG@P = DCG@k / IDCG@k`` with binary relevance, ``DCG = Σ_i rel_i / log2(i + 1)``
  (InterFusion reports no NDCG; TranAD's ``ndcg`` uses scikit-learn's ``ndcg_score`` with
  ``k = round(P·|L|)``; here ``k`` is the same floor as for HitRate, so both read the
  same top of the ranking).

:func:`random_hit_rate` / :func:`random_ndcg` give the exact expectation for a ranking
drawn uniformly at random (ASD operators marked most metrics, so this is high there).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from reveal_lab.numeric import true_runs

__all__ = [
    "best_f1",
    "best_f1_point_adjusted",
    "point_adjust_scores",
    "point_adjust_decisions",
    "average_precision",
    "decision_f1",
    "hit_rate",
    "ndcg",
    "random_hit_rate",
    "random_ndcg",
    "top_k",
]


def _check(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(labels).astype(bool).ravel()
    if s.shape != y.shape:
        raise ValueError(f"{s.size} scores for {y.size} labels")
    if not np.isfinite(s).all():
        raise ValueError(f"{int((~np.isfinite(s)).sum())} scores are not finite")
    return s, y


def best_f1(scores: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Best point-wise F1 over all thresholds ``score >= t``.

    Returns ``f1, precision, recall, threshold``; F1 is 0 when no row is labelled.

    >>> y = np.array([0, 0, 1, 1, 0])
    >>> best_f1(np.array([.1, .2, .9, .8, .3]), y)["f1"]
    1.0
    >>> round(best_f1(np.array([.9, .2, .8, .1, .3]), y)["f1"], 4)  # flag all: P=.4, R=1
    0.5714
    """
    s, y = _check(scores, labels)
    n_pos = int(y.sum())
    if n_pos == 0:
        return {"f1": 0.0, "precision": 0.0, "recall": 0.0, "threshold": float("inf")}
    order = np.argsort(-s, kind="mergesort")
    s_sorted, y_sorted = s[order], y[order]
    tp = np.cumsum(y_sorted)
    fp = np.cumsum(~y_sorted)
    # only thresholds at the last row of each tied block are reachable
    last = np.r_[s_sorted[1:] != s_sorted[:-1], True]
    tp, fp, thr = tp[last], fp[last], s_sorted[last]
    prec = tp / (tp + fp)
    rec = tp / n_pos
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(tp > 0, 2 * prec * rec / (prec + rec), 0.0)
    i = int(np.argmax(f1))
    return {
        "f1": float(f1[i]),
        "precision": float(prec[i]),
        "recall": float(rec[i]),
        "threshold": float(thr[i]),
    }


def point_adjust_scores(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Scores with every labelled run raised to its maximum (see module doc).

    >>> point_adjust_scores(np.array([.1, .5, .2, .9, .3]), np.array([0, 1, 1, 1, 0])).tolist()
    [0.1, 0.9, 0.9, 0.9, 0.3]
    """
    s, y = _check(scores, labels)
    out = s.copy()
    for a, b in true_runs(y):
        out[a:b] = s[a:b].max()
    return out


def point_adjust_decisions(pred: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """0/1 decisions after point adjustment: a labelled run with any flag is all flagged.

    >>> point_adjust_decisions(np.array([1, 0, 1, 0, 0, 0]), np.array([0, 1, 1, 1, 0, 1])).tolist()
    [1, 1, 1, 1, 0, 0]
    """
    p = np.asarray(pred).astype(bool).copy()
    y = np.asarray(labels).astype(bool)
    if p.shape != y.shape:
        raise ValueError(f"{p.size} decisions for {y.size} labels")
    for a, b in true_runs(y):
        if p[a:b].any():
            p[a:b] = True
    return p.astype(np.int8)


def best_f1_point_adjusted(scores: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Best F1 over thresholds with point adjustment (the inflated protocol)."""
    return best_f1(point_adjust_scores(scores, labels), labels)


def average_precision(scores: np.ndarray, labels: np.ndarray) -> float:
    """AUC-PR as average precision (scikit-learn), point-wise."""
    from sklearn.metrics import average_precision_score

    s, y = _check(scores, labels)
    if not y.any():
        return 0.0
    return float(average_precision_score(y, s))


def decision_f1(pred: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """F1, precision and recall of fixed 0/1 decisions.

    >>> decision_f1(np.array([0, 1, 1, 0]), np.array([0, 1, 0, 0]))["f1"]
    0.6666666666666666
    """
    p = np.asarray(pred).astype(bool).ravel()
    y = np.asarray(labels).astype(bool).ravel()
    if p.shape != y.shape:
        raise ValueError(f"{p.size} decisions for {y.size} labels")
    tp = int((p & y).sum())
    prec = tp / int(p.sum()) if p.any() else 0.0
    rec = tp / int(y.sum()) if y.any() else 0.0
    f1 = 2 * prec * rec / (prec + rec) if tp else 0.0
    return {"f1": f1, "precision": prec, "recall": rec}


def top_k(p: float, n_labelled: int, n_ranked: int) -> int:
    """``min(floor(P * |L|), len(ranking))`` with ``P`` in percent (100, 150).

    >>> top_k(150, 5, 38), top_k(150, 15, 19), top_k(100, 3, 38)
    (7, 19, 3)
    """
    return min(int(math.floor(p / 100.0 * n_labelled + 1e-9)), n_ranked)


def hit_rate(ranking: Sequence[int], labelled: Sequence[int], p: float) -> float:
    """Share of the labelled metrics found in the top ``floor(P·|L|)`` of ``ranking``.

    >>> hit_rate([3, 1, 2, 4], [1, 4], 100), hit_rate([3, 1, 2, 4], [1, 4], 150)
    (0.5, 0.5)
    >>> hit_rate([3, 1, 2, 4], [1, 4], 200)
    1.0
    """
    lab = set(int(x) for x in labelled)
    if not lab:
        raise ValueError("a labelled segment needs at least one metric")
    k = top_k(p, len(lab), len(ranking))
    return len(set(int(x) for x in ranking[:k]) & lab) / len(lab)


def _dcg_discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2))


def ndcg(ranking: Sequence[int], labelled: Sequence[int], p: float) -> float:
    """NDCG over the top ``floor(P·|L|)`` with binary relevance.

    >>> ndcg([1, 4, 2, 3], [1, 4], 100)
    1.0
    >>> round(ndcg([3, 1, 2, 4], [1, 4], 100), 4)
    0.3869
    """
    lab = set(int(x) for x in labelled)
    if not lab:
        raise ValueError("a labelled segment needs at least one metric")
    k = top_k(p, len(lab), len(ranking))
    if k == 0:
        return 0.0
    disc = _dcg_discounts(k)
    rel = np.array([int(x) in lab for x in ranking[:k]], dtype=np.float64)
    ideal = disc[: min(k, len(lab))].sum()
    return float((rel * disc).sum() / ideal)


def random_hit_rate(n_labelled: int, n_metrics: int, p: float) -> float:
    """Expected HitRate@P of a uniformly random ranking of ``n_metrics`` metrics.

    Each of the ``k`` top slots holds a labelled metric with probability ``|L|/D``, so
    the expectation is ``k/D``.

    >>> random_hit_rate(15, 19, 150), random_hit_rate(2, 38, 100)
    (1.0, 0.05263157894736842)
    """
    k = top_k(p, n_labelled, n_metrics)
    return k / n_metrics


def random_ndcg(n_labelled: int, n_metrics: int, p: float) -> float:
    """Expected NDCG@P of a uniformly random ranking (linearity of expectation).

    >>> round(random_ndcg(1, 4, 100), 4)
    0.25
    """
    k = top_k(p, n_labelled, n_metrics)
    if k == 0:
        return 0.0
    disc = _dcg_discounts(k)
    return float(n_labelled / n_metrics * disc.sum() / disc[: min(k, n_labelled)].sum())
