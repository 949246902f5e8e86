"""Collector overhead (Fig. 5) from the collector benchmark's results
(``benchmarks/results/collector_overhead.json``, written by
``benchmarks/collector_overhead.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from reveal_lab.config import PROJECT_ROOT

__all__ = ["OVERHEAD_RESULTS", "collector_overhead_table", "collector_bytes_table"]

OVERHEAD_RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "collector_overhead.json"
#: processes in the order the figure shows them (cheapest collector first, perf stat last)
_ORDER = ("loop", "reads", "procfs", "full", "perf")
_SCHEMA = {
    "interval_ms": pl.Float64,
    "process": pl.String,
    "pct_of_core": pl.Float64,
    "pct_of_core_stat": pl.Float64,
    "channels": pl.Int64,
    "ratio_to_perf_stat": pl.Float64,
}


def _load(path: str | Path | None) -> dict:
    from reveal_lab.telemetry import TelemetryError

    p = Path(path) if path else OVERHEAD_RESULTS
    if not p.exists():
        raise FileNotFoundError(f"{p} not found; run `python benchmarks/collector_overhead.py` first")
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise TelemetryError(f"not JSON: {exc.msg}", path=str(p), line=exc.lineno) from None
    if not isinstance(data.get("median_by_interval_ms"), dict):
        raise TelemetryError(
            "expected a 'median_by_interval_ms' mapping (collector_overhead.py's output)", path=str(p)
        )
    return data


def collector_overhead_table(path: str | Path | None = None) -> pl.DataFrame:
    """Median CPU per interval and process (``loop``, ``procfs``, ``full`` collector and a
    bare ``perf stat``): ``interval_ms, process, pct_of_core`` (scheduler on-CPU time),
    ``pct_of_core_stat`` (utime+stime), ``channels``, ``ratio_to_perf_stat``."""
    data = _load(path)
    rows = []
    for iv, procs in data["median_by_interval_ms"].items():
        for proc, v in (procs or {}).items():
            if not isinstance(v, dict):
                continue
            rows.append(
                {
                    "interval_ms": float(iv),
                    "process": proc,
                    "pct_of_core": v.get("schedstat_pct_of_core"),
                    "pct_of_core_stat": v.get("stat_pct_of_core"),
                    "channels": v.get("channels"),
                    "ratio_to_perf_stat": v.get("ratio_to_perf_stat"),
                }
            )
    order = {p: i for i, p in enumerate(_ORDER)}
    return (
        pl.DataFrame(rows, schema=_SCHEMA)
        .with_columns(pl.col("process").replace_strict(order, default=len(order)).alias("_o"))
        .sort("interval_ms", "_o", "process")
        .drop("_o")
    )


def collector_bytes_table(path: str | Path | None = None) -> pl.DataFrame:
    """Bytes per second on disk of the full collector (and the paper's numbers beside it)."""
    data = _load(path)
    size = data.get("bytes_on_disk") or {}
    keys = (
        "interval_ms",
        "duration_s",
        "channels",
        "folder_bytes_per_s",
        "segment_bytes_per_s",
        "journal_bytes_written_per_s",
        "raw_bytes_per_s_if_float64",
    )
    row = {k: size.get(k) for k in keys}
    paper = (data.get("targets") or {}).get("paper") or {}
    row["paper_bytes_per_s_filtered"] = str(paper.get("bytes_per_s_filtered", ""))
    return pl.DataFrame([row])
