"""A per-run task for the Dask tests, importable by a worker by its name (a test module under
pytest's import mode may not be)."""

from __future__ import annotations

import time
from pathlib import Path


def slow(run, seconds: float, started: str | None = None) -> int:  # noqa: ANN001
    """Create the file ``started`` (when given: the task is running), wait ``seconds``, then
    the run's length in rows."""
    if started is not None:
        Path(started).touch()
    time.sleep(seconds)
    return run.frame.height
