"""One way to turn a polars frame into a table: CSV, a Markdown pipe table, or the
cells an HTML template renders (``templates/*.html.j2``).

Every writer of tables in the project (study tables, ``report.md``/``report.html``,
``index.html``) formats its cells with :func:`format_cell`, so a number reads the same
in every file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

__all__ = ["format_cell", "markdown_table", "table_cells", "flatten_nested", "write_table"]


def format_cell(
    v: Any,  # noqa: ANN401
    digits: int = 4,
    *,
    max_len: int | None = None,
    float_format: str | None = None,
    nan: str = "NaN",
) -> str:
    """A cell as text: ``""`` for null, ``nan`` for NaN, floats to ``digits`` significant
    digits (scientific below 1e-3) or with ``float_format``, datetimes to the millisecond,
    long text cut at ``max_len``.

    >>> format_cell(0.123456), format_cell(None), format_cell(2.5e-5), format_cell(3)
    ('0.1235', '', '2.500e-05', '3')
    >>> format_cell("x" * 10, max_len=5), format_cell(0.5, float_format="{:.3f}"), format_cell(float("nan"), nan="–")
    ('xxxx…', '0.500', '–')
    """
    if v is None:
        return ""
    if isinstance(v, bool):
        s = str(v)
    elif isinstance(v, float):
        if math.isnan(v):
            return nan
        if float_format is not None:
            s = float_format.format(v)
        else:
            s = f"{v:.{digits}g}" if abs(v) >= 1e-3 or v == 0 or math.isinf(v) else f"{v:.3e}"
    elif hasattr(v, "isoformat"):
        s = v.isoformat(sep=" ", timespec="milliseconds") if hasattr(v, "hour") else v.isoformat()
    else:
        s = str(v)
    if max_len is not None and len(s) > max_len:
        s = s[: max_len - 1] + "…"
    return s


def flatten_nested(df: pl.DataFrame) -> pl.DataFrame:
    """List columns joined with ``,`` and struct columns as JSON, so a frame fits a CSV."""
    return df.with_columns(
        [
            pl.col(c).cast(pl.List(pl.String)).list.join(",")
            for c, t in df.schema.items()
            if isinstance(t, (pl.List, pl.Array))
        ]
        + [pl.col(c).struct.json_encode() for c, t in df.schema.items() if isinstance(t, pl.Struct)]
    )


def markdown_table(
    df: pl.DataFrame,
    digits: int = 4,
    *,
    float_format: str | None = None,
    nan: str = "NaN",
    right: bool | Sequence[str] = False,
) -> str:
    """A GitHub pipe table (``|`` in cells escaped, newlines folded). ``right``: right-align
    the numeric columns (``True``) or the columns named; ``float_format`` / ``nan`` as in
    :func:`format_cell`.

    >>> print(markdown_table(pl.DataFrame({"a": [1, 2], "b": [0.5, None]})))
    | a | b |
    |---|---|
    | 1 | 0.5 |
    | 2 |  |
    >>> print(markdown_table(pl.DataFrame({"m": ["x"], "f1": [float("nan")]}), right=True, nan="–"))
    | m | f1 |
    |---|---:|
    | x | – |
    """
    df = flatten_nested(df)
    head = "| " + " | ".join(df.columns) + " |"
    rcols = {c for c, t in df.schema.items() if t.is_numeric()} if right is True else set(right or ())
    sep = "|" + "|".join("---:" if c in rcols else "---" for c in df.columns) + "|"

    def cell(v: Any) -> str:  # noqa: ANN401
        return format_cell(v, digits, float_format=float_format, nan=nan).replace("|", "\\|").replace("\n", " ")

    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.iter_rows()]
    return "\n".join([head, sep, *body])


def table_cells(
    df: pl.DataFrame, digits: int = 4, *, max_rows: int | None = None, max_len: int | None = None
) -> dict[str, Any]:
    """What an HTML template needs: ``columns``, ``rows`` (cells as text, at most
    ``max_rows``), ``numeric`` (per column: right-align it) and ``more`` (rows left out).

    >>> t = table_cells(pl.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]}), max_rows=2)
    >>> t["rows"], t["numeric"], t["more"]
    ([['1', 'x'], ['2', 'y']], [True, False], 1)
    """
    df = flatten_nested(df)
    shown = df if max_rows is None else df.head(max_rows)
    return {
        "columns": list(df.columns),
        "rows": [[format_cell(v, digits, max_len=max_len) for v in r] for r in shown.iter_rows()],
        "numeric": [t.is_numeric() for t in df.dtypes],
        "more": df.height - shown.height,
    }


def write_table(df: pl.DataFrame, stem: str | Path, *, digits: int = 4) -> list[Path]:
    """Write ``stem.csv`` (full precision) and ``stem.md`` (``digits`` significant digits)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    csv, md = stem.with_name(stem.name + ".csv"), stem.with_name(stem.name + ".md")
    flatten_nested(df).write_csv(csv)
    md.write_text(markdown_table(df, digits) + "\n")
    return [csv, md]
