"""A training job's pace: the step-time file a job writes (one row per step), read once.

The file is a CSV with a header and two numeric columns: ``t``, the step's wall-clock start in
epoch seconds (UTC), and ``step_s``, its duration in seconds. ``detect --job-pace FILE`` sets
each anomalous episode beside the job's step time while it lasted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

__all__ = ["JobPace", "read_job_pace", "steady_span", "PACE_COLUMNS"]

#: the columns of a step-time file
PACE_COLUMNS = ("t", "step_s")


@dataclass(frozen=True)
class JobPace:
    """A training job's steps: each one's wall start (epoch seconds) and duration (s), in
    order of start."""

    t: np.ndarray
    step_s: np.ndarray

    def steps_between(self, start: float, end: float) -> np.ndarray:
        """The durations of the steps that start in ``[start, end)``."""
        return self.step_s[(self.t >= start) & (self.t < end)]

    def median_between(self, start: float, end: float) -> float:
        """The median duration of the steps that start in ``[start, end)`` (NaN when none)."""
        s = self.steps_between(start, end)
        return float(np.median(s)) if s.size else float("nan")


def read_job_pace(path: str | Path) -> JobPace:
    """A job's step-time file (module doc), refused naming the file, the column and what was
    expected when a column is missing, not numeric, or no step has both values.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "steps.csv")
    >>> _ = open(p, "w").write("t,step_s\\n10.0,0.5\\n10.5,0.4\\n")
    >>> read_job_pace(p).step_s.tolist()
    [0.5, 0.4]
    """
    path = Path(path)
    try:
        f = pl.read_csv(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise ValueError(f"{path}: cannot read the job's step times ({exc})") from None
    for col in PACE_COLUMNS:
        if col not in f.columns:
            raise ValueError(
                f"{path}: no column {col!r}; expected a header with t (a step's start, epoch seconds) "
                f"and step_s (its duration, seconds), got {f.columns}"
            )
        if not f.schema[col].is_numeric():
            raise ValueError(f"{path}: column {col!r} is {f.schema[col]}, expected numbers")
    f = f.drop_nulls(list(PACE_COLUMNS)).sort("t")
    if f.is_empty():
        raise ValueError(f"{path}: no step with both t and step_s")
    return JobPace(f["t"].cast(pl.Float64).to_numpy(), f["step_s"].cast(pl.Float64).to_numpy())


def steady_span(pace: JobPace) -> tuple[float, float]:
    """The job's steady span: from the start of its first step no slower than twice its median
    step (the first steps compile and warm caches) to the end of its last step.

    >>> steady_span(JobPace(np.array([0.0, 2.8, 2.9, 3.0]), np.array([2.8, 0.1, 0.1, 0.1])))
    (2.8, 3.1)
    """
    med = float(np.median(pace.step_s))
    first = int(np.flatnonzero(pace.step_s <= 2 * med)[0])
    return float(pace.t[first]), float(pace.t[-1] + pace.step_s[-1])
