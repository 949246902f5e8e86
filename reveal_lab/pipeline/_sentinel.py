"""Counters that never moved in the baseline runs and move in the scored run.

The detectors cannot use them: pruning leaves out metrics constant in every fault-free run
(no correlation to keep or drop), and a feature constant in the fit data has no spread for
PCA or an isolation tree, so at most the Z-score sees it and two detectors never agree. Yet
such a counter moving is often the plainest evidence there is: on the lab recording every
packet-loss episode shows in the lossy host's ``TcpExtTCPOFOQueue`` and its sender's
``TcpExtTCPFastRetrans``, both 0 in every fault-free run. :func:`sentinel_counters` lists them
for ``detect``'s report and ``sentinels.csv``; :func:`sentinel_windows` is the sentinel rule
(a window where one is non-zero in the detection policy's ``sentinel_samples`` of its samples is
anomalous; ``scripts/studies/sentinel_counters.py`` measures it, ``docs/RESULTS.md`` has the
figures). The collector's own counters (its missed ticks: kind ``instrument``) are never
sentinels.

A run alone has no baseline to say which counters are silent. :func:`lone_sentinel_windows` is
the rule's form for it: a counter 0 in at least half of the run's own samples (its calm majority
is exactly 0, so its robust scale is 0 and the detectors' standard deviation is set by the
bursts themselves) that moves in at least 90 % of a window's samples, in 4 or more windows in a
row: the lab's storage bursts, which the detectors miss (``scripts/studies/lone_runs.py``). Per-CPU
interrupt counters are left out of it (:data:`LONE_GENERIC_SOURCES`), and a window where several
fire is named after the rarest of them, the one quiet in the largest share of the run: on the
host recordings (``docs/host_recordings.md``) function-call IPIs tick for seconds at a time with
no job running, and a page allocation counter moves with every job, a send or a write included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from reveal_lab.pipeline._policy import DetectionPolicy
from reveal_lab.telemetry import TIMESTAMP, Run, classify, metric_columns, metric_key

__all__ = [
    "SENTINEL_COLUMNS",
    "SENTINEL_MIN_SAMPLES",
    "SENTINEL_WINDOW_SCHEMA",
    "silent_counters",
    "silent_columns",
    "per_interval_counts",
    "sentinel_evidence",
    "sentinel_counters",
    "sentinel_windows",
    "quiet_counters",
    "lone_sentinel_windows",
    "LONE_QUIET_SHARE",
    "LONE_ACTIVE_SHARE",
    "LONE_GENERIC_SOURCES",
    "silent_indices",
    "moved_samples",
    "check_min_samples",
]

#: the columns of :func:`sentinel_counters`' frame
SENTINEL_COLUMNS = ("host", "metric", "subsystem", "samples", "share", "first", "last", "max")
#: the columns :func:`sentinel_windows` adds to a window
SENTINEL_WINDOW_SCHEMA: dict[str, pl.DataType] = {
    "sentinel_samples": pl.Int64,
    "sentinel": pl.Boolean,
    "sentinel_metric": pl.String,
    "sentinel_subsystem": pl.String,
}
#: a window fires when a silent counter is non-zero in at least this many of its samples
#: (:class:`DetectionPolicy`'s ``sentinel_samples``, where the choice is explained)
SENTINEL_MIN_SAMPLES = DetectionPolicy.sentinel_samples
#: a run alone: a counter is quiet when it is 0 in at least this share of the run's samples (a
#: majority: its median and MAD are 0)
LONE_QUIET_SHARE = 0.5
#: a run alone: a window fires when a quiet counter moved in at least this share of its samples
#: (continuously active, not a counter that ticks now and then)
LONE_ACTIVE_SHARE = 0.9
#: a run alone: counter sources never taken as quiet counters. Per-CPU interrupts (IPIs, timer,
#: rescheduling) tick with whatever runs on the host: on the fault-free host recordings
#: ``Interrupts_diff:CAL`` moved in 90 % of the samples of 74 of 870 windows, 4-16 windows in a row
LONE_GENERIC_SOURCES = ("Interrupts_diff",)


def _is_counter(metric: str) -> bool:
    """A per-interval counter of the host (a ``_diff`` source: the change of a cumulative kernel
    counter), not of the collector itself (its missed ticks are data quality)."""
    return metric.split(":", 1)[0].endswith("_diff") and classify(metric).kind != "instrument"


def silent_counters(baseline: Sequence[Run]) -> set[str]:
    """Host-free keys of the counters present in every baseline run and exactly 0 in every
    sample (with a value) of every host of every one of them.

    >>> import datetime as dt
    >>> from reveal_lab.telemetry import RunMeta
    >>> t = [dt.datetime(2026, 1, 1, 0, 0, s) for s in range(3)]
    >>> f = pl.DataFrame({"timestamp": t, "Nstat_diff:TcpExtTCPOFOQueue.h1[count]": [0.0] * 3,
    ...                   "Nstat_diff:TcpInSegs.h1[count]": [5.0, 0.0, 7.0]})
    >>> sorted(silent_counters([Run(RunMeta(run_id="b", hosts=("h1",)), f)]))
    ['Nstat_diff:TcpExtTCPOFOQueue']
    """
    keys: set[str] | None = None
    for b in baseline:
        zero: dict[str, bool] = {}
        for c in metric_columns(b.frame):
            if not _is_counter(c):
                continue
            x = b.frame[c].cast(pl.Float64, strict=False).to_numpy()
            k = metric_key(c)
            x = x[np.isfinite(x)]  # missing samples (a difference's first row) say nothing
            zero[k] = zero.get(k, True) and bool(x.size) and not x.any()
        here = {k for k, z in zero.items() if z}
        keys = here if keys is None else keys & here
    return keys or set()


def check_min_samples(value: object, name: str = "min_samples") -> None:
    """Refuse, naming ``name``, a count that is not a whole number >= 1 (the sentinel rule's
    :func:`sentinel_windows`, the policy's ``sentinel_samples``, and ``detect_run``'s
    ``min_run``, a count of windows).

    >>> check_min_samples(0, "min_samples")
    Traceback (most recent call last):
    ...
    ValueError: min_samples must be a whole number >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")


def moved_samples(values: np.ndarray) -> np.ndarray:
    """Which samples of a counter moved: finite and non-zero. A missing or non-finite sample
    (a difference's first row, a rate over an empty interval) says nothing, in the baseline
    (:func:`silent_counters`) and in the scored run alike.

    >>> moved_samples(np.array([0.0, 3.0, np.nan, np.inf, -1.0])).tolist()
    [False, True, False, False, True]
    """
    return np.isfinite(values) & (values != 0)


def silent_columns(frame: pl.DataFrame, silent: set[str]) -> list[str]:
    """The metric columns of ``frame`` whose host-free key is in ``silent``
    (:func:`silent_counters`), in column order."""
    return [c for c in metric_columns(frame) if metric_key(c) in silent]


def silent_indices(columns: Sequence[str], silent: set[str]) -> list[int]:
    """The positions in ``columns`` (metric names) of those whose host-free key is in ``silent``."""
    return [i for i, c in enumerate(columns) if c != TIMESTAMP and metric_key(c) in silent]


def sentinel_evidence(
    metric: str, samples: int, *, lone_windows: int | None = None
) -> dict[str, Any]:
    """The evidence of a window the sentinel rule fires on (the attribution's evidence fields
    but ``rank`` and the window's own: ``detect_run`` and the live engine add those);
    ``lone_windows``: the rule's form for a run alone (:func:`lone_sentinel_windows`), with
    this many windows in a row.

    >>> sentinel_evidence("Nstat_diff:TcpExtTCPOFOQueue.h1[count]", 7)["subsystem"]
    'network'
    >>> sentinel_evidence("Disk_diff:sectors_read.vda.h1[sectors]", 30, lone_windows=4)["claim"][-81:]
    "most of this run's samples, non-zero in 30 of this window's (4+ windows in a row)"
    """
    where = (
        f"most of this run's samples, non-zero in {samples} of this window's "
        f"({lone_windows}+ windows in a row)"
        if lone_windows
        else f"every sample of the baseline runs and non-zero in {samples} of this window's samples"
    )
    return {
        "subsystem": classify(metric).subsystem,
        "metric": metric,
        "feature": "nonzero_samples",
        "score": float(samples),
        "claim": f"{metric} is 0 in {where}",
        "evidence_of": "sentinel",
        "value": float(samples),
        "baseline": 0.0,
        "z": None,
    }


def per_interval_counts(run: Run, derive: bool = True) -> Run:
    """``run`` with its cumulative counters as per-interval differences (``_diff``, as the
    detectors see them: :func:`reveal_lab.derive.add_derived`) when ``derive``; lab and
    public-dataset frames hold differences already, a collector's hold running totals."""
    if not derive:
        return run
    from reveal_lab.derive import add_derived

    return Run(run.meta, add_derived(run.frame), run.warnings)


def sentinel_counters(parts: Mapping[str, Run], silent: set[str]) -> pl.DataFrame:
    """Per host of the scored run (``parts``: host -> its part), the counters of ``silent`` that
    are non-zero in some sample: how many samples, their share, the first and last such
    sample, the largest value; most samples first."""
    rows = []
    for host, part in parts.items():
        f = part.frame
        ts = f[TIMESTAMP]
        for c in silent_columns(f, silent):
            x = f[c].cast(pl.Float64, strict=False).to_numpy()
            moved = np.flatnonzero(moved_samples(x))
            if moved.size == 0:
                continue
            rows.append(
                {
                    "host": host,
                    "metric": c,
                    "subsystem": classify(c).subsystem,
                    "samples": int(moved.size),
                    "share": moved.size / max(x.size, 1),
                    "first": ts[int(moved[0])],
                    "last": ts[int(moved[-1])],
                    "max": float(np.abs(x[moved]).max()),
                }
            )
    schema = {
        "host": pl.String,
        "metric": pl.String,
        "subsystem": pl.String,
        "samples": pl.Int64,
        "share": pl.Float64,
        "first": pl.Datetime("ms"),
        "last": pl.Datetime("ms"),
        "max": pl.Float64,
    }
    out = pl.DataFrame(rows, schema=schema, strict=False)
    return out.sort(["samples", "host", "metric"], descending=[True, False, False])


def _moved_counts(
    frame: pl.DataFrame, cols: Sequence[str], w: pl.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """For each window of ``w`` (``start``, ``end``; ``[start, end)``): in how many of its samples
    each counter of ``cols`` moved (windows x counters), and how many samples it has."""
    ms = pl.Datetime("ms")
    ts = frame[TIMESTAMP].cast(ms).to_physical().to_numpy()
    a = np.searchsorted(ts, w["start"].cast(ms).to_physical().to_numpy(), side="left")
    b = np.searchsorted(ts, w["end"].cast(ms).to_physical().to_numpy(), side="left")
    moved = np.column_stack(
        [moved_samples(frame[c].cast(pl.Float64, strict=False).to_numpy()) for c in cols]
    )
    cum = np.vstack([np.zeros((1, len(cols)), dtype=np.int64), np.cumsum(moved, axis=0)])
    return cum[b] - cum[a], b - a


def _window_frame(w: pl.DataFrame, n: np.ndarray, metric: list[str | None]) -> pl.DataFrame:
    """The sentinel columns of the windows ``w``: a window fires where ``metric`` names a counter."""
    return w.select("window_id", "host").with_columns(
        sentinel_samples=pl.Series(n, dtype=pl.Int64),
        sentinel=pl.Series([m is not None for m in metric], dtype=pl.Boolean),
        sentinel_metric=pl.Series(metric, dtype=pl.String),
        sentinel_subsystem=pl.Series(
            [classify(m).subsystem if m else None for m in metric], dtype=pl.String
        ),
    )


def sentinel_windows(
    windows: pl.DataFrame, parts: Mapping[str, Run], silent: set[str], min_samples: int = SENTINEL_MIN_SAMPLES
) -> pl.DataFrame:
    """Per window of ``windows`` (``window_id, host, start, end``; ``[start, end)``) the
    counter of ``silent`` non-zero in most of its samples of ``parts[host]``:
    ``sentinel_samples`` (how many; 0 when none moves), ``sentinel`` (at least
    ``min_samples``) and, for those, ``sentinel_metric`` and ``sentinel_subsystem``.

    >>> import datetime as dt
    >>> from reveal_lab.telemetry import RunMeta
    >>> t = [dt.datetime(2026, 1, 1) + dt.timedelta(milliseconds=100 * i) for i in range(60)]
    >>> f = pl.DataFrame({"timestamp": t, "Nstat_diff:TcpExtTCPOFOQueue.h1[count]": [0.0] * 40 + [1.0] * 20},
    ...                  schema_overrides={"timestamp": pl.Datetime("ms")})
    >>> w = pl.DataFrame({"window_id": [0, 1], "host": ["h1", "h1"], "start": [t[0], t[30]],
    ...                   "end": [t[30], t[59] + dt.timedelta(milliseconds=100)]})
    >>> parts = {"h1": Run(RunMeta(run_id="r", hosts=("h1",)), f)}
    >>> sentinel_windows(w, parts, {"Nstat_diff:TcpExtTCPOFOQueue"}).select(
    ...     "window_id", "sentinel_samples", "sentinel", "sentinel_subsystem").rows()
    [(0, 0, False, None), (1, 20, True, 'network')]
    """
    check_min_samples(min_samples)
    out = []
    for host, part in parts.items():
        w = windows.filter(pl.col("host") == host).select("window_id", "host", "start", "end")
        if w.is_empty():
            continue
        f = part.frame
        cols = silent_columns(f, silent)
        n = np.zeros(w.height, dtype=np.int64)
        metric: list[str | None] = [None] * w.height
        if cols and f.height:
            counts, _ = _moved_counts(f, cols, w)  # windows x counters
            best = counts.argmax(axis=1)
            n = counts[np.arange(w.height), best]
            metric = [cols[j] if k >= min_samples else None for j, k in zip(best, n, strict=True)]
        out.append(_window_frame(w, n, metric))
    schema = {"window_id": pl.Int64, "host": pl.String, **SENTINEL_WINDOW_SCHEMA}
    return pl.concat(out, how="vertical") if out else pl.DataFrame(schema=schema)


def _quiet_shares(frame: pl.DataFrame, cols: Sequence[str]) -> np.ndarray:
    """For each counter of ``cols``: the share of its samples with a value that are 0."""
    out = np.zeros(len(cols))
    for j, c in enumerate(cols):
        x = frame[c].cast(pl.Float64, strict=False).to_numpy()
        x = x[np.isfinite(x)]
        out[j] = 1.0 - moved_samples(x).mean() if x.size else 1.0
    return out


def lone_candidate(metric: str) -> bool:
    """Whether ``metric`` can fire a run alone's sentinel rule: a per-interval counter of the
    host (not the collector's own) outside :data:`LONE_GENERIC_SOURCES`.

    >>> lone_candidate("Disk_diff:sectors_read.vda.h[sectors]")
    True
    >>> lone_candidate("Interrupts_diff:CAL.0.h[count]")  # a generic source
    False
    """
    return _is_counter(metric) and metric.split(":", 1)[0] not in LONE_GENERIC_SOURCES


def quiet_counters(frame: pl.DataFrame, quiet_share: float = LONE_QUIET_SHARE) -> list[str]:
    """The counter columns of ``frame`` (per-interval differences of the host, not the
    collector's own, not of :data:`LONE_GENERIC_SOURCES`) that moved in some sample and are 0
    in at least ``quiet_share`` of their samples with a value: the counters of a run alone
    whose calm majority is exactly 0.

    >>> import datetime as dt
    >>> t = [dt.datetime(2026, 1, 1) + dt.timedelta(milliseconds=100 * i) for i in range(10)]
    >>> f = pl.DataFrame({"timestamp": t, "Disk_diff:sectors_read.vda.h[sectors]": [0.0] * 6 + [9.0] * 4,
    ...                   "Nstat_diff:TcpInSegs.h[count]": [3.0] * 10,
    ...                   "Interrupts_diff:CAL.0.h[count]": [0.0] * 6 + [2.0] * 4})
    >>> quiet_counters(f)
    ['Disk_diff:sectors_read.vda.h[sectors]']
    """
    out = []
    for c in metric_columns(frame):
        if not lone_candidate(c):
            continue
        x = frame[c].cast(pl.Float64, strict=False).to_numpy()
        x = x[np.isfinite(x)]
        moved = moved_samples(x)
        if moved.any() and 1.0 - moved.mean() >= quiet_share:
            out.append(c)
    return out


def lone_sentinel_windows(
    windows: pl.DataFrame,
    parts: Mapping[str, Run],
    min_run: int,
    *,
    quiet_share: float = LONE_QUIET_SHARE,
    active_share: float = LONE_ACTIVE_SHARE,
) -> pl.DataFrame:
    """The sentinel rule for a run alone (no baseline runs to say which counters are silent):
    per window of ``windows`` (``window_id, host, start, end``; ``[start, end)``), a window
    fires when a counter of :func:`quiet_counters` of ``parts[host]`` moved in at least
    ``active_share`` of the window's samples, in ``min_run`` or more consecutive windows
    (:func:`reveal_lab.pipeline.sustained`). The columns of :func:`sentinel_windows`:
    ``sentinel_samples`` (the samples the named counter moved in), ``sentinel``,
    ``sentinel_metric`` and ``sentinel_subsystem`` (of the rarest firing counter: the one 0 in
    the largest share of the run's samples; then the one that moved in the most of the
    window's samples; then the first in column order).

    >>> import datetime as dt
    >>> from reveal_lab.telemetry import RunMeta
    >>> t = [dt.datetime(2026, 1, 1) + dt.timedelta(milliseconds=100 * i) for i in range(100)]
    >>> f = pl.DataFrame({"timestamp": t, "Disk_diff:sectors_read.vda.h[sectors]": [0.0] * 60 + [8.0] * 40},
    ...                  schema_overrides={"timestamp": pl.Datetime("ms")})
    >>> w = pl.DataFrame({"window_id": list(range(8)), "host": ["h"] * 8,
    ...                   "start": [t[10 * i] for i in range(8)], "end": [t[10 * i + 20] for i in range(8)]})
    >>> lone_sentinel_windows(w, {"h": Run(RunMeta(run_id="r", hosts=("h",)), f)}, 2).select(
    ...     "window_id", "sentinel_samples", "sentinel", "sentinel_subsystem").rows()[4:]
    [(4, 0, False, None), (5, 0, False, None), (6, 20, True, 'storage'), (7, 20, True, 'storage')]
    """
    from reveal_lab.numeric import sustained

    out = []
    for host, part in parts.items():
        w = windows.filter(pl.col("host") == host).select("window_id", "host", "start", "end")
        w = w.sort("start")
        if w.is_empty():
            continue
        f = part.frame
        n = np.zeros(w.height, dtype=np.int64)
        metric: list[str | None] = [None] * w.height
        cols = quiet_counters(f, quiet_share) if f.height else []
        if cols:
            counts, samples = _moved_counts(f, cols, w)  # windows x counters
            share = counts / np.maximum(samples, 1)[:, None]
            fired = np.column_stack(
                [sustained(share[:, j] >= active_share, min_run) for j in range(len(cols))]
            )
            # the rarest firing counter: the largest quiet share, then the most samples moved
            # (argmax: the first in column order on a tie)
            rarity = np.unique(_quiet_shares(f, cols), return_inverse=True)[1].reshape(-1)
            key = rarity[None, :] * (int(counts.max(initial=0)) + 1) + counts
            best = np.where(fired, key, -1).argmax(axis=1)
            hit = fired.any(axis=1)
            n = np.where(hit, counts[np.arange(w.height), best], 0)
            metric = [cols[j] if h else None for j, h in zip(best, hit, strict=True)]
        out.append(_window_frame(w, n, metric))
    schema = {"window_id": pl.Int64, "host": pl.String, **SENTINEL_WINDOW_SCHEMA}
    return pl.concat(out, how="vertical") if out else pl.DataFrame(schema=schema)
