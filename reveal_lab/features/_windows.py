"""Sliding windows by time (paper §4.2), robust to gaps and sampling jitter."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl

from reveal_lab.config import WindowConfig
from reveal_lab.telemetry import TIMESTAMP, TIMESTAMP_DTYPE, Frame, TelemetryError, TelemetryWarning

__all__ = ["make_windows", "WINDOW_SCHEMA", "effective_interval_ms"]

WINDOW_SCHEMA = {
    "window_id": pl.Int64,
    "start": TIMESTAMP_DTYPE,
    "end": TIMESTAMP_DTYPE,
    "row_start": pl.Int64,
    "row_end": pl.Int64,
    "n_samples": pl.Int64,
}


def _timestamps_ms(frame: Frame) -> np.ndarray:
    if isinstance(frame, pl.LazyFrame):
        frame = frame.select(TIMESTAMP).collect()
    if TIMESTAMP not in frame.columns:
        raise TelemetryError(f"frame has no {TIMESTAMP!r} column", column=TIMESTAMP)
    ts = frame.get_column(TIMESTAMP)
    if ts.dtype != TIMESTAMP_DTYPE:
        try:
            ts = ts.cast(TIMESTAMP_DTYPE)
        except Exception as exc:  # noqa: BLE001 - re-raised with context
            raise TelemetryError(
                f"timestamp must be {TIMESTAMP_DTYPE}, found {ts.dtype}", column=TIMESTAMP
            ) from exc
    if ts.null_count():
        raise TelemetryError(f"null timestamp at row {int(ts.is_null().arg_max())}", column=TIMESTAMP)
    t = ts.dt.epoch("ms").to_numpy().astype(np.int64)
    if t.size > 1:
        bad = np.flatnonzero(np.diff(t) <= 0)
        if bad.size:
            raise TelemetryError(
                f"timestamps must be strictly increasing; row {int(bad[0]) + 1} is not", column=TIMESTAMP
            )
    return t


def effective_interval_ms(t_ms: np.ndarray, config: WindowConfig) -> float:
    """The sampling interval used to count expected samples per window.

    ``config.interval_s`` unless the run's median step differs from it by more
    than a factor of 1.5 (a 1-minute data set read with the 100 ms default), in
    which case the median step is used and a :class:`TelemetryWarning` says so.
    """
    nominal = config.interval_s * 1000.0
    if t_ms.size < 2:
        return nominal
    med = float(np.median(np.diff(t_ms)))
    if med > 1.5 * nominal or med < nominal / 1.5:
        warnings.warn(
            f"sampling interval: the run's median step is {med:g} ms but the window config says "
            f"{nominal:g} ms; counting expected samples per window with {med:g} ms",
            TelemetryWarning,
            stacklevel=3,
        )
        return med
    return nominal


def make_windows(
    frame: Frame, config: WindowConfig | None = None, *, include_dropped: bool = False
) -> pl.DataFrame:
    """Windows ``[start, start + window)`` every ``stride``, by time.

    The first window starts at the first timestamp; a window is laid down while it
    ends no later than the end of the data (last timestamp + one interval). Rows
    are assigned by timestamp, so gaps and jitter give windows with fewer or more
    samples, never shifted ones. ``window_id`` is the window's position on the
    stride grid (``start = t0 + window_id * stride``), so ids stay comparable when
    windows are dropped.

    A window with fewer than ``config.min_fill`` × (window / interval) samples is
    dropped; the drop is reported with a :class:`TelemetryWarning` (how many, which
    ids), and ``include_dropped=True`` returns every window with a ``kept`` column.

    Parameters
    ----------
    frame : a canonical telemetry frame (only ``timestamp`` is read).
    config : window length, stride, nominal interval and minimum fill.

    Returns
    -------
    polars.DataFrame with ``window_id, start, end, row_start, row_end, n_samples``
    (``row_end`` exclusive).

    Raises
    ------
    TelemetryError
        if the run is shorter than one window, or no window is full enough.

    Examples
    --------
    >>> import datetime as dt
    >>> t0 = dt.datetime(2025, 1, 1)
    >>> ts = [t0 + dt.timedelta(milliseconds=100 * i) for i in range(50)]
    >>> df = pl.DataFrame({"timestamp": ts, "A:x.h[-]": [float(i) for i in range(50)]},
    ...                   schema_overrides={"timestamp": pl.Datetime("ms")})
    >>> w = make_windows(df, WindowConfig(window_s=3, stride_s=1, interval_s=0.1))
    >>> w.select("window_id", "row_start", "row_end", "n_samples").rows()
    [(0, 0, 30, 30), (1, 10, 40, 30), (2, 20, 50, 30)]
    """
    config = config or WindowConfig()
    if config.window_s <= 0 or config.stride_s <= 0 or config.interval_s <= 0:
        raise ValueError(f"window, stride and interval must be positive: {config}")
    if not 0 <= config.min_fill <= 1:
        raise ValueError(f"min_fill must lie in [0, 1], got {config.min_fill}")
    t = _timestamps_ms(frame)
    if t.size == 0:
        raise TelemetryError("run has no samples; cannot make windows", column=TIMESTAMP)
    interval = effective_interval_ms(t, config)
    win = int(round(config.window_s * 1000.0))
    stride = int(round(config.stride_s * 1000.0))
    t0 = int(t[0])
    data_end = int(t[-1]) + int(round(interval))
    span_s = (data_end - t0) / 1000.0
    n_win = (data_end - t0 - win) // stride + 1 if data_end - t0 >= win else 0
    if n_win <= 0:
        raise TelemetryError(
            f"run spans {span_s:g} s ({t.size} samples), shorter than one {config.window_s:g} s window"
        )
    ids = np.arange(n_win, dtype=np.int64)
    starts = t0 + ids * stride
    ends = starts + win
    row_start = np.searchsorted(t, starts, side="left").astype(np.int64)
    row_end = np.searchsorted(t, ends, side="left").astype(np.int64)
    n = row_end - row_start
    expected = win / interval
    kept = n >= max(1.0, config.min_fill * expected) - 1e-9
    out = pl.DataFrame(
        {
            "window_id": ids,
            "start": starts,
            "end": ends,
            "row_start": row_start,
            "row_end": row_end,
            "n_samples": n,
        }
    ).with_columns(pl.col("start").cast(TIMESTAMP_DTYPE), pl.col("end").cast(TIMESTAMP_DTYPE))
    n_drop = int((~kept).sum())
    if n_drop:
        dropped = ids[~kept]
        shown = ", ".join(str(i) for i in dropped[:10]) + (" ..." if n_drop > 10 else "")
        warnings.warn(
            f"{n_drop} of {n_win} windows dropped: fewer than {config.min_fill:.0%} of the expected "
            f"{expected:g} samples (window ids {shown})",
            TelemetryWarning,
            stacklevel=2,
        )
    if include_dropped:
        return out.with_columns(kept=pl.Series(kept))
    if n_drop == n_win:
        raise TelemetryError(
            f"no window has {config.min_fill:.0%} of its expected {expected:g} samples "
            f"(best: {int(n.max())}); the run is too sparse for {config.window_s:g} s windows"
        )
    return out.filter(pl.Series(kept))
