"""The platform sections of a study: which platforms of the data a study makes apart, each a
map + reduce of its own (:func:`reveal_lab.scale.study_refs` with ``platform=section``),
read from the dataset's index without loading a run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from reveal_lab.scale._engine import SYNTH, study_refs
from reveal_lab.scale._tasks import RunRef, _open_dataset

__all__ = ["PLATFORMS", "study_platforms", "section_refs"]

#: the values of the studies' ``platform`` parameter: ``each`` platform in a section of its own
#: (the default), one platform's runs, or ``all`` runs together
PLATFORMS = ("each", "gpu", "cpu", "all")


def study_platforms(
    data: str | Path | None = None,
    platform: str = "each",
    *,
    workloads: str | Sequence[str] | None = None,
    phase: str | None = None,
) -> list[str]:
    """The sections a study makes, each a map + reduce of its own over
    ``study_refs(..., platform=section)``: for ``each``, every platform of the selected
    workloads' runs (GPU, then CPU, then any other by name), or ``["all"]`` when they are of
    one platform (or record none: synthetic runs), so a one-platform dataset gives what
    ``all`` gives; for ``gpu``, ``cpu`` or ``all``, that value alone.

    >>> study_platforms("synth"), study_platforms("synth", "all")
    (['all'], ['all'])
    """
    from reveal_lab.studies import parse_list, resolve_data, select_runs

    value = str(platform or "each").lower()
    if value not in PLATFORMS:
        raise ValueError(f"platform {platform!r}: give one of {', '.join(PLATFORMS)}")
    if value != "each":
        return [value]
    root = resolve_data(data)
    if root == SYNTH:
        return ["all"]
    index = _open_dataset(str(Path(root).resolve())).index
    ids = select_runs(index, workloads=parse_list(workloads), phase=phase or None)  # as study_refs selects
    found = set(index.filter(pl.col("run_id").is_in(ids)).get_column("platform").drop_nulls().to_list())
    order = [p for p in ("gpu", "cpu") if p in found] + sorted(found - {"gpu", "cpu"})
    return order if len(order) > 1 else ["all"]


def section_refs(
    data: str | Path | None = None, platform: str = "each", **selection: Any
) -> dict[str, list[RunRef]]:
    """Each section of :func:`study_platforms` with its runs' references, in order:
    ``{section: study_refs(data, platform=section, **selection)}`` (``selection``: the
    other arguments of :func:`~reveal_lab.scale.study_refs`). No run is loaded."""
    sections = study_platforms(
        data, platform, workloads=selection.get("workloads"), phase=selection.get("phase")
    )
    return {s: study_refs(data, platform=s, **selection) for s in sections}
