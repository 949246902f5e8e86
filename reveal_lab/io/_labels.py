"""The one reader of ``labels.csv``, the lab dataset's ground truth, and the timestamp
format its ``start``/``end`` carry.

``labels.csv`` columns: ``run, host, fault_type, start, end, expected_subsystem,
magnitude, unit, scope, source_file`` -- ``start``/``end`` are naive wall-clock
timestamps with milliseconds (``YYYY-MM-DD HH:MM:SS.mmm``) on the collector's clock
(wall clock, UTC, naive -- exactly how the collector stamps its rows),
``scope`` is ``episode`` (a fault inside a run, with calm before and after) or ``run``
(a configuration difference that lasts the whole run). A run is the file stem without
the host (both hosts of a two-host DDP run share it); a label keys on ``(run, host)``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from reveal_lab.io._csv import read_csv_table
from reveal_lab.telemetry import TelemetryError

__all__ = ["LABEL_COLUMNS", "STAMP_FMT", "ms_to_stamp", "stamp_to_ms", "read_labels", "check_labels"]

LABEL_COLUMNS = (
    "run",
    "host",
    "fault_type",
    "start",
    "end",
    "expected_subsystem",
    "magnitude",
    "unit",
    "scope",
    "source_file",
)

#: how ``start``/``end`` are written (milliseconds: the last three digits of ``%f`` cut)
STAMP_FMT = "%Y-%m-%d %H:%M:%S.%f"
_POLARS_FMT = "%Y-%m-%d %H:%M:%S%.f"


def ms_to_stamp(ms: int) -> str:
    """Epoch milliseconds as the naive UTC timestamp the collector's rows carry.

    >>> ms_to_stamp(0)[-4:]
    '.000'
    """
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime(STAMP_FMT)[:-3]


def stamp_to_ms(stamp: str) -> int:
    """Inverse of :func:`ms_to_stamp`.

    >>> stamp_to_ms(ms_to_stamp(1_700_000_000_123))
    1700000000123
    """
    return round(datetime.strptime(stamp, STAMP_FMT).replace(tzinfo=UTC).timestamp() * 1000)


def read_labels(path: str | Path) -> pl.DataFrame:
    """``labels.csv`` as a frame with ``start``/``end`` parsed to ``Datetime("ms")``."""
    path = Path(path)
    df = read_csv_table(path, what="labels file")
    missing = [
        c for c in ("run", "host", "fault_type", "start", "end", "expected_subsystem") if c not in df.columns
    ]
    if missing:
        raise TelemetryError(
            f"labels file lacks columns {missing}; expected {list(LABEL_COLUMNS)}", path=str(path)
        )
    for i, (s, e) in enumerate(zip(df["start"], df["end"], strict=True)):
        for col, v in (("start", s), ("end", e)):
            try:
                datetime.strptime(v, STAMP_FMT)
            except (TypeError, ValueError):
                raise TelemetryError(
                    f"{col}={v!r} is not a 'YYYY-MM-DD HH:MM:SS.mmm' timestamp",
                    path=str(path),
                    line=i + 2,
                    column=col,
                ) from None
    df = df.with_columns(
        pl.col("start").str.strptime(pl.Datetime("ms"), _POLARS_FMT),
        pl.col("end").str.strptime(pl.Datetime("ms"), _POLARS_FMT),
    )
    if "magnitude" in df.columns:
        df = df.with_columns(pl.col("magnitude").cast(pl.Float64, strict=False))
    if "scope" not in df.columns:
        df = df.with_columns(pl.lit("episode").alias("scope"))
    bad = df.with_row_index("_i").filter(pl.col("end") <= pl.col("start"))
    if bad.height:
        r = bad.row(0, named=True)
        raise TelemetryError(
            f"the label ends ({r['end']}) before it starts ({r['start']})",
            path=str(path),
            line=int(r["_i"]) + 2,
            column="end",
        )
    return df


def check_labels(
    labels: pl.DataFrame, meta: pl.DataFrame, *, path: str | Path = "labels.csv"
) -> tuple[pl.DataFrame, list[str]]:
    """``labels`` without repeated rows and without labels of a run or host ``meta`` does not
    have, and one warning per kind left out, naming the lines: a repeated label would count its
    episode twice, and one of an unknown run or host would vanish from every score unseen.

    >>> m = pl.DataFrame({"run": ["r1"], "host": ["labA"]})
    >>> lab = pl.DataFrame({"run": ["r1", "r1", "r9", "r1"], "host": ["labA", "labA", "labA", "labZ"],
    ...                     "fault_type": ["cpu"] * 4, "start": ["t0"] * 4, "end": ["t1"] * 4})
    >>> kept, notes = check_labels(lab, m)
    >>> kept.height
    1
    >>> for n in notes:
    ...     print(n)
    labels.csv: line 3 repeats an earlier label (counted once; left out)
    labels.csv: line 4: run r9 is not in meta_lab.csv (label left out)
    labels.csv: line 5: host labZ has no run r1 in meta_lab.csv (label left out)
    """
    key = ["run", "host", "fault_type", "start", "end"]
    df = labels.with_row_index("_line", offset=2)  # line 1 is the header
    notes: list[str] = []
    dup = df.filter(~pl.struct(key).is_first_distinct())
    if dup.height:
        lines = ", ".join(str(i) for i in dup["_line"].to_list()[:5])
        notes.append(f"{path}: line {lines} repeats an earlier label (counted once; left out)")
        df = df.filter(~pl.col("_line").is_in(dup["_line"].to_list()))
    runs = set(meta["run"].cast(pl.String).to_list()) if "run" in meta.columns else None
    pairs = (
        set(zip(meta["run"].cast(pl.String), meta["host"].cast(pl.String), strict=True))
        if {"run", "host"} <= set(meta.columns)
        else None
    )
    bad: list[int] = []
    for r in df.iter_rows(named=True):
        if runs is not None and r["run"] not in runs:
            notes.append(f"{path}: line {r['_line']}: run {r['run']} is not in meta_lab.csv (label left out)")
            bad.append(r["_line"])
        elif pairs is not None and (r["run"], r["host"]) not in pairs:
            notes.append(
                f"{path}: line {r['_line']}: host {r['host']} has no run {r['run']} in meta_lab.csv "
                "(label left out)"
            )
            bad.append(r["_line"])
    return df.filter(~pl.col("_line").is_in(bad)).drop("_line"), notes
