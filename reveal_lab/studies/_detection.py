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

import polars as pl

from reveal_lab.config import get_preset
from reveal_lab.telemetry import TIMESTAMP, Run

__all__ = [
    "run_detection",
    "method_list",
    "detector_window_counts",
    "causes_per_window",
    "detection_summary",
    "top_windows",
    "traces_around",
]

EVIDENCE_SCHEMA = {
    "run_id": pl.String,
    "workload": pl.String,
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


def run_detection(
    runs: Iterable[Run], *, preset: str = "full", window_s: float | None = None, stride_s: float | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Detect every run; return ``(windows, evidence)`` over all runs.

    ``windows``: ``run_id, workload, host, n_windows`` (windows analysed per run and host);
    ``evidence``: the pipeline's evidence rows with ``run_id`` and ``workload``.
    """
    from reveal_lab.pipeline import detect_run

    overrides = {}
    if window_s or stride_s:
        p = get_preset(preset)
        from dataclasses import replace

        overrides["window"] = replace(
            p.window,
            **({"window_s": window_s} if window_s else {}),
            **({"stride_s": stride_s} if stride_s else {}),
        )
    pr = get_preset(preset, **overrides)
    win_rows, evs = [], []
    for run in runs:
        det = detect_run(run, preset=pr)
        w = det.windows if isinstance(det.windows, pl.DataFrame) else pl.DataFrame(det.windows)
        hosts = (
            w.group_by("host", maintain_order=True).len().rows()
            if "host" in w.columns
            else [(run.meta.host or ",".join(run.meta.hosts), w.height)]
        )
        win_rows.extend(
            {"run_id": run.meta.run_id, "workload": run.meta.workload, "host": h, "n_windows": n}
            for h, n in hosts
        )
        ev = det.evidence if isinstance(det.evidence, pl.DataFrame) else pl.DataFrame(det.evidence)
        evs.append(
            _conform(
                ev.with_columns(
                    pl.lit(run.meta.run_id).alias("run_id"), pl.lit(run.meta.workload).alias("workload")
                )
            )
        )
    windows = pl.DataFrame(
        win_rows,
        schema={"run_id": pl.String, "workload": pl.String, "host": pl.String, "n_windows": pl.Int64},
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


def detector_window_counts(evidence: pl.DataFrame) -> pl.DataFrame:
    """Fig. 2: anomalous windows per detector and host (``host, method, n_windows``)."""
    if evidence.height == 0:
        return pl.DataFrame(schema={"host": pl.String, "method": pl.String, "n_windows": pl.UInt32})
    ev = (
        evidence.select("run_id", "host", "window_id", "methods")
        .unique()
        .with_columns(
            pl.col("methods").map_elements(method_list, return_dtype=pl.List(pl.String)).alias("method")
        )
        .explode("method")
        .drop_nulls("method")
    )
    return (
        ev.unique(["run_id", "host", "window_id", "method"])
        .group_by("host", "method")
        .agg(pl.len().alias("n_windows"))
        .sort("host", "method")
    )


def causes_per_window(evidence: pl.DataFrame) -> pl.DataFrame:
    """Fig. 3: for each anomalous window, how many distinct subsystems and metrics the
    evidence names, and the share of evidence rows per subsystem.

    Rows: ``run_id, host, window_id, start, n_subsystems, n_metrics, top_subsystem,
    <one share column per subsystem>``.
    """
    if evidence.height == 0:
        return pl.DataFrame(
            schema={
                "run_id": pl.String,
                "host": pl.String,
                "window_id": pl.Int64,
                "n_subsystems": pl.UInt32,
                "n_metrics": pl.UInt32,
            }
        )
    keys = ["run_id", "host", "window_id"]
    per = evidence.group_by(keys, maintain_order=True).agg(
        pl.col("start").first(),
        pl.col("subsystem").n_unique().alias("n_subsystems"),
        pl.col("metric").n_unique().alias("n_metrics"),
        pl.col("subsystem").mode().sort().first().alias("top_subsystem"),
    )
    shares = (
        evidence.group_by([*keys, "subsystem"])
        .len()
        .with_columns((pl.col("len") / pl.col("len").sum().over(keys)).alias("share"))
        .pivot(on="subsystem", index=keys, values="share")
        .fill_null(0.0)
    )
    return per.join(shares, on=keys, how="left").sort(keys)


def detection_summary(windows: pl.DataFrame, evidence: pl.DataFrame) -> pl.DataFrame:
    """Table 4: per workload, windows analysed, anomalous windows and their share,
    the windows flagged by ≥2 detectors, the most-blamed subsystem and metric."""
    analysed = windows.group_by("workload").agg(
        pl.col("run_id").n_unique().alias("n_runs"), pl.col("n_windows").sum()
    )
    if evidence.height == 0:
        return analysed.with_columns(
            pl.lit(0).alias("n_anomalous"),
            pl.lit(0.0).alias("anomalous_pct"),
            pl.lit(0).alias("n_agree2"),
            pl.lit(None, pl.String).alias("top_subsystem"),
            pl.lit(None, pl.String).alias("top_metric"),
        ).sort("workload")
    win = evidence.group_by("workload", "run_id", "host", "window_id").agg(pl.col("agreement").max())
    anom = win.group_by("workload").agg(
        pl.len().alias("n_anomalous"), (pl.col("agreement") >= 2).sum().alias("n_agree2")
    )
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
    return (
        analysed.join(anom, on="workload", how="left")
        .join(top, on="workload", how="left")
        .join(topm, on="workload", how="left")
        .with_columns(pl.col("n_anomalous").fill_null(0), pl.col("n_agree2").fill_null(0))
        .with_columns((100 * pl.col("n_anomalous") / pl.col("n_windows")).alias("anomalous_pct"))
        .select(
            "workload",
            "n_runs",
            "n_windows",
            "n_anomalous",
            "anomalous_pct",
            "n_agree2",
            "top_subsystem",
            "top_metric",
        )
        .sort("workload")
    )


def top_windows(evidence: pl.DataFrame, n: int = 2, *, min_agreement: int = 1) -> pl.DataFrame:
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
    ev = evidence.filter(pl.col("agreement").fill_null(1) >= min_agreement)
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
    Unknown metric names raise ``ValueError`` naming them.
    """
    missing = [m for m in metrics if m not in run.frame.columns]
    if missing:
        raise ValueError(f"metrics not in run {run.meta.run_id}: {missing}")
    lo, hi = start - dt.timedelta(seconds=pad_s), end + dt.timedelta(seconds=pad_s)
    part = run.frame.filter(pl.col(TIMESTAMP).is_between(lo, hi)).select(TIMESTAMP, *metrics)
    long = part.unpivot(index=TIMESTAMP, variable_name="metric", value_name="value")
    return long.select(
        ((pl.col(TIMESTAMP) - start).dt.total_milliseconds() / 1000.0).alias("t_s"),
        "metric",
        "value",
        pl.col(TIMESTAMP).is_between(start, end).alias("in_window"),
    )
