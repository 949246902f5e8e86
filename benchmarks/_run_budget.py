"""The per-run cost budget of a reproduction and the DTW sample's effect, for ``public_scale.py``.

* :func:`stage_budget`: the stages every detection goes through, timed one after the other on
  a few runs of the proxy with the cache off (read, derive, window, features, each detector's
  fit and scores, attribution), in the pruned space the studies score in (a reproduction's
  ``pruning.json``) or in every metric, in wall and CPU seconds per run and as shares of the CPU.
* :func:`map_step_budget`: each study's map step as a reproduction ran it, from the per-run
  task log (``OUT/cache/tasks.tsv``, :func:`reveal_lab.scale.task_times`): per notebook and
  task, seconds per run, the share of the reproduction's per-run work, and the part spent
  reading runs.
* :func:`dtw_sample_effect`: notebook 05's study on the proxy with each run compared with a
  sample of K other workloads' medians against every other workload: how many labels and ranks
  change.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl


def _timed(sink: dict[str, list[float]], name: str, fn, *args, **kwargs):  # noqa: ANN001, ANN202
    w, c = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    acc = sink.setdefault(name, [0.0, 0.0])
    acc[0] += time.perf_counter() - w
    acc[1] += time.process_time() - c
    return out


def _budget_refs(data: Path, spaces: Path | None) -> list[tuple[Any, Any]]:
    """The fault-free runs of ``data``, the platforms' sections taken in turn, each with the
    pruned space it is scored in: its section's file of notebook 02 in ``spaces`` (a
    reproduction's output folder; ``None``, or no such file: every metric)."""
    from itertools import chain, zip_longest

    from reveal_lab.pipeline import load_pruning
    from reveal_lab.scale import section_refs
    from reveal_lab.studies import section_file

    sections = section_refs(data, "each", fault_free=True)
    space = {}
    for section in sections:
        path = spaces / section_file("pruning.json", section, list(sections)) if spaces else None
        space[section] = load_pruning(path) if path is not None and path.exists() else None
    turns = zip_longest(*([(r, space[s]) for r in refs] for s, refs in sections.items()))
    return [x for x in chain.from_iterable(turns) if x is not None]


def stage_budget(
    data: Path, n_runs: int, preset: str = "paper", spaces: Path | None = None
) -> dict[str, Any]:
    """Seconds per run (wall and CPU) of each detection stage on the first ``n_runs``
    fault-free runs of ``data`` (the platforms in turn), cache off, in this process (numba
    compiled first on one run that is not counted). ``spaces``: a reproduction's output folder
    whose pruned spaces (notebook 02's ``pruning.json``, one per platform) the runs are viewed
    in, as the studies score them; without it every metric is."""
    from reveal_lab.attribution import attribute
    from reveal_lab.config import get_preset
    from reveal_lab.detectors import DetectorEnsemble, default_detectors
    from reveal_lab.features import make_windows, window_features
    from reveal_lab.pipeline import detection_view, using_cache
    from reveal_lab.scale import load_study_run
    from reveal_lab.telemetry import TelemetryError

    pr = get_preset(preset)
    t: dict[str, list[float]] = {}
    hosts, runs, pruned = 0, -1, 0
    with using_cache(None):
        for ref, space in _budget_refs(data, spaces):
            if runs == n_runs:
                break
            sink: dict[str, list[float]] = {} if runs < 0 else t  # the first run warms the compiled code
            try:
                run = _timed(sink, "read", load_study_run, ref)
            except TelemetryError:  # the proxy's bad inputs on purpose
                continue
            runs += 1
            pruned += runs > 0 and space is not None
            for host, part in run.split_hosts().items():
                hosts += runs > 0
                frame, _ = _timed(sink, "derive", detection_view, part.frame, space)
                windows = _timed(sink, "window", make_windows, frame, pr.window)
                wf = _timed(sink, "features", window_features, frame, pr.window, windows=windows)
                dets = default_detectors(pr.detect)
                for d in dets:
                    _timed(sink, f"detector {d.name}", DetectorEnsemble([d]).fit, wf.X)
                ens = DetectorEnsemble(dets).fit(wf.X)
                _timed(sink, "attribution", attribute, ens.detectors_, wf.X, wf.pairs, wf.windows,
                       ens.result_, top_k=pr.detect.top_k, host=host)
    runs = max(runs, 1)
    cpu = sum(c for _, c in t.values())
    return {
        "runs": runs,
        "host_runs": hosts,
        "preset": preset,
        "runs_in_pruned_space": pruned,
        "seconds_per_run": {k: round(w / runs, 4) for k, (w, _) in t.items()},
        "cpu_seconds_per_run": {k: round(c / runs, 4) for k, (_, c) in t.items()},
        "share": {k: round(c / cpu, 4) for k, (_, c) in t.items()} if cpu else {},
        "note": "each stage alone on the runs' every host, cache off, one after the other in one process; "
        "a detector's time is its fit and scores on the run's own windows; derive: the detection view "
        "(derived metrics, static and constant columns out, restricted to the run's platform's pruned space "
        "when runs_in_pruned_space counts it); share: of the CPU seconds",
    }


def map_step_budget(cache: Path, runs: int) -> dict[str, Any]:
    """Per notebook and task of a reproduction (from ``cache/tasks.tsv``): the tasks, seconds
    per run of the reproduction (``runs``), the share of all per-run work and the seconds spent
    loading runs (from their files or the cache)."""
    from reveal_lab.scale import task_times

    tasks = task_times(cache)
    if not tasks.height:
        return {}
    by = (
        tasks.group_by("notebook", "task", maintain_order=True)
        .agg(pl.len().alias("tasks"), *(pl.col(c).sum() for c in ("seconds", "read_seconds", "reads")))
        .sort("notebook", "task")
    )
    total = float(by["seconds"].sum())
    return {
        "runs": runs,
        "per_run_s": round(total / runs, 3) if runs else None,
        "steps": [
            {
                "notebook": nb, "task": task, "tasks": n, "reads": reads,
                "seconds_per_run": round(s / runs, 4) if runs else None,
                "read_seconds_per_run": round(r / runs, 4) if runs else None,
                "share": round(s / total, 4) if total else None,
            }
            for nb, task, n, s, r, reads in by.iter_rows()
        ],
        "note": "seconds of the per-run tasks (the map steps) as the reproduction ran them, divided by its "
        "runs; the rest of a notebook's time (kernel, reduce, figures) is not in them",
    }


def dtw_sample_effect(
    data: Path, samples: tuple[int, ...] = (1, 2, 3), length: int = 256, max_metrics: int | None = None
) -> dict[str, Any]:
    """Notebook 05's study (fault-free runs, by phase, every platform apart) on ``data`` with
    each run compared with K other workloads' medians (one seeded order per platform) against
    the full comparison (every other workload): per K, the workload-metric pairs whose labels
    change (two-sided significance, one-sided significance, closer within) and the metrics whose
    rank by effect size changes, with the seconds of each study. ``max_metrics``: the first so
    many metrics (sorted), as notebook 05's parameter of that name."""
    from reveal_lab import scale, studies

    sections = scale.section_refs(str(data), "each", fault_free=True)
    out: dict[str, Any] = {"samples": list(samples), "max_metrics": max_metrics, "sections": {}}
    for section, refs in sections.items():
        mapped = scale.map_runs(studies.dtw_piece, refs, True, length, fault_free=True, progress=False)
        traces = studies.reduce_dtw(mapped.pieces, max_metrics=max_metrics)
        t = time.perf_counter()
        full = studies.dtw_reproducibility(traces, length=length, pairing="auto", prepared=True,
                                           max_other_workloads=None)
        rows = {"full": {"seconds": round(time.perf_counter() - t, 2), **_shares(full)}}
        for k in samples:
            t = time.perf_counter()
            s = studies.dtw_reproducibility(traces, length=length, pairing="auto", prepared=True,
                                            max_other_workloads=k)
            rows[f"K={k}"] = {"seconds": round(time.perf_counter() - t, 2), **_shares(s), **_changes(full, s)}
        out["sections"][section] = {"runs": len(mapped.run_ids), "workloads": len(traces), **rows}
    return out


def _shares(s: Any) -> dict[str, Any]:
    summary = s.summary().row(0, named=True)
    return {
        "pairs": s.pairs.height,
        "share_significant_pct": round(summary["share_significant_pct"], 2),
        "share_one_sided_pct": round(summary["share_one_sided_pct"], 2),
        "share_metrics_one_sided_pct": round(summary["share_metrics_one_sided_pct"], 2),
    }


def _changes(full: Any, s: Any) -> dict[str, Any]:
    keys = ["workload", "metric"]
    j = full.pairs.join(s.pairs, on=keys, suffix="_k")
    changed = {
        c: int((j[c] != j[f"{c}_k"]).sum()) for c in ("significant", "significant_one_sided", "closer_within")
    }
    m = full.by_metric.join(s.by_metric, on="metric", suffix="_k")
    rank = m.select(
        pl.col("effect_size").rank("ordinal", descending=True).alias("r"),
        pl.col("effect_size_k").rank("ordinal", descending=True).alias("rk"),
        (pl.col("significant_one_sided") != pl.col("significant_one_sided_k")).alias("flip"),
    )
    eff = np.abs(j["effect_size"].to_numpy() - j["effect_size_k"].to_numpy())
    return {
        "pairs_changed": changed,
        "metrics_significance_changed": int(rank["flip"].sum()),
        "metrics_rank_changed": int((rank["r"] != rank["rk"]).sum()),
        "metrics": m.height,
        "median_abs_effect_change": round(float(np.nanmedian(eff)), 4) if eff.size else None,
    }
