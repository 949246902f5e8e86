"""The collector's own start-up in a host recording, found from its own channels and left out
of what is scored.

At its start the collector loads its probes, opens perf events and (on a host where its
compiled code is not cached yet) compiles; the host sees a burst of CPU, page faults, file
writes and dirty pages that is the instrument, not the workload. On the GPU host
(``data/gpu-host``) a first start stalled the sampling for 4.9-6 s, 6-8 s after the start,
and ``detect`` named it a memory fault. :func:`collector_startup` finds where the start-up
ends from the collector's own channels (``Collector:lag``, ``Collector_diff:missed_ticks``,
``Collector_diff:cpu_time``): the samples in the first :data:`STARTUP_LIMIT_S` seconds where
the collector missed a tick, lagged or spent more than half an interval of CPU in one tick,
chained from the first tick (each within :data:`STARTUP_SETTLE_S` of the one before), the last
of the chain plus :data:`STARTUP_SETTLE_S`; at least the first :data:`STARTUP_MIN_S` seconds of a
recording that begins with the collector (its first row has no per-tick differences yet, or it is
disturbed then); none in a piece cut from a longer recording. Where
the recording starts with a backlog of dirty page cache (``Memory:Dirty`` above
:data:`BACKLOG_FACTOR` times its level over the rest of the run and :data:`BACKLOG_MIN_KB`
more: the 230-244 MB the GPU host's first start had, written back 16-24 s in and flagged as a
storage and memory fault), the start-up lasts until it is written back (2 s after ``Dirty`` is
back under twice its level or 16 MB above it), at most :data:`BACKLOG_LIMIT_S` seconds. A recording without the
collector's channels (the public dataset, the lab's Parquet) has no start-up to leave out.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import polars as pl

from reveal_lab.telemetry import TIMESTAMP, Run, metric_columns

__all__ = ["StartUp", "collector_startup", "without_startup", "STARTUP_LIMIT_S", "STARTUP_SETTLE_S", "STARTUP_MIN_S"]

#: the start-up is looked for in the first this many seconds of a recording
STARTUP_LIMIT_S = 30.0
#: seconds after the last disturbed sample still counted as start-up: what the start wrote
#: is flushed and the kernel's 10 s pressure averages (PSI ``avg10``) decay; on the host
#: recordings (``data/host``) 2 s left 33 of 850 fault-free windows flagged in the first 20 s,
#: 10 s none
STARTUP_SETTLE_S = 10.0
#: the first seconds of a collector recording are always start-up (probes opening, the
#: first differences)
STARTUP_MIN_S = 2.0


#: a dirty-page backlog at the start: this many times ``Memory:Dirty``'s median over the run
BACKLOG_FACTOR = 4.0
#: ... and at least this much more (kB)
BACKLOG_MIN_KB = 64 * 1024
#: the backlog's writeback is looked for in the first this many seconds
BACKLOG_LIMIT_S = 60.0


@dataclass(frozen=True)
class StartUp:
    """The collector's start-up in a recording: where it ends, how long it lasted, the ticks
    it missed and its longest gap between samples."""

    end: dt.datetime | None
    seconds: float
    missed_ticks: int
    longest_gap_s: float

    def describe(self) -> str:
        """One sentence for the report."""
        if self.end is None:
            return "no collector start-up in this recording (no collector channels, or it starts later)"
        return (
            f"the collector's own start-up (the first {self.seconds:.1f} s: {self.missed_ticks} missed "
            f"ticks, longest gap {self.longest_gap_s:.2f} s) is left out of detection and evidence"
        )

    def to_dict(self) -> dict:
        return {
            "end": None if self.end is None else self.end.isoformat(),
            "seconds": self.seconds,
            "missed_ticks": self.missed_ticks,
            "longest_gap_s": self.longest_gap_s,
        }


def _column(frame: pl.DataFrame, prefix: str) -> np.ndarray | None:
    cols = [c for c in metric_columns(frame) if c.startswith(prefix)]
    if not cols:
        return None
    return frame.get_column(cols[0]).cast(pl.Float64, strict=False).fill_null(0.0).to_numpy()


def _backlog_written(frame: pl.DataFrame, rel: np.ndarray) -> float:
    """Seconds into the recording by which a dirty-page backlog present at its start is written
    back (2 s after ``Memory:Dirty`` is under twice its median, or 16 MB above it), or 0 without a
    backlog."""
    dirty = _column(frame, "Memory:Dirty.")
    if dirty is None:
        return 0.0
    level = float(np.median(dirty))
    start = float(dirty[rel <= STARTUP_MIN_S].max(initial=0.0))
    if start < max(BACKLOG_FACTOR * level, level + BACKLOG_MIN_KB):
        return 0.0
    back = np.flatnonzero((dirty <= max(2 * level, level + BACKLOG_MIN_KB / 4)) & (rel <= BACKLOG_LIMIT_S))
    return float(min(rel[back[0]], BACKLOG_LIMIT_S)) + 2.0 if back.size else BACKLOG_LIMIT_S


def collector_startup(frame: pl.DataFrame) -> StartUp:
    """Where the collector's start-up ends in ``frame`` (a host recording read in the dataset
    view: ``Collector_diff:*`` per-tick differences, lag in µs), by the rule of the module doc.

    >>> t = [dt.datetime(2026, 1, 1) + dt.timedelta(milliseconds=100 * i) for i in range(100)]
    >>> f = pl.DataFrame({"timestamp": t, "Collector:lag.h[us]": [100.0] * 100,
    ...                   "Collector_diff:missed_ticks.h[count]": [0.0] * 50 + [9.0] + [0.0] * 49,
    ...                   "Collector_diff:cpu_time.h[us]": [1e5] + [1500.0] * 99})
    >>> s = collector_startup(f)  # its first tick's CPU, a stall at 5 s, then 10 s to settle
    >>> float(round(s.seconds, 1)), s.missed_ticks
    (15.0, 9)
    >>> collector_startup(f.with_columns(pl.lit(1500.0).alias("Collector_diff:cpu_time.h[us]"))).end is None
    True
    """
    missed = _column(frame, "Collector_diff:missed_ticks")
    if missed is None or frame.height < 2:
        return StartUp(None, 0.0, 0, 0.0)
    ts = frame.get_column(TIMESTAMP).cast(pl.Datetime("ms")).to_physical().to_numpy().astype(np.float64) / 1e3
    rel = ts - ts[0]
    gaps = np.diff(ts)
    interval = float(np.median(gaps)) if gaps.size else 0.1
    lag = _column(frame, "Collector:lag")
    cpu = _column(frame, "Collector_diff:cpu_time")
    disturbed = missed > 0
    if lag is not None:
        disturbed |= lag > 0.5 * interval * 1e6
    if cpu is not None:
        disturbed |= cpu > 0.5 * interval * 1e6
    disturbed[1:] |= gaps > 2 * interval
    early = np.flatnonzero(disturbed & (rel <= STARTUP_LIMIT_S))
    # the collector's first row has no per-tick differences yet; a piece cut from a recording
    # has them, and is calm from its first samples
    first = frame.get_column(next(c for c in metric_columns(frame) if c.startswith("Collector_diff:missed_ticks")))
    begins = first[0] is None or (early.size > 0 and rel[early[0]] <= STARTUP_MIN_S)
    if not begins:
        return StartUp(None, 0.0, 0, 0.0)
    end_s = STARTUP_MIN_S
    if early.size and rel[early[0]] <= STARTUP_MIN_S:
        # the chain of disturbances from the first tick on, each within the settle time of the
        # one before: a miss on a loaded host 20 s later is not the start
        times = rel[early]
        breaks = np.flatnonzero(np.diff(times) > STARTUP_SETTLE_S)
        last = times[breaks[0]] if breaks.size else times[-1]
        end_s = max(end_s, float(last) + STARTUP_SETTLE_S)
    end_s = max(end_s, _backlog_written(frame, rel))
    inside = rel < end_s
    longest = float(gaps[inside[1:]].max()) if inside[1:].any() else 0.0
    end = frame.get_column(TIMESTAMP)[0] + dt.timedelta(seconds=end_s)
    return StartUp(end, float(end_s), int(missed[inside].sum()), longest)


def without_startup(run: Run, startup: StartUp | None = None) -> Run:
    """``run`` from the end of the collector's start-up on (``startup``, or
    :func:`collector_startup` of the run); a run without collector channels as it is."""
    s = startup if startup is not None else collector_startup(run.frame)
    if s.end is None:
        return run
    frame = run.frame.filter(pl.col(TIMESTAMP) >= pl.lit(s.end).cast(run.frame.schema[TIMESTAMP]))
    return Run(run.meta, frame, list(run.warnings))
