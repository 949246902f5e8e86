"""Isolation Forest (paper §4.3) with a path-based explanation of the forest's decision."""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from reveal_lab.detectors._base import OUTLIER_FENCE_ON, QUANTILE, BaseDetector

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


#: scikit-learn versions whose bagging makes and fits each tree as :class:`_TreeMaker` expects
#: (``BaseEnsemble._make_estimator``: clone, ``set_params``, ``_set_random_states``; then the
#: tree's ``fit``, whose only use of ``random_state`` is ``check_random_state``)
_TREE_MAKER_VERSIONS = ("1.9.",)


class _TreeMaker:
    """``IsolationForest._make_estimator`` for a forest fitted one tree after another.

    scikit-learn clones a prototype for every tree and builds two ``RandomState`` objects
    from its seed (one draws the tree's seed, one is the tree's own in ``fit``): most of
    the time of a 200-tree fit on a few hundred windows. Here each tree is constructed from
    the parameters of one prototype (``clone(estimator_)`` with the ensemble's
    ``estimator_params``, made on the first call, once ``fit`` has set ``estimator_``); its
    seed is drawn as ``_set_random_states`` draws it, from one reseeded ``RandomState``;
    the tree is fitted with another reseeded to that seed (the same draws as the
    ``RandomState`` its ``fit`` would build), and :meth:`restore` gives every tree its
    integer seed back. The forest is equal to scikit-learn's (a test compares them). When
    the prototype's state is not its parameters (immutable values) with one
    ``random_state``, the ensemble's own method makes every tree.

    Each tree made here is fitted by :func:`_build_tree` where the prototype's parameters
    are the Isolation Forest's (an extra tree: random splits, squared error, integer
    leaf and split sizes, no leaf cap, pruning or constraint): the steps of scikit-learn's
    ``BaseDecisionTree._fit`` for such a tree without its per-tree checks."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.params: dict[str, Any] | None = None
        self.fallback = False
        self.direct = False
        self.seeds: list[tuple[Any, int]] = []
        self._draw = np.random.RandomState(0)
        self._tree_rng = np.random.RandomState(0)

    def _prototype(self) -> None:
        from sklearn.base import clone

        m = self.model
        proto = clone(m.estimator_)
        proto.set_params(**{p: getattr(m, p) for p in m.estimator_params})
        params = proto.get_params(deep=False)
        seeded = [k for k in proto.get_params(deep=True) if k.split("__")[-1] == "random_state"]
        plain = all(v is None or isinstance(v, bool | int | float | str | np.number) for v in params.values())
        same = vars(type(proto)(**params)) == vars(proto) if plain else False
        self.fallback = not (same and seeded == ["random_state"])
        self.direct = _direct_build(params)
        self.params = params

    def __call__(self, append: bool = True, random_state: Any = None) -> Any:
        if self.params is None:
            self._prototype()
        m = self.model
        if self.fallback or random_state is None or isinstance(random_state, np.random.RandomState):
            return type(m)._make_estimator(m, append=append, random_state=random_state)
        est = type(m.estimator_)(**self.params)
        self._draw.seed(random_state)
        seed = self._draw.randint(np.iinfo(np.int32).max)
        self._tree_rng.seed(seed)
        est.random_state = self._tree_rng
        if self.direct:
            est.fit = functools.partial(_build_tree, est)  # an instance attribute: shadows the method
        self.seeds.append((est, seed))
        if append:
            m.estimators_.append(est)
        return est

    def restore(self) -> None:
        """Every tree made here holds its integer seed as ``random_state``."""
        for est, seed in self.seeds:
            est.random_state = seed
            vars(est).pop("fit", None)
        self.seeds = []


def _direct_build(params: dict[str, Any]) -> bool:
    """Whether :func:`_build_tree` fits a tree of ``params`` as scikit-learn's ``fit`` does:
    an extra tree of the Isolation Forest's kind."""
    from numbers import Integral

    wanted = {
        "criterion": "squared_error", "splitter": "random", "min_weight_fraction_leaf": 0.0,
        "max_leaf_nodes": None, "ccp_alpha": 0.0, "monotonic_cst": None,
    }
    ints = ("max_depth", "min_samples_split", "min_samples_leaf", "max_features")
    return (
        all(k in params and type(params[k]) is type(v) and params[k] == v for k, v in wanted.items())
        and all(isinstance(params.get(k), Integral) and not isinstance(params[k], bool) for k in ints)
        and isinstance(params.get("min_impurity_decrease"), float)
    )


def _build_tree(est: Any, X: Any, y: Any, sample_weight: Any = None, check_input: bool = True) -> Any:
    """``est.fit(X, y, sample_weight, check_input=False)`` of a tree :func:`_direct_build`
    accepts, for a dense ``X`` and a 1-D ``y`` and ``sample_weight`` (else the tree's own
    ``fit``): the criterion, splitter, tree and depth-first builder that
    ``BaseDecisionTree._fit`` makes for it, fed the same arrays, so the same tree."""
    from sklearn.tree._classes import CRITERIA_REG, DENSE_SPLITTERS
    from sklearn.tree._tree import DepthFirstTreeBuilder, Tree

    y = np.asarray(y)
    if (
        check_input or not isinstance(X, np.ndarray) or X.ndim != 2 or y.ndim != 1 or y.shape[0] != X.shape[0]
        or sample_weight is None or np.ndim(sample_weight) != 1 or len(sample_weight) != X.shape[0]
    ):
        return type(est).fit(est, X, y, sample_weight=sample_weight, check_input=check_input)
    n_samples, est.n_features_in_ = X.shape
    y = np.reshape(y, (-1, 1))
    est.n_outputs_ = 1
    if y.dtype != np.float64 or not y.flags.contiguous:
        y = np.ascontiguousarray(y, dtype=np.float64)
    sample_weight = np.ascontiguousarray(sample_weight, dtype=np.float64)
    if not sample_weight.any():
        raise ValueError("Sample weights must contain at least one non-zero number.")
    min_samples_leaf = est.min_samples_leaf
    min_samples_split = max(est.min_samples_split, 2 * min_samples_leaf)
    est.max_features_ = est.max_features
    min_weight_leaf = est.min_weight_fraction_leaf * np.sum(sample_weight)
    criterion = CRITERIA_REG[est.criterion](1, n_samples)
    splitter = DENSE_SPLITTERS[est.splitter](
        criterion, est.max_features_, min_samples_leaf, min_weight_leaf, est.random_state, None
    )
    est.tree_ = Tree(est.n_features_in_, np.array([1], dtype=np.intp), 1)
    builder = DepthFirstTreeBuilder(
        splitter, min_samples_split, min_samples_leaf, min_weight_leaf, est.max_depth,
        est.min_impurity_decrease,
    )
    builder.build(est.tree_, X, y, sample_weight, None)
    return est


#: forests fitted lately, by their fit data's bytes and parameters (most recent last)
_FORESTS: OrderedDict[tuple, Any] = OrderedDict()
_FORESTS_LOCK = threading.Lock()
#: how many fitted forests :func:`fitted_isolation_forest` keeps
FORESTS_KEPT = 12


def fitted_isolation_forest(X: np.ndarray, **params: Any) -> Any:
    """:func:`fit_isolation_forest`, the forest kept for the next fits on the same data.

    The fitted forest is a function of ``X`` and the parameters alone, so detectors fitted
    on the same windows share it (e.g. a run fitted on itself under two detection settings
    that differ only in thresholds or in the other detectors' clip). The fitted forest is
    shared, not copied: it is read, never changed, after its fit. Up to :data:`FORESTS_KEPT`
    forests are kept, the most recently used. Only a seeded fit (an integer
    ``random_state``) is kept: without a seed, each fit draws its own forest."""
    import hashlib

    if not isinstance(params.get("random_state"), int | np.integer):
        return fit_isolation_forest(X, **params)
    X = np.ascontiguousarray(X)
    digest = hashlib.blake2b(X.data, digest_size=20).digest()
    key = (X.shape, X.dtype.str, digest, tuple(sorted(params.items())))
    with _FORESTS_LOCK:
        model = _FORESTS.get(key)
        if model is not None:
            _FORESTS.move_to_end(key)
            return model
    model = fit_isolation_forest(X, **params)
    with _FORESTS_LOCK:
        _FORESTS[key] = model
        while len(_FORESTS) > FORESTS_KEPT:
            _FORESTS.popitem(last=False)
    return model


def fit_isolation_forest(X: np.ndarray, **params: Any) -> Any:
    """``sklearn.ensemble.IsolationForest(**params).fit(X)``, its trees made by
    :class:`_TreeMaker` where the installed scikit-learn is one it matches and the trees
    are fitted one after another (the same fitted forest)."""
    import sklearn
    from joblib import effective_n_jobs
    from sklearn.ensemble import IsolationForest

    model = IsolationForest(**params)
    if not sklearn.__version__.startswith(_TREE_MAKER_VERSIONS) or effective_n_jobs(model.n_jobs) != 1:
        return model.fit(X)
    maker = _TreeMaker(model)
    model._make_estimator = maker  # an instance attribute: shadows the method for this fit
    try:
        model.fit(X)
    finally:
        del model._make_estimator
        maker.restore()
    return model


class _ForestWalk:
    """The anomaly scores of a fitted ``IsolationForest`` for many rows at once: all trees
    walked level by level in numpy (scikit-learn applies one tree after another, each a
    call), with scikit-learn's arithmetic: the float32 copy of ``X`` compared with each
    split's float64 threshold, per tree ``depth + c(n_leaf) - 1`` from the forest's own
    per-node arrays, added tree after tree, then ``2^(-E[h]/c(ψ))``. Equal to
    ``score_samples`` (a test compares them) for finite inputs without feature subsampling;
    :meth:`of` gives None for a forest it does not cover."""

    def __init__(self, model: Any, path_lengths: Any, leaf_terms: Any, max_samples: int) -> None:
        trees = [est.tree_ for est in model.estimators_]
        width = max(t.node_count for t in trees)
        n_trees = len(trees)
        # node j of tree i is entry i·width + j of the flat arrays; children hold flat entries
        feature = np.zeros((n_trees, width), dtype=np.intp)
        threshold = np.zeros((n_trees, width), dtype=np.float64)
        left = np.zeros((n_trees, width), dtype=np.intp)
        right = np.zeros((n_trees, width), dtype=np.intp)
        leaf_add = np.zeros((n_trees, width), dtype=np.float64)
        depth = 0
        for i, (t, dpl, apl) in enumerate(zip(trees, path_lengths, leaf_terms, strict=True)):
            n = t.node_count
            leaf = t.children_left == -1
            own = np.arange(n)
            feature[i, :n] = np.where(leaf, 0, t.feature)
            threshold[i, :n] = t.threshold
            left[i, :n] = i * width + np.where(leaf, own, t.children_left)  # a leaf points to itself
            right[i, :n] = i * width + np.where(leaf, own, t.children_right)
            leaf_add[i, :n] = dpl + apl - 1.0  # scikit-learn's per-tree term, per node
            depth = max(depth, int(t.max_depth))
        self.feature, self.threshold = feature.ravel(), threshold.ravel()
        self.left, self.right, self.leaf_add = left.ravel(), right.ravel(), leaf_add.ravel()
        self.roots = np.arange(n_trees, dtype=np.intp) * width
        self.depth = depth
        self.denominator = n_trees * _average_path_length([max_samples])

    #: more rows than this are scored by scikit-learn (its per-tree calls then cost less
    #: than the walk's passes over ``rows × trees`` arrays)
    MAX_ROWS = 1024

    @classmethod
    def of(cls, model: Any) -> _ForestWalk | None:
        """The walk of ``model``, or None where scikit-learn's own scoring must be used
        (another version, subsampled features)."""
        import sklearn

        if not sklearn.__version__.startswith(_TREE_MAKER_VERSIONS) or not model.estimators_:
            return None
        try:
            subsampled = model._max_features != model.n_features_in_
            paths, terms = model._decision_path_lengths, model._average_path_length_per_tree
            max_samples = model._max_samples
        except AttributeError:
            return None
        if subsampled or len(paths) != len(model.estimators_):
            return None
        return cls(model, paths, terms, max_samples)

    def scores(self, X: np.ndarray) -> np.ndarray:
        """``-model.score_samples(X)`` of a finite ``X`` (higher: more anomalous)."""
        X = np.ascontiguousarray(X, dtype=np.float32)
        n, p = X.shape
        flat = X.ravel()
        row_start = (np.arange(n, dtype=np.intp) * p)[:, None]
        node = np.repeat(self.roots[None, :], n, axis=0)  # n × trees, flat entries
        for _ in range(self.depth):
            # float32 values against float64 thresholds (numpy compares them in float64)
            go_left = flat.take(row_start + self.feature.take(node)) <= self.threshold.take(node)
            node = np.where(go_left, self.left.take(node), self.right.take(node))
        terms = self.leaf_add.take(node)
        depths = np.zeros(n, order="f")
        for t in range(self.roots.size):  # tree after tree, as scikit-learn adds them
            depths += terms[:, t]
        den = self.denominator
        return 2 ** (-np.divide(depths, den, out=np.ones_like(depths), where=den != 0))


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
    higher: isolated sooner, more anomalous); the threshold is its ``quantile`` on the fit data
    (the paper's 1 % contamination is ``quantile=0.99``), capped at the outlier fence unless
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
        quantile: float = QUANTILE,
        n_estimators: int = 200,
        max_samples: int | str = "auto",
        random_state: int | None = 0,
        n_jobs: int | None = None,
        outlier_fence: bool = OUTLIER_FENCE_ON,
    ) -> None:
        super().__init__(quantile=quantile, outlier_fence=outlier_fence)
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _fit(self, X: np.ndarray) -> None:
        self.model_ = fitted_isolation_forest(
            X,
            n_estimators=self.n_estimators,
            max_samples=self.max_samples,
            contamination="auto",
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )
        self.__dict__.pop("_walk", None)  # made from this forest on first use
        # the explanation's baseline is the mean credit over (a seeded sample of) the fit data,
        # computed on first use so that fit+score stays fast
        rng = np.random.default_rng(self.random_state)
        idx = np.sort(rng.choice(X.shape[0], size=min(X.shape[0], 512), replace=False))
        self._baseline_X = X[idx].copy()
        self._explain_baseline = None

    def _score(self, X: np.ndarray) -> np.ndarray:
        if "_walk" not in self.__dict__:
            self._walk = _ForestWalk.of(self.model_)
        if self._walk is None or X.shape[0] > self._walk.MAX_ROWS or not np.isfinite(X).all():
            return -self.model_.score_samples(X)
        return self._walk.scores(X)

    def __getstate__(self) -> dict:
        # pickles hold the fitted forest, not the arrays scoring walks it with (made again on use)
        state = super().__getstate__()
        state.pop("_walk", None)
        return state

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
