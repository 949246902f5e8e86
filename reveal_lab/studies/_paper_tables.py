"""Tables shaped as the paper's: Table 4 (the anomaly report), the subsystem share of the
evidence in anomalous windows (§5.6), and the per-window flags of Fig. 2's timelines."""

from __future__ import annotations

import polars as pl

__all__ = ["paper_table4", "evidence_by_subsystem", "flag_timelines", "labelled_episodes"]

TABLE4_COLUMNS = ("run_id", "host", "window", "timestamp", "methods", "subsystem", "metric_feature", "claim")


def paper_table4(evidence: pl.DataFrame, *, max_rows: int = 20, agreement_at_least: int = 1) -> pl.DataFrame:
    """The paper's Table 4: one row per anomalous window (strongest first, at most
    ``max_rows``), its window id and start time, the detectors that flag it, the
    subsystem and metric–feature of its top evidence, and the evidence-based claim.

    ``evidence``: :func:`run_detection`'s evidence (a window's top pair: its highest ``score``);
    ``agreement_at_least``: show only windows that many detectors flag (a filter of the table,
    not the detection rule, which the policy holds).
    """
    schema = {c: pl.String for c in TABLE4_COLUMNS} | {"window": pl.Int64}
    if evidence.height == 0:
        return pl.DataFrame(schema=schema)
    ev = evidence.filter(pl.col("agreement").fill_null(1) >= agreement_at_least)
    keys = [c for c in ("run_id", "host", "window_id") if c in ev.columns]
    top = (
        ev.sort("score", descending=True, nulls_last=True)
        .unique(keys, keep="first", maintain_order=True)  # each window's strongest pair
        .sort(["agreement", "score"], descending=True, nulls_last=True)
        .head(max_rows)
    )
    methods = pl.col("methods")
    if isinstance(top.schema["methods"], pl.List):
        methods = methods.list.join("+")
    return top.select(
        pl.col("run_id") if "run_id" in top.columns else pl.lit(None, pl.String).alias("run_id"),
        "host",
        pl.col("window_id").cast(pl.Int64).alias("window"),
        pl.col("start").dt.strftime("%H:%M:%S").alias("timestamp"),
        methods.str.replace_all(",", "+").alias("methods"),
        "subsystem",
        pl.format("{} · {}", "metric", "feature").alias("metric_feature"),
        "claim",
    ).sort("run_id", "host", "window")


def evidence_by_subsystem(evidence: pl.DataFrame) -> pl.DataFrame:
    """§5.6: which subsystems the metric–feature pairs of anomalous windows belong to:
    ``subsystem, pairs, share`` (shares sum to 1), largest first.

    >>> ev = pl.DataFrame({"subsystem": ["cpu", "cpu", "network", "cpu"]})
    >>> evidence_by_subsystem(ev).rows()
    [('cpu', 3, 0.75), ('network', 1, 0.25)]
    """
    if evidence.height == 0:
        return pl.DataFrame(schema={"subsystem": pl.String, "pairs": pl.Int64, "share": pl.Float64})
    return (
        evidence.group_by("subsystem")
        .agg(pl.len().cast(pl.Int64).alias("pairs"))
        .with_columns((pl.col("pairs") / pl.col("pairs").sum()).alias("share"))
        .sort(["pairs", "subsystem"], descending=[True, False])
    )


def flag_timelines(windows: pl.DataFrame, methods: list[str] | None = None) -> pl.DataFrame:
    """The frame Fig. 2's timelines plot: ``run, host, start, end``, ``score_<det>`` and
    ``flag_<det>`` per detector, from :func:`run_detection`'s windows (``label_<det>``)."""
    methods = methods or [c.removeprefix("label_") for c in windows.columns if c.startswith("label_")]
    run = "run_id" if "run_id" in windows.columns else "run"
    return windows.select(
        pl.col(run).alias("run"),
        "host",
        "start",
        "end",
        *[pl.col(f"score_{m}") for m in methods if f"score_{m}" in windows.columns],
        *[pl.col(f"label_{m}").cast(pl.Boolean).alias(f"flag_{m}") for m in methods],
    ).sort("run", "host", "start")


def labelled_episodes(labels: pl.DataFrame, runs: list[str]) -> pl.DataFrame:
    """The fault episodes of ``runs`` (``run, host, fault_type, start, end``) from a
    ``labels.csv`` frame (:func:`reveal_lab.io.read_labels`); run ids may carry the host
    suffix (``<run>_<host>``) as the study runs' ids do."""
    if labels.height == 0:
        return pl.DataFrame(
            schema={"run": pl.String, "host": pl.String, "fault_type": pl.String,
                    "start": pl.Datetime("ms"), "end": pl.Datetime("ms")}
        )
    rows = []
    for r in runs:
        for lab in labels.iter_rows(named=True):
            if r == lab["run"] or r == f"{lab['run']}_{lab['host']}":
                rows.append({"run": r, "host": lab["host"], "fault_type": lab["fault_type"],
                             "start": lab["start"], "end": lab["end"]})
    return pl.DataFrame(rows, schema={"run": pl.String, "host": pl.String, "fault_type": pl.String,
                                      "start": pl.Datetime("ms"), "end": pl.Datetime("ms")})
