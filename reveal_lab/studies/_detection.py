"""Detector runs over a set of runs: anomalous windows per detector and host
(Fig. 2), causes per anomalous window (Fig. 3), a per-workload summary (Table 4),
and raw traces around flagged windows (Fig. 7/8).

Everything here reads the evidence frame of :func:`reveal_lab.pipeline.detect_run`
(columns ``window_id, start, end, host, methods, agreement, subsystem, metric,
feature, score, claim``) with a ``run_id`` column added.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from reveal_lab.attribution import EVIDENCE_SCHEMA as _ATTRIBUTION_EVIDENCE
from reveal_lab.config import get_preset
from reveal_lab.detectors import agreement_score
from reveal_lab.telemetry import TIMESTAMP, Run

if TYPE_CHECKING:
    from reveal_lab.pipeline import DetectionPolicy

__all__ = [
    "run_detection",
    "detection_setup",
    "needs_baseline",
    "detect_one",
    "concat_detections",
    "study_pruning",
    "baseline_runs",
    "is_fault_free",
    "window_flags",
    "dataset_episodes",
    "method_list",
    "detector_window_counts",
    "causes_per_window",
    "detection_summary",
    "top_windows",
    "traces_around",
]

#: the studies' evidence: the run and its workload, then the attribution's evidence columns
#: up to ``claim`` (:data:`reveal_lab.attribution.EVIDENCE_SCHEMA`)
EVIDENCE_SCHEMA = {
    "run_id": pl.String,
    "workload": pl.String,
    **dict(list(_ATTRIBUTION_EVIDENCE.items())[: list(_ATTRIBUTION_EVIDENCE).index("claim") + 1]),
}


def _conform(ev: pl.DataFrame) -> pl.DataFrame:
    cols = []
    for c, t in EVIDENCE_SCHEMA.items():
        if c not in ev.columns:
            cols.append(pl.lit(None, dtype=t).alias(c))
        elif c == "methods" and isinstance(ev.schema[c], pl.List):
            cols.append(pl.col(c).cast(pl.List(pl.String)).list.join(","))
        else:
            cols.append(pl.col(c).cast(t, strict=False))
    return ev.select(cols)


def is_fault_free(run: Run) -> bool:
    """No injected fault recorded for the run (the lab dataset's ``fault``; public runs have none)."""
    return str((run.meta.extra or {}).get("fault") or "none") in ("", "none")


def baseline_runs(run: Run, runs: Sequence[Run]) -> list[Run]:
    """The *other* fault-free runs of the run's workload, phase and hosts among ``runs``:
    the reference the calibrated mode fits on (the run itself never enters its own fit)."""
    m = run.meta
    return [
        r
        for r in runs
        if r is not run
        and r.meta.run_id != m.run_id
        and is_fault_free(r)
        and r.meta.workload == m.workload
        and r.meta.phase == m.phase
        and tuple(r.meta.hosts) == tuple(m.hosts)
    ]


def study_pruning(
    runs: Sequence[Run],
    out_dir: str | Path | None = None,
    *,
    prune: bool | str | Path = True,
    name: str = "pruning.json",
    refit: bool = False,
    threshold: float = 0.5,
) -> object | None:
    """The pruned metric space of one reproduction, fitted once and reused by every study.

    ``prune=False``/``""``: ``None`` (every metric). A path: read it. ``True``: read
    ``out_dir/name`` when it exists (written by the pruning notebook, 02) unless ``refit``;
    otherwise fit it (:func:`reveal_lab.pipeline.fit_pruning`) on the fault-free runs
    among ``runs`` (all of them when none is labelled fault-free) and save it there.
    """
    from reveal_lab.pipeline import fit_pruning, load_pruning, save_pruning

    if prune is False or prune == "" or prune is None:
        return None
    if not isinstance(prune, bool):
        path = Path(prune)
        if not path.is_absolute() and out_dir is not None and not path.exists():
            path = Path(out_dir) / path
        if path.exists() and not refit:
            return load_pruning(path)
        name = path.name
    path = Path(out_dir) / name if out_dir is not None else None
    if path is not None and path.exists() and not refit:
        return load_pruning(path)
    free = [r for r in runs if is_fault_free(r)] or list(runs)
    pr = fit_pruning(free, threshold)
    if path is not None:
        save_pruning(pr, path)
    return pr


def run_detection(
    runs: Iterable[Run],
    *,
    preset: str = "paper",
    window_s: float | None = None,
    stride_s: float | None = None,
    policy: DetectionPolicy | None = None,
    selected: object | None = None,
    pruning: object | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Detect every run with :func:`reveal_lab.pipeline.detect_run`; return
    ``(windows, evidence)`` over all runs, each with ``run_id`` and ``workload`` first.

    ``windows`` has one row per scored window and host (``window_id, start, end, host,
    label_<detector>, score_<detector>, agreement, combined, anomalous, agreement_score``:
    the paper's score that grows with the detectors agreeing,
    :func:`~reveal_lab.detectors.agreement_score`); ``evidence``
    the pipeline's evidence rows. ``pruning``: the metric space
    (:func:`study_pruning`; ``None``: every metric), which replaces the policy's ``prune``;
    ``selected`` (metric keys) overrides it.
    ``policy``: the :class:`~reveal_lab.pipeline.DetectionPolicy` (default
    ``POLICIES["default"]``; a study's setting: :func:`~reveal_lab.studies.setting_policy`).
    Its ``thresholds``: ``auto`` fits each run
    on the other fault-free runs of its workload (:func:`baseline_runs`) with calibrated
    thresholds where there are 2 or more, robust thresholds on the run itself where not;
    ``workload`` is the paper's setting (fitted on the same runs pooled, the top 1 % of their
    scores per detector; a workload with no other fault-free run fitted on the run itself).
    """
    pr, policy = detection_setup(preset, window_s, stride_s, policy)
    runs = list(runs)
    return concat_detections(
        [detect_one(run, baseline_runs(run, runs), pr, policy, selected, pruning) for run in runs]
    )


def detection_setup(
    preset: str = "paper",
    window_s: float | None = None,
    stride_s: float | None = None,
    policy: DetectionPolicy | None = None,
) -> tuple[Any, DetectionPolicy]:
    """``(preset, policy)`` as :func:`run_detection` detects with them: the named preset
    with ``window_s``/``stride_s`` over its windows, and ``policy`` (default
    ``POLICIES["default"]``) as it is."""
    from dataclasses import replace

    from reveal_lab.pipeline import POLICIES

    pr = get_preset(preset)
    if window_s or stride_s:
        pr = replace(
            pr,
            window=replace(
                pr.window,
                **({"window_s": window_s} if window_s else {}),
                **({"stride_s": stride_s} if stride_s else {}),
            ),
        )
    return pr, policy or POLICIES["default"]


def needs_baseline(policy: DetectionPolicy) -> bool:
    """Whether ``policy``'s thresholds fit on baseline runs (else a run is detected alone)."""
    return policy.thresholds in ("auto", "calibrated", "baseline", "workload")


def detect_one(
    run: Run,
    candidates: Sequence[Run],
    preset: Any,
    policy: DetectionPolicy,
    selected: object = None,
    pruning: object = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One run of :func:`run_detection`: ``(windows, evidence)`` with ``run_id`` and
    ``workload`` first. ``candidates``: its :func:`baseline_runs` (used when
    :func:`needs_baseline`; with fewer than 2 and ``thresholds="auto"`` the run is detected
    alone with robust thresholds); ``preset`` and ``policy`` from :func:`detection_setup`."""
    from reveal_lab.pipeline import detect_run

    thresholds = policy.thresholds
    base = list(candidates) if needs_baseline(policy) else []
    mode = thresholds
    if thresholds == "auto" and len(base) < 2:
        mode, base = "robust", []
    det = detect_run(
        run,
        baseline=base or None,
        preset=preset,
        selected=selected,
        policy=policy.with_(prune=pruning if pruning is not None else False, thresholds=mode),
    )
    ids = [
        pl.lit(run.meta.run_id).alias("run_id"),
        pl.lit(run.meta.workload, pl.String).alias("workload"),
    ]
    score = agreement_score(det.windows["agreement"].to_numpy(), det.windows["combined"].to_numpy())
    w = det.windows.with_columns(
        det.decision.alias("anomalous"), pl.Series("agreement_score", score), fit_mode=pl.lit(det.fit_mode)
    )
    return w.select(*ids, pl.all()), _conform(det.evidence.with_columns(*ids))


def concat_detections(
    parts: Sequence[tuple[pl.DataFrame, pl.DataFrame]],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ``(windows, evidence)`` of :func:`run_detection` from each run's :func:`detect_one`."""
    wins = [w for w, _ in parts]
    evs = [e for _, e in parts]
    windows = (
        pl.concat(wins, how="diagonal_relaxed")
        if wins
        else pl.DataFrame(
            schema={
                "run_id": pl.String,
                "workload": pl.String,
                "window_id": pl.Int64,
                "host": pl.String,
                "agreement": pl.Int64,
                "anomalous": pl.Boolean,
            }
        )
    )
    evidence = pl.concat(evs) if evs else pl.DataFrame(schema=EVIDENCE_SCHEMA)
    return windows, evidence


def method_list(methods: str | Sequence[str] | None) -> list[str]:
    """Detector names from a ``methods`` cell (``"zscore,pca"``, ``"zscore+iforest"`` or a list).

    >>> method_list("zscore+pca"), method_list(["iforest"]), method_list(None)
    (['zscore', 'pca'], ['iforest'], [])
    """
    if methods is None:
        return []
    if isinstance(methods, str):
        return [m for m in re.split(r"[,+;|\s]+", methods) if m]
    return [str(m) for m in methods]


def detector_window_counts(windows: pl.DataFrame) -> pl.DataFrame:
    """Fig. 2: windows flagged by each detector on each host (``host, method,
    n_windows, n_scored``), plus ``agreement>=2`` (flagged by at least two)."""
    methods = [c.removeprefix("label_") for c in windows.columns if c.startswith("label_")]
    if windows.height == 0 or not methods:
        return pl.DataFrame(
            schema={"host": pl.String, "method": pl.String, "n_windows": pl.Int64, "n_scored": pl.Int64}
        )
    per = windows.group_by("host").agg(
        *[pl.col(f"label_{m}").cast(pl.Int64).sum().alias(m) for m in methods],
        (pl.col("agreement") >= 2).cast(pl.Int64).sum().alias("agreement>=2"),
        pl.len().cast(pl.Int64).alias("n_scored"),
    )
    return (
        per.unpivot(index=["host", "n_scored"], variable_name="method", value_name="n_windows")
        .select("host", "method", pl.col("n_windows").cast(pl.Int64), "n_scored")
        .sort("host", "method")
    )


def causes_per_window(windows: pl.DataFrame) -> pl.DataFrame:
    """Fig. 3: for each anomalous window, the subsystems the attribution blames
    (jointly) and each subsystem's share of the window's explanation.

    Rows: ``run_id, host, window_id, start, subsystems, n_subsystems, top_subsystem,
    <subsystem>`` (one share column per subsystem, from the pipeline's ``share_<s>``).
    """
    from reveal_lab.telemetry import SUBSYSTEMS

    keep = [s for s in SUBSYSTEMS if f"share_{s}" in windows.columns]
    if windows.height == 0 or "anomalous" not in windows.columns:
        return pl.DataFrame(
            schema={
                "run_id": pl.String,
                "host": pl.String,
                "window_id": pl.Int64,
                "n_subsystems": pl.UInt32,
                **{s: pl.Float64 for s in keep},
            }
        )
    an = windows.filter(pl.col("anomalous"))
    return an.select(
        "run_id",
        "host",
        "window_id",
        "start",
        pl.col("subsystems").fill_null(""),
        pl.col("subsystems")
        .fill_null("")
        .str.split("+")
        .list.eval(pl.element().filter(pl.element() != ""))
        .list.len()
        .alias("n_subsystems"),
        "top_subsystem",
        *[pl.col(f"share_{s}").fill_null(0.0).alias(s) for s in keep],
    ).sort("run_id", "host", "window_id")


def detection_summary(windows: pl.DataFrame, evidence: pl.DataFrame) -> pl.DataFrame:
    """Table 4: per workload, runs and windows analysed, anomalous windows and their
    share, windows flagged by ≥2 detectors, the most-blamed subsystem and metric."""
    if windows.height == 0:
        return pl.DataFrame(
            schema={
                "workload": pl.String,
                "n_runs": pl.UInt32,
                "n_windows": pl.UInt32,
                "n_anomalous": pl.UInt32,
                "anomalous_pct": pl.Float64,
                "n_agree2": pl.UInt32,
                "top_subsystem": pl.String,
                "top_metric": pl.String,
            }
        )
    per = windows.group_by("workload").agg(
        pl.col("run_id").n_unique().alias("n_runs"),
        pl.len().alias("n_windows"),
        pl.col("anomalous").sum().alias("n_anomalous"),
        (pl.col("agreement") >= 2).sum().alias("n_agree2"),
    )
    out = per.with_columns((100 * pl.col("n_anomalous") / pl.col("n_windows")).alias("anomalous_pct"))
    if evidence.height:
        top = (
            evidence.group_by("workload", "subsystem")
            .len()
            .sort("len", "subsystem", descending=[True, False])
            .group_by("workload", maintain_order=True)
            .first()
            .select("workload", top_subsystem="subsystem")
        )
        topm = (
            evidence.group_by("workload", "metric")
            .len()
            .sort("len", "metric", descending=[True, False])
            .group_by("workload", maintain_order=True)
            .first()
            .select("workload", top_metric="metric")
        )
        out = out.join(top, on="workload", how="left").join(topm, on="workload", how="left")
    else:
        out = out.with_columns(
            pl.lit(None, pl.String).alias("top_subsystem"), pl.lit(None, pl.String).alias("top_metric")
        )
    return out.select(
        "workload",
        "n_runs",
        "n_windows",
        "n_anomalous",
        "anomalous_pct",
        "n_agree2",
        "top_subsystem",
        "top_metric",
    ).sort("workload")


def top_windows(evidence: pl.DataFrame, n: int = 2, *, agreement_at_least: int = 1) -> pl.DataFrame:
    """The ``n`` most anomalous windows (highest evidence score, distinct runs first)
    with their top metrics: ``run_id, host, window_id, start, end, score, metrics``."""
    if evidence.height == 0:
        return pl.DataFrame(
            schema={
                "run_id": pl.String,
                "host": pl.String,
                "window_id": pl.Int64,
                "start": pl.Datetime("ms"),
                "end": pl.Datetime("ms"),
                "score": pl.Float64,
                "metrics": pl.List(pl.String),
            }
        )
    ev = evidence.filter(pl.col("agreement").fill_null(1) >= agreement_at_least)
    if ev.height == 0:
        ev = evidence
    w = (
        ev.sort("score", descending=True, nulls_last=True)
        .group_by("run_id", "host", "window_id", maintain_order=True)
        .agg(
            pl.col("start").first(),
            pl.col("end").first(),
            pl.col("score").max(),
            pl.col("metric").unique(maintain_order=True).head(4).alias("metrics"),
        )
    )
    w = w.sort("score", descending=True, nulls_last=True)
    first = w.unique("run_id", keep="first", maintain_order=True)
    rest = w.join(first.select("run_id", "window_id", "host"), on=["run_id", "window_id", "host"], how="anti")
    return pl.concat([first, rest]).head(n)


def traces_around(
    run: Run, start: dt.datetime, end: dt.datetime, metrics: Sequence[str], *, pad_s: float = 15.0
) -> pl.DataFrame:
    """Raw values of ``metrics`` from ``pad_s`` before ``start`` to ``pad_s`` after ``end``.

    Long frame: ``t_s`` (seconds from ``start``), ``metric``, ``value``, ``in_window``.
    A metric the detection view derives (``Derived:...``, a counter's ``_diff``) is read
    from the run with its derived metrics added (:func:`reveal_lab.derive.add_derived`).
    Unknown metric names raise ``ValueError`` naming them.
    """
    frame = run.frame
    have = set(frame.columns)  # a polars frame builds its column list on each access
    if any(m not in have for m in metrics):
        from reveal_lab.derive import add_derived

        derived = add_derived(frame)  # replaces counters by their _diff: keep both names
        frame = frame.with_columns(derived.select([c for c in derived.columns if c not in have]))
        have = set(frame.columns)
    missing = [m for m in metrics if m not in have]
    if missing:
        raise ValueError(f"metrics not in run {run.meta.run_id}: {missing}")
    lo, hi = start - dt.timedelta(seconds=pad_s), end + dt.timedelta(seconds=pad_s)
    part = frame.filter(pl.col(TIMESTAMP).is_between(lo, hi)).select(TIMESTAMP, *metrics)
    long = part.unpivot(index=TIMESTAMP, variable_name="metric", value_name="value")
    return long.select(
        ((pl.col(TIMESTAMP) - start).dt.total_milliseconds() / 1000.0).alias("t_s"),
        "metric",
        "value",
        pl.col(TIMESTAMP).is_between(start, end).alias("in_window"),
    )


def window_flags(windows: pl.DataFrame) -> pl.DataFrame:
    """Per-window flags for per-host timelines (Fig. 2 as the paper): ``run_id, workload, host,
    window_id, start, end``, then ``flag_<detector>`` (bool) and ``score_<detector>`` per
    detector, from :func:`run_detection`'s windows."""
    dets = [c.removeprefix("label_") for c in windows.columns if c.startswith("label_")]
    ids = [c for c in ("run_id", "workload", "host", "window_id", "start", "end") if c in windows.columns]
    return windows.select(
        *ids,
        *[pl.col(f"label_{d}").cast(pl.Boolean).alias(f"flag_{d}") for d in dets],
        *[pl.col(f"score_{d}") for d in dets],
    )


def dataset_episodes(data: str | Path | None = None) -> pl.DataFrame:
    """The labelled fault episodes of a dataset (``labels.csv`` of the lab dataset: ``run, host,
    fault_type, start, end, expected_subsystem, scope``); empty with these columns when the
    dataset has none. ``run`` plus ``_`` plus ``host`` is the run id of a per-host file."""
    from reveal_lab.studies._data import SYNTH, resolve_data

    schema = {
        "run": pl.String,
        "host": pl.String,
        "fault_type": pl.String,
        "start": pl.Datetime("ms"),
        "end": pl.Datetime("ms"),
        "expected_subsystem": pl.String,
        "scope": pl.String,
    }
    root = resolve_data(data)
    if root == SYNTH or not (Path(root) / "labels.csv").exists():
        return pl.DataFrame(schema=schema)
    from reveal_lab.io import read_labels

    lab = read_labels(Path(root) / "labels.csv")
    return lab.select([pl.col(c).cast(t) for c, t in schema.items()])
