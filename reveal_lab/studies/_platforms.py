"""A study's platform sections in its outputs: each platform's runs are studied apart
(:func:`reveal_lab.scale.study_platforms`), and the sections meet here. With one
section the outputs are that section's own; with several, every table holds the sections'
rows under a leading ``platform`` column, every figure is written once per section as
``NAME--PLATFORM``, and each study says which runs it used and why."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

__all__ = ["SECTION_SEP", "by_platform", "section_figure", "section_file", "runs_used"]

#: between a figure's name and its section's platform (``usage_cdfs--gpu``)
SECTION_SEP = "--"


def by_platform(parts: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """One table from the sections' tables (section → table, in section order): the one
    section's table unchanged, or the sections' rows under a leading ``platform`` column
    (kept as it is where the rows have one already, e.g. the dataset's run table).

    >>> by_platform({"all": pl.DataFrame({"x": [1]})}).columns
    ['x']
    >>> by_platform({"gpu": pl.DataFrame({"x": [1]}), "cpu": pl.DataFrame({"x": [2]})}).rows()
    [('gpu', 1), ('cpu', 2)]
    """
    if not parts:
        raise ValueError("no section to put together")
    if len(parts) == 1:
        return next(iter(parts.values()))
    frames = [df if "platform" in df.columns else df.select(pl.lit(sec).alias("platform"), pl.all())
              for sec, df in parts.items()]
    return pl.concat(frames, how="diagonal_relaxed")


def section_figure(out_dir: str | Path, name: str, section: str, sections: Sequence[str]) -> str:
    """The name a section's figure is saved under: ``name`` when the study has one section,
    ``name--PLATFORM`` when it has several. Files of the other layout that an earlier run
    left in ``out_dir/figures`` are removed, so the folder holds one layout of the figure.

    >>> section_figure("/nonexistent", "usage_cdfs", "gpu", ["gpu", "cpu"])
    'usage_cdfs--gpu'
    """
    figs = Path(out_dir) / "figures"
    if len(sections) == 1:
        stale = list(figs.glob(f"{name}{SECTION_SEP}*.*")) if figs.is_dir() else []
        out = name
    else:
        stale = [figs / f"{name}.{ext}" for ext in ("png", "pdf")]
        out = f"{name}{SECTION_SEP}{section}"
    for f in stale:
        f.unlink(missing_ok=True)
    return out


def runs_used(section: str, used: int, selected: int, rule: str) -> str:
    """One line saying which runs a study's section used and why.

    >>> runs_used("gpu", 5, 6, "every selected run")[:57]
    'GPU hosts: 5 of 6 selected runs used (every selected run;'
    """
    where = "every platform" if section == "all" else f"{section.upper()} hosts"
    return (f"{where}: {used} of {selected} selected runs used ({rule}; runs of every phase, "
            f"data_ LLM fine-tuning included)")


def section_file(name: str, section: str, sections: Sequence[str]) -> str:
    """A per-reproduction file of a section (the pruned space, ``pruning.json``): ``name``
    with one section (or when empty: none), ``STEM--PLATFORM.SUFFIX`` with several, so each
    platform's studies score in the space fitted on that platform's runs.

    >>> section_file("pruning.json", "all", ["all"]), section_file("pruning.json", "cpu", ["gpu", "cpu"])
    ('pruning.json', 'pruning--cpu.json')
    """
    if not name or len(sections) == 1:
        return name
    p = Path(name)
    return str(p.with_name(f"{p.stem}{SECTION_SEP}{section}{p.suffix}"))
