"""Isolation Forest (paper §4.3) with a path-based explanation of the forest's decision."""

from __future__ import annotations

import numpy as np

from reveal_lab.detectors._base import BaseDetector

__all__ = ["IsolationForestDetector"]


def _average_path_length(n: np.ndarray) -> np.ndarray:
    """c(n): the average path length of an unsuccessful BST search (Liu et al. 2008)."""
    n = np.asarray(n, dtype=np.float64)
    out = np.zeros_like(n)
    out[n == 2] = 1.0
    big = n > 2
    nb = n[big]
    out[big] = 2.0 * (np.log(nb - 1.0) + np.euler_gamma) - 2.0 * (nb - 1.0) / nb
    return out


def _node_depths(children_left: np.ndarray, children_right: np.ndarray) -> np.ndarray:
    depth = np.zeros(children_left.size, dtype=np.float64)
    stack = [0]
    while stack:
        i = stack.pop()
        for c in (children_left[i], children_right[i]):
            if c != -1:
                depth[c] = depth[i] + 1
                stack.append(c)
    return depth


class IsolationForestDetector(BaseDetector):
    """scikit-learn's :class:`~sklearn.ensemble.IsolationForest`, seeded.

    The score is the forest's anomaly score ``s(x) = 2^(-E[h(x)]/c(ψ))`` (``-score_samples``;
    higher: isolated sooner, more anomalous); the threshold is its ``1 - contamination``
    quantile on the fit data (paper: 1 % contamination), capped at the outlier fence unless
    ``outlier_fence=False`` (:class:`~reveal_lab.detectors.ZScoreDetector`'s ``outlier_fence``).

    ``explain(X)`` is a DIFFI-style local importance computed from the fitted trees: in
    each tree, every split on the path that isolates ``x`` credits its feature with
    ``1 / h_t(x)`` (``h_t`` the path length, so features that isolate a window after a
    few splits get large credit); credits are averaged over trees and the mean credit of
    the fit data is subtracted. A positive value means the feature isolates this window
    more than it isolates a typical window.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 8)); X[5, 3] = 25.0
    >>> det = IsolationForestDetector(n_estimators=100).fit(X)
    >>> int(det.decision_scores_.argmax()), int(det.explain(X[5:6]).argmax())
    (5, 3)
    """

    name = "iforest"

    def __init__(
        self,
        contamination: float = 0.01,
        n_estimators: int = 200,
        max_samples: int | str = "auto",
        random_state: int | None = 0,
        n_jobs: int | None = None,
        outlier_fence: bool = True,
    ) -> None:
        self.contamination = contamination
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.outlier_fence = outlier_fence

    def _quantile(self) -> float:
        if not 0 < self.contamination < 0.5:
            raise ValueError(f"contamination must be in (0, 0.5), got {self.contamination}")
        return 1.0 - self.contamination

    def _fit(self, X: np.ndarray) -> None:
        from sklearn.ensemble import IsolationForest

        self._quantile()
        self.model_ = IsolationForest(
            n_estimators=self.n_estimators,
            max_samples=self.max_samples,
            contamination="auto",
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        ).fit(X)
        # the explanation's baseline is the mean credit over (a seeded sample of) the fit data,
        # computed on first use so that fit+score stays fast
        rng = np.random.default_rng(self.random_state)
        idx = np.sort(rng.choice(X.shape[0], size=min(X.shape[0], 512), replace=False))
        self._baseline_X = X[idx].copy()
        self._explain_baseline = None

    def _score(self, X: np.ndarray) -> np.ndarray:
        return -self.model_.score_samples(X)

    def _credits(self, X: np.ndarray) -> np.ndarray:
        """Raw path credits (before the baseline is subtracted), ``float[n, p]``.

        The trees are walked level by level in numpy on the original columns (no per-tree
        copy of ``X``); the comparison is scikit-learn's (float32 value <= threshold)."""
        n, p = X.shape
        X32 = np.asarray(X, dtype=np.float32)
        all_rows = np.arange(n)
        rows_all, cols_all, w_all = [], [], []
        for tree, feats in zip(self.model_.estimators_, self.model_.estimators_features_, strict=True):
            t = tree.tree_
            feats = np.asarray(feats)
            left, right, feat, thr = t.children_left, t.children_right, t.feature, t.threshold
            node = np.zeros(n, dtype=np.intp)
            depth = np.zeros(n)
            prow, pcol = [], []
            active = all_rows[left[node] != -1]
            while active.size:
                nd = node[active]
                f = feats[feat[nd]]
                go_left = X32[active, f] <= thr[nd]
                prow.append(active)
                pcol.append(f)
                node[active] = np.where(go_left, left[nd], right[nd])
                depth[active] += 1
                active = active[left[node[active]] != -1]
            h = depth + _average_path_length(t.n_node_samples[node])
            w = 1.0 / np.maximum(h, 1.0)
            if prow:
                rows = np.concatenate(prow)
                rows_all.append(rows)
                cols_all.append(np.concatenate(pcol))
                w_all.append(w[rows])
        if not rows_all:
            return np.zeros((n, p))
        rows = np.concatenate(rows_all).astype(np.int64)
        cols = np.concatenate(cols_all).astype(np.int64)
        flat = np.bincount(rows * p + cols, weights=np.concatenate(w_all), minlength=n * p)
        return flat.reshape(n, p) / len(self.model_.estimators_)

    def explanation_baseline(self) -> np.ndarray:
        """The mean path credits of (a sample of) the fit data, which :meth:`explain`
        subtracts; computed on first use and kept."""
        if self._explain_baseline is None:
            self._explain_baseline = self._credits(self._baseline_X).mean(axis=0)
        return self._explain_baseline

    def _explain(self, X: np.ndarray) -> np.ndarray:
        return self._credits(X) - self.explanation_baseline()
