"""Saving tables as CSV and Markdown next to the figures of a study
(through :func:`reveal_lab.render.write_table`, the project's one table writer)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from reveal_lab.render import markdown_table, write_table

__all__ = ["to_markdown", "save_table", "study_dirs"]


def to_markdown(df: pl.DataFrame, digits: int = 4) -> str:
    """A GitHub pipe table (:func:`reveal_lab.render.markdown_table`).

    >>> print(to_markdown(pl.DataFrame({"a": [1, 2], "b": [0.5, None]})))
    | a | b |
    |---|---|
    | 1 | 0.5 |
    | 2 |  |
    """
    return markdown_table(df, digits)


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
    return write_table(df, tabs / name, digits=digits)
