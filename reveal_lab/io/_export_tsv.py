"""Write a run in the public Reveal dataset's TSV layout."""

from __future__ import annotations

from pathlib import Path

from reveal_lab.telemetry import Run

__all__ = ["export_tsv"]


def export_tsv(run: Run, out_dir: str | Path, *, prefix: str = "train", model: str | None = None,
               task: str | None = None, dataset: str | None = None) -> list[Path]:
    """Write ``run`` as one public-layout ``.txt`` file per host; return the paths."""
    raise NotImplementedError("export_tsv: being implemented (issue 3)")
