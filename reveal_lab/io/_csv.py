"""The one reader of the small CSV tables (``labels.csv``, ``meta_lab.csv``, the public
``meta_*.csv``): every fault is a :class:`~reveal_lab.telemetry.TelemetryError` naming the
file, and the line and column where it knows them.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "meta.csv"
>>> _ = p.write_bytes(b"run,samples_per_s\\nr1,12.5\\nr2,fast\\n")
>>> read_csv_table(p)["run"].to_list()
['r1', 'r2']
>>> csv_numbers(read_csv_table(p), "samples_per_s", p)
Traceback (most recent call last):
...
reveal_lab.telemetry._errors.TelemetryError: ...meta.csv, line 3, column 'samples_per_s': 'fast' is not a number
>>> _ = p.write_bytes(b"run,host\\nr1,lab\\xe9\\n")
>>> read_csv_table(p)
Traceback (most recent call last):
...
reveal_lab.telemetry._errors.TelemetryError: ...line 2, column 'host': bytes that are not UTF-8 text (b'\\xe9\\n'); ...
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from reveal_lab.telemetry import TelemetryError

__all__ = ["read_csv_table", "csv_numbers", "csv_datetimes"]


def _header(raw: bytes) -> list[str]:
    return raw.split(b"\n", 1)[0].decode("utf-8", "replace").lstrip("\ufeff").rstrip("\r").split(",")


def read_csv_table(path: str | Path, *, what: str = "table", infer: bool = False) -> pl.DataFrame:
    """``path`` as a frame: every column text (``infer=False``), or with polars' inferred
    types over the first 10,000 rows (``infer=True``). A missing or empty file, bytes that
    are not UTF-8 (line and column named) or a malformed table raise ``TelemetryError``."""
    path = Path(path)
    if not path.exists():
        raise TelemetryError(f"{what} not found", path=str(path))
    if not path.is_file():
        raise TelemetryError(f"{what}: not a regular file", path=str(path))
    raw = path.read_bytes()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        start = raw.rfind(b"\n", 0, exc.start) + 1
        head = _header(raw)
        k = raw[start : exc.start].count(b",")
        raise TelemetryError(
            f"bytes that are not UTF-8 text ({raw[exc.start : exc.start + 2]!r}); save the file as UTF-8",
            path=str(path),
            line=line,
            column=head[k] if line > 1 and k < len(head) else None,
        ) from None
    if not raw.strip():
        raise TelemetryError(f"{what} is empty (expected a header line)", path=str(path), line=1)
    try:
        if infer:
            return pl.read_csv(raw, infer_schema_length=10_000)
        return pl.read_csv(raw, infer_schema=False)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError, pl.exceptions.ShapeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TelemetryError(f"not a readable CSV {what} ({first})", path=str(path)) from None


def _first_bad(df: pl.DataFrame, col: str, parsed: pl.Series) -> tuple[int, str] | None:
    bad = df.with_row_index("_i").filter(
        pl.col(col).is_not_null() & (pl.col(col).cast(pl.String).str.strip_chars() != "") & parsed.is_null()
    )
    if not bad.height:
        return None
    return int(bad["_i"][0]) + 2, str(bad[col][0])  # + header line, 1-based


def csv_numbers(df: pl.DataFrame, col: str, path: str | Path) -> pl.Series:
    """Column ``col`` as ``Float64`` (empty cells null); a cell that is not a number names
    its line and column."""
    s = df[col]
    parsed = s if s.dtype.is_numeric() else s.cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False)
    bad = _first_bad(df, col, parsed)
    if bad:
        raise TelemetryError(f"{bad[1]!r} is not a number", path=str(path), line=bad[0], column=col)
    return parsed.cast(pl.Float64)


def csv_datetimes(
    df: pl.DataFrame, col: str, path: str | Path, fmt: str = "%Y-%m-%d %H:%M:%S%.f"
) -> pl.Series:
    """Column ``col`` as ``Datetime("ms")`` (empty cells null); a cell that is not a
    timestamp of ``fmt`` names its line and column."""
    s = df[col]
    if s.dtype == pl.Datetime("ms"):
        return s
    if isinstance(s.dtype, pl.Datetime):
        return s.cast(pl.Datetime("ms"))
    parsed = s.cast(pl.String).str.strip_chars().str.strptime(pl.Datetime("ms"), fmt, strict=False)
    bad = _first_bad(df, col, parsed)
    if bad:
        example = dt.datetime(2025, 6, 3, 11, 2, 44, 500000).strftime(fmt.replace("%.f", ".%f"))[:-3]
        raise TelemetryError(
            f"{bad[1]!r} is not a timestamp like {example!r}", path=str(path), line=bad[0], column=col
        )
    return parsed
