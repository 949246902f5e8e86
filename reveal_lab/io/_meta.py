"""The one reader of the run tables: the public dataset's ``meta_gpu.csv`` /
``meta_cpu.csv`` (:func:`read_meta_csv`) and the lab's ``meta_lab.csv`` (:func:`read_meta`,
its recorded workload spans :func:`workload_spans`).

``meta_lab.csv`` holds the public columns (:data:`META_COLUMNS`) then the lab's
(:data:`EXTRA_META_COLUMNS`); its numbers and timestamps are checked, and no row ends
before it starts (``end`` before ``start``, ``workload_end`` before ``workload_start``).

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "meta_lab.csv"
>>> _ = p.write_text("source_file,workload_start,workload_end\\n"
...                  "train_separated/r1_labA.parquet,2026-01-01 10:00:05.000,2026-01-01 10:01:05.000\\n")
>>> span = workload_spans(p)["r1_labA"]
>>> (span[1] - span[0]).total_seconds()
60.0
>>> back = p.with_name("backwards.csv")
>>> _ = back.write_text("source_file,workload_start,workload_end\\n"
...                     "r1_labA.parquet,2026-01-01 10:00:05.000,2026-01-01 10:00:01.000\\n")
>>> try:
...     workload_spans(back)
... except TelemetryError as exc:
...     print(exc.line, exc.column, "before workload_start" in str(exc))
2 workload_end True
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from reveal_lab.io._csv import csv_datetimes, csv_numbers, read_csv_table
from reveal_lab.telemetry import TelemetryError

__all__ = [
    "META_COLUMNS",
    "EXTRA_META_COLUMNS",
    "META_NUMBER_COLUMNS",
    "META_TIME_COLUMNS",
    "read_meta_csv",
    "read_meta",
    "workload_spans",
]

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

#: the lab's columns after the public ones (:data:`META_COLUMNS`) in ``meta_lab.csv``
EXTRA_META_COLUMNS = (
    "run",
    "host",
    "core",
    "run_group",
    "world_size",
    "fault",
    "repeat",
    "seed",
    "start",
    "end",
    "steps",
    "samples_per_s",
    "workload_start",
    "workload_end",
    "cpu_quota",
    "threads",
    "case",
    "n_dropped_nan_columns",
)
#: ``meta_lab.csv`` columns that hold numbers and timestamps (checked by :func:`read_meta`)
META_NUMBER_COLUMNS = (
    "n_rows", "n_cols", "world_size", "repeat", "seed", "steps", "samples_per_s", "cpu_quota", "threads"
)
META_TIME_COLUMNS = ("start", "end", "workload_start", "workload_end")


def read_meta(path: str | Path, *, required: Sequence[str] = META_COLUMNS) -> pl.DataFrame:
    """``meta_lab.csv`` as a frame (types inferred, cells as written), the ``required``
    columns present (default: all public ones), every number and timestamp column parsed
    and no row ending before it starts; a fault names the file, line and column."""
    path = Path(path)
    df = read_csv_table(path, what="meta file", infer=True)
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise TelemetryError(f"meta file lacks columns {missing}", path=str(path), line=1)
    for c in META_NUMBER_COLUMNS:
        if c in df.columns:
            csv_numbers(df, c, path)
    stamps = {c: csv_datetimes(df, c, path) for c in META_TIME_COLUMNS if c in df.columns}
    for a, b in (("start", "end"), ("workload_start", "workload_end")):
        if a in stamps and b in stamps:
            back = (stamps[b] < stamps[a]).fill_null(False).arg_true()
            if back.len():
                i = int(back[0])
                raise TelemetryError(
                    f"{b} {df[b][i]} is before {a} {df[a][i]}", path=str(path), line=i + 2, column=b
                )
    return df


def workload_spans(path: str | Path) -> dict[str, tuple[dt.datetime, dt.datetime]]:
    """The recorded workload span (``workload_start``, ``workload_end``, naive) of each run
    file of ``meta_lab.csv`` at ``path``, by the file's stem; empty when the table has no
    such columns. Read once per version of the file."""
    path = Path(path)
    return _workload_spans(str(path), path.stat().st_mtime)


@functools.lru_cache(maxsize=16)
def _workload_spans(path: str, mtime: float) -> dict[str, tuple[dt.datetime, dt.datetime]]:
    del mtime  # part of the cache key only
    meta = read_meta(path, required=())
    if not {"source_file", "workload_start", "workload_end"} <= set(meta.columns):
        return {}
    out = {}
    for r in meta.iter_rows(named=True):
        a, b = r["workload_start"], r["workload_end"]
        if a and b:
            out[Path(r["source_file"]).stem] = (_naive(a), _naive(b))
    return out


def _naive(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(str(text).strip()).replace(tzinfo=None)
