"""2-D projections (UMAP, t-SNE) of window features, to see whether windows group
by workload and where the anomalous ones fall."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

import numpy as np
import polars as pl

from reveal_lab.config import WindowConfig
from reveal_lab.telemetry import Run

__all__ = [
    "window_feature_table", "window_feature_piece", "reduce_window_features", "WindowFeatureFold", "project",
    "standardized",
]


def window_feature_table(
    runs: Iterable[Run],
    window: WindowConfig | None = None,
    *,
    anomalous: dict[tuple[str, int], bool] | None = None,
    max_windows_per_run: int | None = 200,
) -> tuple[np.ndarray, pl.DataFrame]:
    """Window features of several runs on the metric–feature pairs they share.

    Columns are matched by host-free metric key and feature, so runs from different
    hosts line up. Returns ``(X, rows)`` where ``rows`` has ``run_id, workload,
    window_id, anomalous`` (``anomalous`` from the ``(run_id, window_id)`` map, else False).
    """
    pieces = [window_feature_piece(run, window, max_windows_per_run) for run in runs]
    return reduce_window_features(pieces, anomalous)


def window_feature_piece(
    run: Run, window: WindowConfig | None = None, max_windows_per_run: int | None = 200
) -> list[tuple[dict[str, np.ndarray], pl.DataFrame]]:
    """One run's part of :func:`window_feature_table`: per host, its (evenly sampled)
    windows' features by metric-feature pair and their ``run_id, workload, window_id``.
    Only the sampled windows' features are computed (a window's features are its own
    samples' alone)."""
    from reveal_lab.features import make_windows, pair_keys, window_features

    window = window or WindowConfig()
    out = []
    for _host, sub in run.split_hosts().items():
        windows = make_windows(sub.frame, window)
        if max_windows_per_run and windows.height > max_windows_per_run:
            windows = windows[np.linspace(0, windows.height - 1, max_windows_per_run).astype(int)]
        wf = window_features(sub.frame, window, windows=windows)
        keys = pair_keys(wf.pairs)
        X = np.asarray(wf.X, dtype=float)
        wid = np.asarray(wf.windows.get_column("window_id").to_list())
        meta = pl.DataFrame(
            {
                "run_id": run.meta.run_id,
                "workload": run.meta.workload or "",
                "window_id": wid.astype(np.int64),
            }
        )
        out.append((dict(zip(keys, X.T, strict=True)), meta))
    return out


def reduce_window_features(
    pieces: Sequence[list[tuple[dict[str, np.ndarray], pl.DataFrame]]],
    anomalous: dict[tuple[str, int], bool] | None = None,
) -> tuple[np.ndarray, pl.DataFrame]:
    """:func:`window_feature_table` from each run's :func:`window_feature_piece`."""
    fold = WindowFeatureFold()
    for piece in pieces:
        fold(piece)
    return fold.result(anomalous)


class WindowFeatureFold:
    """:func:`reduce_window_features` one piece at a time (:func:`reveal_lab.scale.map_runs`'s
    ``fold``): each host's windows are kept only on the metric-feature pairs every piece so
    far has, so the study holds the selected windows on the shared pairs and no run's whole
    piece after its turn. Fed in run order, :meth:`result` equals the reduce on the list."""

    def __init__(self) -> None:
        self.common: list[str] | None = None  # sorted pairs every part so far has
        self.blocks: list[np.ndarray] = []  # each part's windows on ``common``
        self.metas: list[pl.DataFrame] = []

    def __call__(self, piece: list[tuple[dict[str, np.ndarray], pl.DataFrame]]) -> None:
        for m, meta in piece:
            if self.common is None:
                common = sorted(m)
            else:
                common = [k for k in self.common if k in m]
                if len(common) < len(self.common):
                    keep = np.flatnonzero([k in m for k in self.common])
                    self.blocks = [b[:, keep] for b in self.blocks]
            self.common = common
            block = np.column_stack([m[k] for k in common]) if common else np.empty((meta.height, 0))
            self.blocks.append(block)
            self.metas.append(meta)

    def result(self, anomalous: dict[tuple[str, int], bool] | None = None) -> tuple[np.ndarray, pl.DataFrame]:
        """``(X, rows)`` as :func:`window_feature_table` gives them."""
        if self.common is None:
            raise ValueError("no runs to project")
        if not self.common:
            raise ValueError("the runs share no metric-feature pair; cannot project them together")
        X = np.vstack(self.blocks)
        rows = pl.concat(self.metas)
        amap = anomalous or {}
        rows = rows.with_columns(
            pl.Series(
                "anomalous",
                [bool(amap.get((r, int(w)), False)) for r, w in rows.select("run_id", "window_id").iter_rows()],
            )
        )
        return X, rows


def standardized(X: np.ndarray) -> np.ndarray:
    """A standardized copy of ``X`` (rows: windows): non-finite values replaced by their
    column's median (0 where a column has none), constant columns dropped, each column
    centred and scaled to unit variance. Worked in place on one copy, so it holds about
    twice ``X`` at most."""
    X = np.array(X, dtype=float)
    if X.ndim != 2 or X.shape[0] < 3:
        raise ValueError(f"need at least 3 rows to project, got shape {X.shape}")
    X[~np.isfinite(X)] = np.nan
    X[:, np.isnan(X).all(axis=0)] = 0.0
    rows, cols = np.nonzero(np.isnan(X))
    if len(rows):
        X[rows, cols] = np.nanmedian(X, axis=0)[cols]
    sd = X.std(axis=0)
    X = X[:, sd > 0]  # a copy in the layout the means are summed in (also when every column stays)
    X -= X.mean(axis=0)
    X /= sd[sd > 0]
    return X


#: rows from which umap-learn finds neighbours approximately (pynndescent) rather than exactly
UMAP_EXACT_BELOW = 4096


def _exact_knn(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | tuple[None, None, None]:
    """The ``k`` nearest neighbours of each row of ``X`` (indices, distances) as umap-learn's
    exact path for fewer than :data:`UMAP_EXACT_BELOW` rows finds them: its Euclidean distance
    on the rows as float32, a stable sort of each row. Given to ``UMAP(precomputed_knn=...)``,
    the embedding is the one UMAP computes itself, bit for bit, without compiling its parallel
    sort (several seconds of numba compilation in each process). ``(None, None, None)``, UMAP's
    own default, from :data:`UMAP_EXACT_BELOW` rows on."""
    if X.shape[0] >= UMAP_EXACT_BELOW:
        return None, None, None
    from sklearn.metrics import pairwise_distances
    from umap.distances import named_distances

    dmat = pairwise_distances(np.asarray(X, dtype=np.float32), metric=named_distances["euclidean"])
    indices = np.argsort(dmat, axis=1, kind="stable")[:, :k].astype(np.int32)
    return indices, dmat[np.arange(dmat.shape[0])[:, None], indices]


def project(
    X: np.ndarray, method: str = "umap", *, seed: int = 0, n_neighbors: int = 15, perplexity: float = 30.0
) -> np.ndarray:
    """``float[n, 2]``: UMAP (umap-learn) or t-SNE (scikit-learn) of :func:`standardized` features."""
    X = standardized(X)
    if X.shape[1] == 0:
        raise ValueError("every feature is constant; nothing to project")
    n = X.shape[0]
    if method == "umap":
        import umap  # lazily: umap-learn is heavy

        k = min(n_neighbors, n - 1)
        reducer = umap.UMAP(n_components=2, n_neighbors=k, random_state=seed, precomputed_knn=_exact_knn(X, k))
        with warnings.catch_warnings():  # no search index given: UMAP.transform is not used here
            warnings.filterwarnings("ignore", message=r"precomputed_knn\[2\]", category=UserWarning)
            return np.asarray(reducer.fit_transform(X))
    if method == "tsne":
        from sklearn.manifold import TSNE

        return TSNE(
            n_components=2, perplexity=min(perplexity, (n - 1) / 3), random_state=seed, init="pca"
        ).fit_transform(X)
    raise ValueError(f"projection method {method!r}; expected 'umap' or 'tsne'")
