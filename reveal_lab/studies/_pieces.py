"""The studies as map + reduce over runs: what each study keeps of one run (a *piece*:
small, picklable, computed where the run is loaded) and how the pieces are reduced to
the study's tables. Each ``*_piece(run, ...)`` is a module-level function that
:func:`reveal_lab.scale.map_runs` applies to one run at a time, in this process or on a
Dask worker; each ``reduce_*`` takes the pieces in run order and gives what the study
computed on the list of runs, with the same numbers.

* overview (01): the run's row of :func:`run_table` and its usage samples;
* pruning (02): per run and host, the correlation matrix and variances of its metrics
  (:func:`reveal_lab.pruning.run_correlation`), raw and as the pruned space is fitted
  (trimmed, derived metrics added), summed per workload into fixed-size accumulators;
* DTW (05): per run and host, each metric's trace z-normalized and resampled to the
  study's length, with what the metric selection needs (finite samples, varies or not);
* granularity (04): the run's merged anomalous intervals at every granularity;
* detection (03): the facts that choose a run's baseline (:func:`run_facts`,
  :func:`baseline_ids`), then the run detected with its baseline runs
  (:func:`reveal_lab.studies.detect_one`; :func:`reveal_lab.scale.detect_runs` loads them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from reveal_lab.telemetry import Run

if TYPE_CHECKING:
    from reveal_lab.pipeline import DetectionPolicy

__all__ = [
    "overview_piece",
    "reduce_overview",
    "PruningPiece",
    "pruning_piece",
    "PruningFold",
    "reduce_pruning",
    "dtw_piece",
    "reduce_dtw",
    "granularity_piece",
    "reduce_granularity",
    "run_facts",
    "baseline_ids",
]


# -- 01 overview ----------------------------------------------------------------------------------
def overview_piece(run: Run, max_samples_per_run: int = 2000) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The run's row of :func:`run_table` and its samples of :func:`usage_samples`."""
    from reveal_lab.studies._data import run_table
    from reveal_lab.studies._usage import usage_samples

    return run_table([run]), usage_samples([run], max_samples_per_run=max_samples_per_run)


def reduce_overview(pieces: Sequence[tuple[pl.DataFrame, pl.DataFrame]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(run_table, usage_samples)`` over every run, as on the list of runs."""
    from reveal_lab.studies._data import run_table
    from reveal_lab.studies._usage import usage_samples

    tables = [t for t, _ in pieces]
    samples = [s for _, s in pieces if s.height]
    return (
        pl.concat(tables) if tables else run_table([]),
        pl.concat(samples) if samples else usage_samples([]),
    )


# -- 02 pruning -----------------------------------------------------------------------------------
@dataclass
class PruningPiece:
    """One run's part of the pruning study: its correlation pieces as recorded (``raw``) and
    as the pruned space is fitted (``fit``: trimmed, derived metrics added)."""

    run_id: str
    workload: str
    fault_free: bool
    raw: list[Any]
    fit: list[Any]


def pruning_piece(
    run: Run, trim: bool | str = True, min_periods: int = 3, recorded: bool = True
) -> PruningPiece:
    """The pruning study's piece of one run (see :class:`PruningPiece`); without
    ``recorded``, its ``raw`` part (the run as recorded, Fig. 4's) is left empty, for a fold
    that only fits the space (:meth:`PruningFold.space`)."""
    from reveal_lab.pipeline import pruning_frame
    from reveal_lab.pruning import run_correlations
    from reveal_lab.studies._detection import is_fault_free

    return PruningPiece(
        run.meta.run_id,
        run.meta.workload or "unknown",
        is_fault_free(run),
        run_correlations(run.frame, min_periods) if recorded else [],
        run_correlations(pruning_frame(run, trim), min_periods),
    )


class PruningFold:
    """The pruning study's reduce, one piece at a time (:func:`reveal_lab.scale.map_runs`'s
    ``fold``): each workload's pieces summed into fixed-size accumulators as the runs come, so
    the study holds one accumulator per workload and no run's piece after its turn. Fed in
    run order, :meth:`result` gives the same numbers as :func:`reduce_pruning` on the list."""

    def __init__(self) -> None:
        from reveal_lab.pruning import SpaceAccumulator

        self._acc = SpaceAccumulator
        self.raw: dict[str, Any] = {}
        self.fit: dict[str, Any] = {}  # the fault-free runs' fit pieces
        self.fit_any: dict[str, Any] | None = {}  # every run's, until a fault-free run comes
        self.free_ids: list[str] = []
        self.all_ids: list[str] = []

    def _add(self, into: dict[str, Any], workload: str, parts: list[Any]) -> None:
        for c in parts:
            into.setdefault(workload, self._acc()).add(c)

    def __call__(self, piece: PruningPiece) -> None:
        self._add(self.raw, piece.workload, piece.raw)
        self.all_ids.append(piece.run_id)
        if piece.fault_free:
            self._add(self.fit, piece.workload, piece.fit)
            self.free_ids.append(piece.run_id)
            self.fit_any = None  # the space is fitted on the fault-free runs: every run's sum is not needed
        elif self.fit_any is not None:
            self._add(self.fit_any, piece.workload, piece.fit)

    def result(
        self, threshold: float = 0.5, *, method: str = "complete", fit_method: str = "complete",
        trim: bool | str = True,
    ) -> tuple[Any, Any]:
        """``(result, space)`` as :func:`reduce_pruning` gives them."""
        from reveal_lab.pruning import prune_spaces

        space = self.space(threshold, fit_method=fit_method, trim=trim)
        return prune_spaces({w: a.space() for w, a in self.raw.items()}, threshold, method=method), space

    def space(self, threshold: float = 0.5, *, fit_method: str = "complete", trim: bool | str = True) -> Any:
        """The pruned space alone (:meth:`result`'s second part), fitted on the fault-free
        runs' pieces (every run's when none is fault-free); the pieces' ``raw`` part is not
        read (:func:`pruning_piece` without ``recorded``)."""
        from reveal_lab.pipeline import pruning_of
        from reveal_lab.pruning import prune_spaces

        if not self.all_ids:
            raise ValueError("the pruning study needs at least one run")
        fit, ids = (self.fit, self.free_ids) if self.free_ids else (self.fit_any or {}, self.all_ids)
        fitted = prune_spaces({w: a.space() for w, a in fit.items()}, threshold, method=fit_method)
        return pruning_of(fitted, ids, trim)


def reduce_pruning(
    pieces: Sequence[PruningPiece],
    threshold: float = 0.5,
    *,
    method: str = "complete",
    fit_method: str = "complete",
    trim: bool | str = True,
) -> tuple[Any, Any]:
    """``(result, space)``: :func:`reveal_lab.pruning.prune` (``method``) on the runs as
    recorded (the Fig. 4 study), and the pruned space every later study scores in, fitted
    (``fit_method``) on the fault-free runs (all of them when none is) as
    :func:`study_pruning` fits it. ``trim``: as the pieces were made. The same as feeding
    the pieces to a :class:`PruningFold` in order."""
    fold = PruningFold()
    for p in pieces:
        fold(p)
    return fold.result(threshold, method=method, fit_method=fit_method, trim=trim)


# -- 05 DTW ---------------------------------------------------------------------------------------
def dtw_piece(
    run: Run, by_phase: bool = False, length: int | None = 256, kinds: Sequence[str] = ("dynamic",)
) -> list[tuple[str, dict[str, tuple[np.ndarray | None, int, bool]]]]:
    """Per host of the run: ``(workload name, {metric key: (prepared trace, finite samples,
    varies)})``; the trace z-normalized and resampled to ``length``
    (:func:`reveal_lab.studies.prepare_trace`), ``None`` under 2 samples."""
    from reveal_lab.studies._dtw import prepare_trace
    from reveal_lab.telemetry import classify, metric_columns, parse_metric_name

    out = []
    for _host, sub in run.split_hosts().items():
        by_key: dict[str, tuple[np.ndarray | None, int, bool]] = {}
        for c in metric_columns(sub.frame):
            m = parse_metric_name(c)
            if m is None or classify(c).kind not in kinds:
                continue
            x = sub.frame.get_column(c).to_numpy().astype(np.float64)
            finite = np.isfinite(x)
            with np.errstate(all="ignore"):
                varies = bool(finite.any() and np.nanstd(x) > 0)
            by_key[m.key()] = (prepare_trace(x, length) if x.size >= 2 else None, int(finite.sum()), varies)
        name = run.meta.workload or "unknown"
        if by_phase and run.meta.phase:
            name = f"{name} ({run.meta.phase})"
        out.append((name, by_key))
    return out


def reduce_dtw(
    pieces: Sequence[list[tuple[str, dict[str, tuple[np.ndarray | None, int, bool]]]]],
    *,
    metrics: Sequence[str] | None = None,
    max_metrics: int | None = None,
) -> dict[str, dict[str, list[np.ndarray]]]:
    """The prepared traces ``[workload][metric] -> [trace per run and host]`` that
    :func:`collect_traces` selects (metrics every workload has and that vary somewhere,
    or ``metrics``; the first ``max_metrics``), for ``dtw_reproducibility(..., prepared=True)``."""
    per_workload: dict[str, list[dict[str, tuple[np.ndarray | None, int, bool]]]] = {}
    for piece in pieces:
        for name, by_key in piece:
            per_workload.setdefault(name, []).append(by_key)
    from reveal_lab.studies._dtw import trace_keys

    varying = {k for ds in per_workload.values() for d in ds for k, (_, _, v) in d.items() if v}
    keys = trace_keys(per_workload, varying.__contains__, metrics, max_metrics)
    return {
        w: {k: [d[k][0] for d in ds if k in d and d[k][1] >= 2 and d[k][0] is not None] for k in keys}
        for w, ds in per_workload.items()
    }


# -- 04 granularity -------------------------------------------------------------------------------
def granularity_piece(
    run: Run,
    granularities: Sequence[tuple[float, float]],
    settings: Mapping[str, DetectionPolicy],
    preset: str = "paper",
    pruning: Any = None,
    baseline: Sequence[Run] = (),
) -> dict[str, pl.DataFrame]:
    """The run's merged anomalous intervals at every granularity, per detection setting
    (name → policy, :func:`setting_policies`; :func:`granularity_intervals` on this run with
    :func:`detect_windows`): detected alone, but for a setting fitted per workload (the
    paper's, ``thresholds="workload"``), fitted on ``baseline``, the other fault-free runs of
    its workload (:func:`baseline_runs`). ``pruning``: one space, or one per setting by
    name (:func:`reveal_lab.scale.setting_spaces`)."""
    from reveal_lab.studies._granularity import detect_windows, granularity_intervals

    out = {}
    for name, policy in settings.items():
        base = list(baseline) if policy.thresholds == "workload" else None
        space = pruning.get(name) if isinstance(pruning, dict) else pruning
        out[name] = granularity_intervals(
            [run],
            granularities,
            detect=lambda r, wc, policy=policy, base=base, space=space: detect_windows(
                r, wc, preset, pruning=space, policy=policy, baseline=base
            ),
        )
    return out


def reduce_granularity(
    pieces: Sequence[dict[str, pl.DataFrame]], settings: Sequence[str]
) -> dict[str, pl.DataFrame]:
    """Per setting, the intervals of every run (as :func:`granularity_intervals` on the list)."""
    from reveal_lab.studies._granularity import granularity_intervals

    return {p: pl.concat([pc[p] for pc in pieces]) if pieces else granularity_intervals([]) for p in settings}


# -- 03 detection ---------------------------------------------------------------------------------
def run_facts(run: Run) -> dict[str, Any]:
    """What chooses the run's baseline (:func:`baseline_runs`): id, workload, phase, hosts,
    fault-free or not; and its recorded fault (``"none"`` for none)."""
    from reveal_lab.studies._detection import is_fault_free

    m = run.meta
    return {
        "run_id": m.run_id,
        "workload": m.workload,
        "phase": m.phase,
        "hosts": tuple(m.hosts),
        "fault_free": is_fault_free(run),
        "fault": str((m.extra or {}).get("fault") or "none"),
    }


def baseline_ids(facts: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """Per run id, the ids :func:`baseline_runs` would give among the runs of ``facts`` (in
    their order): the other fault-free runs of its workload, phase and hosts.

    >>> f = [{"run_id": i, "workload": "w", "phase": "train", "hosts": ("h",), "fault_free": i != "c"}
    ...      for i in "abc"]
    >>> baseline_ids(f)
    {'a': ['b'], 'b': ['a'], 'c': ['a', 'b']}
    """
    key = {f["run_id"]: (f["workload"], f["phase"], f["hosts"]) for f in facts}
    return {
        f["run_id"]: [g["run_id"] for g in facts if g["run_id"] != f["run_id"] and g["fault_free"]
                      and key[g["run_id"]] == key[f["run_id"]]]
        for f in facts
    }
