"""A fitted scikit-learn ``IsolationForest`` flattened into arrays, to score one window fast.

scikit-learn scores a sample tree by tree through joblib (≈0.5 ms a tree here, 100 ms
for the paper's 200 trees); live scoring of one window at a time needs a few
milliseconds. :class:`FlatForest` stacks every tree's nodes into ``(n_trees,
max_nodes)`` arrays and walks all trees at once, level by level, with the exact
arithmetic of :meth:`sklearn.ensemble.IsolationForest.score_samples` (float32
comparisons, ``depth + c(n_leaf)`` path lengths, ``2^(-E[h]/c(ψ))``); tests check
equality with scikit-learn.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reveal_lab.detectors._iforest import _average_path_length as _c

__all__ = ["FlatForest"]


class FlatForest:
    """All trees of a fitted ``IsolationForest`` as padded arrays."""

    def __init__(self, model: Any) -> None:
        trees = model.estimators_
        feats = model.estimators_features_
        n_trees = len(trees)
        width = max(t.tree_.node_count for t in trees)
        self.feature = np.zeros((n_trees, width), dtype=np.int64)
        self.threshold = np.zeros((n_trees, width), dtype=np.float64)
        self.left = np.zeros((n_trees, width), dtype=np.int64)
        self.right = np.zeros((n_trees, width), dtype=np.int64)
        self.leaf_value = np.zeros((n_trees, width), dtype=np.float64)  # depth + c(n_node_samples)
        self.leaf_score = np.zeros((n_trees, width), dtype=np.float64)  # scikit-learn's (depth+1) + c - 1
        # scikit-learn indexes features through estimators_features_ only when it subsampled
        # them, i.e. when a tree saw fewer features than the model (each tree's list has
        # max_features entries: the public way to read what sklearn keeps as _max_features)
        subsample = len(feats[0]) != model.n_features_in_ if n_trees else False
        depth_max = 0
        for i, (est, fidx) in enumerate(zip(trees, feats, strict=True)):
            t = est.tree_
            n = t.node_count
            left, right = t.children_left, t.children_right
            depth = np.zeros(n, dtype=np.int64)
            for node in range(n):  # children always have larger ids than their parent
                if left[node] != -1:
                    depth[left[node]] = depth[node] + 1
                    depth[right[node]] = depth[node] + 1
            is_leaf = left == -1
            f = np.maximum(t.feature, 0)
            self.feature[i, :n] = np.where(
                is_leaf, 0, np.asarray(fidx, dtype=np.int64)[f] if subsample else f
            )
            self.threshold[i, :n] = t.threshold
            # a leaf points to itself, so walking past it stays there
            self.left[i, :n] = np.where(is_leaf, np.arange(n), left)
            self.right[i, :n] = np.where(is_leaf, np.arange(n), right)
            c = _c(t.n_node_samples)
            self.leaf_value[i, :n] = depth.astype(np.float64) + c
            self.leaf_score[i, :n] = (depth + 1).astype(np.float64) + c - 1.0
            depth_max = max(depth_max, int(depth.max()))
        self.depth = depth_max
        self.n_trees = n_trees
        self.norm = n_trees * float(_c(np.array([model.max_samples_]))[0])
        self.offset_ = float(model.offset_)
        self._rows = np.arange(n_trees)

    def score_samples(self, X: np.ndarray) -> np.ndarray:
        """Same as ``IsolationForest.score_samples(X)`` (``-s(x)``; lower: more anomalous)."""
        X = np.asarray(X, dtype=np.float32).astype(np.float64)
        depths = np.zeros(X.shape[0])
        rows = self._rows
        for k, x in enumerate(X):
            node = np.zeros(self.n_trees, dtype=np.int64)
            for _ in range(self.depth):
                go_left = x[self.feature[rows, node]] <= self.threshold[rows, node]
                node = np.where(go_left, self.left[rows, node], self.right[rows, node])
            depths[k] = np.cumsum(self.leaf_score[rows, node])[-1]  # tree by tree, as scikit-learn adds
        # the same array operations as scikit-learn (a scalar power may differ in the last bit)
        scores = 2 ** (-np.divide(depths, self.norm, out=np.ones_like(depths), where=self.norm != 0))
        return -scores

    def credits(self, X: np.ndarray) -> np.ndarray:
        """The path credits of :class:`~reveal_lab.detectors.IsolationForestDetector`'s
        explanation (before its baseline is subtracted): each split on the path of ``x``
        in tree ``t`` credits its feature with ``1 / max(h_t(x), 1)``; mean over trees.
        Accumulated tree by tree, node by node, like the detector, so the sums are equal."""
        X = np.asarray(X, dtype=np.float32).astype(np.float64)
        n, p = X.shape
        out = np.zeros((n, p))
        rows = self._rows
        for k, x in enumerate(X):
            node = np.zeros(self.n_trees, dtype=np.int64)
            path_feat = np.empty((self.depth, self.n_trees), dtype=np.int64)
            internal = np.zeros((self.depth, self.n_trees), dtype=bool)
            for level in range(self.depth):
                internal[level] = self.left[rows, node] != node
                f = self.feature[rows, node]
                path_feat[level] = f
                go_left = x[f] <= self.threshold[rows, node]
                node = np.where(go_left, self.left[rows, node], self.right[rows, node])
            w = 1.0 / np.maximum(self.leaf_value[rows, node], 1.0)
            # tree-major order (tree 0's path root to leaf, then tree 1's, ...)
            mask = internal.T
            cols = path_feat.T[mask]
            weights = np.broadcast_to(w[:, None], mask.shape)[mask]
            out[k] = np.bincount(cols, weights=weights, minlength=p)
        return out / self.n_trees

    def explain(self, X: np.ndarray, det: Any) -> np.ndarray:
        """``det.explain(X)`` for the detector this forest was flattened from."""
        return self.credits(X) - det.explanation_baseline()
