"""Read the collector's on-disk format (``reveal_lab/collect/FORMAT.md``) into a :class:`Run`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from reveal_lab.telemetry import Run

__all__ = ["read_collector_run", "merge_hosts"]


def read_collector_run(path: str | Path, view: Literal["dataset", "raw"] = "dataset") -> Run:
    """Read a collector run directory (Parquet segments + journal tail + ``meta.json``)."""
    raise NotImplementedError("read_collector_run: being implemented (issue 3)")


def merge_hosts(runs: Sequence[Run], *, tolerance_ms: float | None = None,
                skew_ms: dict[str, float] | None = None) -> Run:
    """Merge single-host runs recorded at the same time into one multi-host run, by time."""
    raise NotImplementedError("merge_hosts: being implemented (issue 3)")
