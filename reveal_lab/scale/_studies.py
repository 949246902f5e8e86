"""Cross-run studies as Dask tasks: pruning union, DTW reproducibility, window granularity.

How each study is cut into tasks (each worker loads its own runs by reference):

* ``granularity`` — one task per run: that run detected at every (window, stride)
  setting (:func:`reveal_lab.studies.granularity_intervals` on the one run); the
  client concatenates the intervals and compares them
  (:func:`~reveal_lab.studies.granularity_comparison`, ``granularity_table``).
* ``dtw`` — one task per run extracts the traces of the study's metrics (small:
  one float vector per metric); one task per metric then runs
  :func:`reveal_lab.studies.dtw_reproducibility` on that metric across all
  workloads. Metrics are independent in the test, so the union of the per-metric
  results is the single-process result (the other workloads each run is compared with,
  ``max_other_workloads`` in ``dtw_kwargs``, come from one seeded order of the workload
  names, the same on every engine and in every metric's task).
* ``pruning`` — one task per workload: load that workload's runs (at most
  ``max_runs_per_workload``), prune (:func:`reveal_lab.pruning.prune`); the client
  takes the union of the selected metric keys.

Every study returns polars frames; ``scheduler=INPROCESS`` runs the same task
functions serially here (the reference the Dask path is tested against).
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from reveal_lab.scale._cluster import completed
from reveal_lab.scale._tasks import INPROCESS, RunRef, load_ref, run_refs

__all__ = [
    "run_studies",
    "granularity_task",
    "traces_task",
    "dtw_metric_task",
    "prune_workload_task",
    "STUDY_NAMES",
    "common_dynamic_metrics",
]

log = logging.getLogger(__name__)

STUDY_NAMES = ("pruning", "dtw", "granularity")


# -- task functions (module level: pickled to the workers by reference) ---------------------------
def granularity_task(
    ref: RunRef,
    granularities: Sequence[tuple[float, float]] | None,
    preset: str,
    loader: Callable[[RunRef], Any] | None = None,
) -> pl.DataFrame:
    from reveal_lab.studies import GRANULARITIES, granularity_intervals

    run = (loader or load_ref)(ref)
    return granularity_intervals([run], granularities or GRANULARITIES, preset=preset)


def _keyed_columns(run: Any) -> dict[str, str]:
    """host-free metric key -> column, for the run's dynamic metrics."""
    from reveal_lab.telemetry import classify, metric_columns, parse_metric_name

    out = {}
    for c in metric_columns(run.frame):
        m = parse_metric_name(c)
        if m is None or classify(m).kind != "dynamic":
            continue
        out.setdefault(m.key(), c)
    return out


def traces_task(
    ref: RunRef, metrics: Sequence[str] | None, loader: Callable[[RunRef], Any] | None = None
) -> tuple[str, str | None, dict[str, np.ndarray]]:
    """``(run_id, workload, {metric key: trace})`` for the study's metrics (all dynamic ones if None)."""
    run = (loader or load_ref)(ref)
    cols = _keyed_columns(run)
    keys = list(cols) if metrics is None else [k for k in metrics if k in cols]
    traces = {k: run.frame.get_column(cols[k]).cast(pl.Float64).to_numpy().copy() for k in keys}
    return run.meta.run_id, run.meta.workload, traces


def dtw_metric_task(
    metric: str, by_workload: Mapping[str, Sequence[np.ndarray]], kwargs: Mapping[str, Any]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    from reveal_lab.studies import dtw_reproducibility

    s = dtw_reproducibility({w: {metric: list(rs)} for w, rs in by_workload.items()}, **dict(kwargs))
    return s.pairs, s.distances


def prune_workload_task(
    workload: str, refs: Sequence[RunRef], threshold: float, loader: Callable[[RunRef], Any] | None = None
) -> Any:
    from reveal_lab.pruning import prune

    frames = [(loader or load_ref)(r).frame for r in refs]
    return prune({workload: frames}, threshold)


def common_dynamic_metrics(keysets: Sequence[set[str]], limit: int | None) -> list[str]:
    """Metric keys present in every run, sorted (first ``limit``).

    >>> common_dynamic_metrics([{"a", "b", "c"}, {"b", "c"}], 1)
    ['b']
    """
    if not keysets:
        return []
    common = sorted(set.intersection(*map(set, keysets)))
    return common[:limit] if limit else common


# -- driver ----------------------------------------------------------------------------------------
class _Runner:
    """``map(fn, items, *args)`` on Dask (results in item order) or serially here."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def map(
        self, fn: Callable[..., Any], items: Sequence[Any], *args: Any, window: int | None = None
    ) -> list[Any]:
        if self.client is None:
            return [fn(it, *args) for it in items]
        from distributed import as_completed

        n = len(items)
        out: list[Any] = [None] * n
        limit = window or max(2, 2 * sum(self.client.nthreads().values()))
        it = iter(range(n))
        pos: dict[str, int] = {}

        def submit() -> Any | None:
            i = next(it, None)
            if i is None:
                return None
            f = self.client.submit(fn, items[i], *args, pure=False)
            pos[f.key] = i
            return f

        ac = as_completed([f for f in (submit() for _ in range(limit)) if f is not None])
        for f in completed(self.client, ac):
            out[pos.pop(f.key)] = f.result()  # a study needs every part: an error stops it
            f.release()
            nxt = submit()
            if nxt is not None:
                ac.add(nxt)
        return out


def run_studies(
    data: Any,
    studies: Sequence[str],
    *,
    scheduler: Any = None,
    refs: Sequence[RunRef] | None = None,
    preset: str = "paper",
    loader: Callable[[RunRef], Any] | None = None,
    granularities: Sequence[tuple[float, float]] | None = None,
    dtw_metrics: Sequence[str] | None = None,
    dtw_max_metrics: int | None = 20,
    dtw_kwargs: Mapping[str, Any] | None = None,
    max_runs_per_workload: int | None = None,
    workloads: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run the named cross-run studies on Dask (``scheduler`` as in :func:`scan`).

    Returns ``{"granularity_intervals", "granularity_comparison", "granularity_table",
    "dtw_pairs", "dtw_distances", "dtw_summary", "pruning_selected", "pruning_by_workload"}``
    (the keys of the studies asked for), all polars frames.
    ``dtw_kwargs``: keyword arguments of :func:`reveal_lab.studies.dtw_reproducibility`
    (``length``, ``window``, ``pairing``, ``max_other_workloads``, ...).
    """
    from reveal_lab.config import get_preset

    unknown = sorted(set(studies) - set(STUDY_NAMES))
    if unknown:
        raise ValueError(f"unknown studies {unknown}; expected some of {list(STUDY_NAMES)}")
    ref_list = list(refs) if refs is not None else run_refs(data)
    p = get_preset(preset)
    if scheduler == INPROCESS:
        session = contextlib.nullcontext(None)
    else:
        from reveal_lab.scale._cluster import dask_client

        session = dask_client(scheduler, quiet=True)
    with session as client:
        return _studies(
            _Runner(client),
            studies,
            ref_list,
            p,
            preset,
            loader,
            granularities,
            dtw_metrics,
            dtw_max_metrics,
            dtw_kwargs,
            max_runs_per_workload,
            workloads,
        )


def _studies(
    runner: _Runner,
    studies: Sequence[str],
    refs: list[RunRef],
    p: Any,
    preset: str,
    loader: Callable[[RunRef], Any] | None,
    granularities: Sequence[tuple[float, float]] | None,
    dtw_metrics: Sequence[str] | None,
    dtw_max_metrics: int | None,
    dtw_kwargs: Mapping[str, Any] | None,
    max_runs_per_workload: int | None,
    workloads: Mapping[str, str] | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "granularity" in studies:
        from reveal_lab.studies import granularity_comparison, granularity_table

        parts = runner.map(granularity_task, refs, granularities, preset, loader)
        iv = pl.concat(parts, how="vertical") if parts else pl.DataFrame()
        comp = granularity_comparison(iv)
        out["granularity_intervals"] = iv
        out["granularity_comparison"] = comp
        out["granularity_table"] = granularity_table(comp)
    if "dtw" in studies:
        got = runner.map(traces_task, refs, dtw_metrics, loader)
        metrics = (
            list(dtw_metrics)
            if dtw_metrics
            else common_dynamic_metrics([set(t) for _, _, t in got], dtw_max_metrics)
        )
        by_metric: dict[str, dict[str, list[np.ndarray]]] = {m: defaultdict(list) for m in metrics}
        for _run_id, workload, traces in got:
            w = workload or "unknown"
            for m in metrics:
                if m in traces:
                    by_metric[m][w].append(traces[m])
        kwargs = dict(dtw_kwargs or {})
        res = runner.map(_dtw_item, [(m, dict(by_metric[m])) for m in metrics], kwargs)
        from reveal_lab.studies import DTWStudy

        pairs = pl.concat([r[0] for r in res]) if res else pl.DataFrame()
        dist = pl.concat([r[1] for r in res]) if res else pl.DataFrame()
        study = DTWStudy(pairs, dist, float(kwargs.get("alpha", 0.05)))
        out["dtw_pairs"] = pairs
        out["dtw_distances"] = dist
        out["dtw_summary"] = study.summary() if pairs.height else pl.DataFrame()
    if "pruning" in studies:
        limit = max_runs_per_workload if max_runs_per_workload is not None else p.max_runs_per_workload
        groups: dict[str, list[RunRef]] = defaultdict(list)
        for r in refs:
            w = (workloads or {}).get(r.run_id) or _workload_of(r)
            if limit is None or len(groups[w]) < limit:
                groups[w].append(r)
        names = sorted(groups)
        results = runner.map(_prune_item, [(w, groups[w]) for w in names], p.prune.threshold, loader)
        rows = []
        for w, res in zip(names, results, strict=True):
            rows.extend({"workload": w, "metric": k} for k in res.selected.get(w, []))
        by_w = pl.DataFrame(rows, schema={"workload": pl.String, "metric": pl.String})
        out["pruning_by_workload"] = by_w
        # the diagnostic space: the union over workloads (workloads are pruned independently)
        out["pruning_selected"] = (
            by_w.group_by("metric").agg(pl.col("workload").n_unique().alias("n_workloads")).sort("metric")
        )
        out["pruning_clusters"] = (
            pl.concat([r.clusters for r in results], how="diagonal_relaxed") if results else pl.DataFrame()
        )
    return out


def _dtw_item(
    item: tuple[str, Mapping[str, Sequence[np.ndarray]]], kwargs: Mapping[str, Any]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    metric, by_workload = item
    return dtw_metric_task(metric, by_workload, kwargs)


def _prune_item(
    item: tuple[str, Sequence[RunRef]], threshold: float, loader: Callable[[RunRef], Any] | None
) -> Any:
    workload, refs = item
    return prune_workload_task(workload, refs, threshold, loader)


def _workload_of(ref: RunRef) -> str:
    from reveal_lab.scale._tasks import _open_dataset

    idx = _open_dataset(ref.root).index
    row = idx.filter(pl.col("run_id") == ref.run_id)
    return str(row.get_column("workload")[0]) if row.height and "workload" in idx.columns else "unknown"
