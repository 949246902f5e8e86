"""Saving tables as CSV and Markdown next to the figures of a study."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

__all__ = ["to_markdown", "save_table", "study_dirs"]


def _fmt(v: object, digits: int) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return f"{v:.{digits}g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.3e}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def to_markdown(df: pl.DataFrame, digits: int = 4) -> str:
    """A GitHub pipe table.

    >>> print(to_markdown(pl.DataFrame({"a": [1, 2], "b": [0.5, None]})))
    | a | b |
    |---|---|
    | 1 | 0.5 |
    | 2 |  |
    """
    head = "| " + " | ".join(df.columns) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(_fmt(v, digits) for v in row) + " |" for row in df.iter_rows()]
    return "\n".join([head, sep, *body])


def study_dirs(out_dir: str | Path) -> tuple[Path, Path]:
    """``(figures, tables)`` folders under a study's output folder, created."""
    out = Path(out_dir)
    figs, tabs = out / "figures", out / "tables"
    figs.mkdir(parents=True, exist_ok=True)
    tabs.mkdir(parents=True, exist_ok=True)
    return figs, tabs


def save_table(df: pl.DataFrame, out_dir: str | Path, name: str, *, digits: int = 4) -> list[Path]:
    """Write ``name.csv`` and ``name.md`` into ``out_dir/tables``; return the paths."""
    _, tabs = study_dirs(out_dir)
    csv, md = tabs / f"{name}.csv", tabs / f"{name}.md"
    flat = df.with_columns(
        [
            pl.col(c).cast(pl.List(pl.String)).list.join(",")
            for c, t in df.schema.items()
            if isinstance(t, (pl.List, pl.Array))
        ]
        + [pl.col(c).struct.json_encode() for c, t in df.schema.items() if isinstance(t, pl.Struct)]
    )
    flat.write_csv(csv)
    md.write_text(to_markdown(flat, digits) + "\n")
    return [csv, md]
