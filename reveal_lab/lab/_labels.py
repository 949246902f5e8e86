"""Names of the lab dataset's files and the writer of its tables.

Files follow the public dataset's grammar
``{prefix}_{MODEL}for{Task}_{dataset}_{YYYY-MM-DDTHH-MM-SS}_{host}.parquet`` under
``train_separated/`` and ``infer_separated/``. A *run* is the file stem without the host
(both hosts of a two-host DDP run share it). The tables' columns and their one reader are
in :mod:`reveal_lab.io` (:func:`~reveal_lab.io.read_meta`, :func:`~reveal_lab.io.read_labels`).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["run_stem", "file_name", "split_dir", "write_csv"]


def run_stem(phase: str, model: str, task: str, dataset: str, start_ms: int) -> str:
    """``train_CNNforImageClassification_synthetic_2026-11-21T20-41-03`` (no host; UTC time)."""
    if "_" in model or "_" in task or "_" in dataset:
        raise ValueError("model, task and dataset must not contain '_' (the grammar's separator)")
    t = datetime.fromtimestamp(start_ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H-%M-%S")
    return f"{phase}_{model}for{task}_{dataset}_{t}"


def file_name(stem: str, host: str) -> str:
    return f"{stem}_{host}.parquet"


def split_dir(phase: str) -> str:
    return "train_separated" if phase == "train" else "infer_separated"


def write_csv(path: str | Path, rows: Iterable[Mapping], columns: Iterable[str]) -> Path:
    """Write ``rows`` (dicts) with exactly ``columns``, in order."""
    path = Path(path)
    cols = list(columns)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in cols})
    return path
