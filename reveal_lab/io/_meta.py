"""The dataset's run tables (``meta_gpu.csv``, ``meta_cpu.csv``, ``meta_lab.csv``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from reveal_lab.io._csv import read_csv_table
from reveal_lab.telemetry import TelemetryError

__all__ = ["META_COLUMNS", "read_meta_csv"]

META_COLUMNS = (
    "source_file",
    "n_rows",
    "n_cols",
    "phase",
    "mode",
    "model",
    "task",
    "dataset",
    "model_task",
    "workload",
)


def _read_meta_csv(path: Path) -> pl.DataFrame:
    df = read_csv_table(path, what="metadata table")
    if "source_file" not in df.columns:
        raise TelemetryError(
            f"no 'source_file' column (found {df.columns[:6]}); expected the columns {list(META_COLUMNS)}",
            path=str(path),
            line=1,
        )
    casts = [  # "340" and "340.0" alike; anything else becomes null (unknown)
        pl.col(c).str.strip_chars().cast(pl.Float64, strict=False).cast(pl.Int64, strict=False)
        for c in ("n_rows", "n_cols")
        if c in df.columns
    ]
    df = df.with_columns(casts)
    for c in META_COLUMNS:
        if c not in df.columns:
            df = df.with_columns(pl.lit(None, pl.Int64 if c in ("n_rows", "n_cols") else pl.String).alias(c))
    base = pl.col("source_file").str.replace_all(r"\\", "/").str.split("/").list.last()
    return df.with_columns(
        base.str.replace(r"\.(txt|tsv|parquet)$", "").alias("run_id"),
        pl.col("source_file").str.extract(r"([A-Za-z]+)_sep[ae]rated", 1).str.to_lowercase().alias("split"),
        (pl.int_range(pl.len()) + 2).alias("meta_line"),
    )


read_meta_csv = _read_meta_csv
