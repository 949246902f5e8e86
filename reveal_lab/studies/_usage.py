"""CDFs of key resource usage across runs: CPU busy, memory utilization, network
bytes and GPU utilization (where GPUs are present)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl

from reveal_lab.telemetry import Run, metric_columns, parse_metric_name

__all__ = ["USAGE_QUANTITIES", "usage_labels", "usage_columns", "usage_samples", "ecdf", "usage_summary"]

#: quantity -> (sources, fields, instance rule, how instances combine, unit label)
USAGE_QUANTITIES: dict[str, dict[str, object]] = {
    "cpu_busy_pct": {
        "sources": ("Turbostat", "CPU"),
        "fields": ("Busy%", "busy_pct", "Busy"),
        "instance": "-",
        "combine": "mean",
        "label": "CPU busy [%]",
    },
    "memory_util_pct": {
        "sources": ("Memory",),
        "fields": ("MemoryUtilization",),
        "instance": None,
        "combine": "mean",
        "label": "memory utilization [%]",
    },
    "network_bytes": {
        "sources": ("NetworkInterStat",),
        "fields": ("rx_bytes", "tx_bytes"),
        "instance": "*",
        "combine": "sum",
        "label": "network bytes per sample (rx+tx, all interfaces)",
    },
    "gpu_util_pct": {
        "sources": ("GPU",),
        "fields": ("utilization.gpu",),
        "instance": "*",
        "combine": "mean",
        "label": "GPU utilization [%]",
    },
}


def usage_labels() -> dict[str, str]:
    """Axis label of each usage quantity (for :func:`reveal_lab.plots.plot_usage_cdfs`).

    >>> usage_labels()["gpu_util_pct"]
    'GPU utilization [%]'
    """
    return {q: str(spec["label"]) for q, spec in USAGE_QUANTITIES.items()}


def usage_columns(columns: Iterable[str]) -> dict[str, list[str]]:
    """The columns that make up each usage quantity (empty list: not present).

    >>> cols = usage_columns(["Turbostat:Busy%.-.h[%]", "Turbostat:Busy%.3.h[%]",
    ...                       "GPU: utilization.gpu.0.h[%]"])
    >>> cols["cpu_busy_pct"], cols["gpu_util_pct"], cols["network_bytes"]
    (['Turbostat:Busy%.-.h[%]'], ['GPU: utilization.gpu.0.h[%]'], [])
    """
    out: dict[str, list[str]] = {q: [] for q in USAGE_QUANTITIES}
    parsed = [(c, parse_metric_name(c)) for c in columns]
    for q, spec in USAGE_QUANTITIES.items():
        for c, m in parsed:
            if m is None or m.source not in spec["sources"] or m.field not in spec["fields"]:  # type: ignore[operator]
                continue
            inst = spec["instance"]
            if inst == "*" or m.instance == inst or (inst is None and m.instance is None):
                out[q].append(c)
        # CPU busy: fall back to per-core mean when there is no package row
        if q == "cpu_busy_pct" and not out[q]:
            out[q] = [
                c
                for c, m in parsed
                if m is not None
                and m.source in spec["sources"]  # type: ignore[operator]
                and m.field in spec["fields"]
            ]  # type: ignore[operator]
    return out


def usage_samples(runs: Iterable[Run], *, max_samples_per_run: int = 2000) -> pl.DataFrame:
    """Per-sample values of each usage quantity: ``quantity, run_id, workload, host, value``.

    Each run contributes at most ``max_samples_per_run`` evenly spaced samples per
    quantity and host, so long runs do not dominate the CDF.
    """
    parts = []
    for run in runs:
        for host, sub in run.split_hosts().items():
            cols = usage_columns(metric_columns(sub.frame))
            for q, cs in cols.items():
                if not cs:
                    continue
                arr = sub.frame.select(cs).to_numpy().astype(float)
                with np.errstate(all="ignore"):
                    if USAGE_QUANTITIES[q]["combine"] == "sum":
                        v = np.where(np.isfinite(arr).any(axis=1), np.nansum(arr, axis=1), np.nan)
                    else:
                        v = np.nanmean(np.where(np.isfinite(arr), arr, np.nan), axis=1) if arr.size else arr
                v = v[np.isfinite(v)]
                if v.size > max_samples_per_run:
                    v = v[np.linspace(0, v.size - 1, max_samples_per_run).astype(int)]
                parts.append(
                    pl.DataFrame(
                        {
                            "quantity": q,
                            "run_id": run.meta.run_id,
                            "workload": run.meta.workload or "",
                            "host": host,
                            "value": v,
                        }
                    )
                )
    if not parts:
        return pl.DataFrame(
            schema={
                "quantity": pl.String,
                "run_id": pl.String,
                "workload": pl.String,
                "host": pl.String,
                "value": pl.Float64,
            }
        )
    return pl.concat(parts)


def ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted values and their empirical cumulative probabilities.

    >>> x, p = ecdf(np.array([3.0, 1.0, 2.0]))
    >>> x.tolist(), p.round(3).tolist()
    ([1.0, 2.0, 3.0], [0.333, 0.667, 1.0])
    """
    x = np.sort(np.asarray(values, float)[np.isfinite(values)])
    return x, np.arange(1, x.size + 1) / max(x.size, 1)


def usage_summary(samples: pl.DataFrame) -> pl.DataFrame:
    """Quantiles of each usage quantity (the numbers behind the CDF figure)."""
    return samples.group_by("quantity", maintain_order=True).agg(
        pl.len().alias("n_samples"),
        pl.col("run_id").n_unique().alias("n_runs"),
        *[
            pl.col("value").quantile(q, "linear").alias(f"p{int(q * 100)}")
            for q in (0.05, 0.25, 0.5, 0.75, 0.95)
        ],
        pl.col("value").mean().alias("mean"),
    )
