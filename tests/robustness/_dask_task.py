"""A per-run task for the Dask tests, importable by a worker by its name (a test module under
pytest's import mode may not be)."""

from __future__ import annotations

import time


def slow(run, seconds: float) -> int:  # noqa: ANN001
    """Wait ``seconds``, then the run's length in rows."""
    time.sleep(seconds)
    return run.frame.height
