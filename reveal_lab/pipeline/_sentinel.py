"""Counters that never moved in the baseline runs and move in the scored run.

The detectors cannot use them: pruning leaves out metrics constant in every fault-free run
(no correlation to keep or drop), and a feature constant in the fit data has no spread for
PCA or an isolation tree, so at most the Z-score sees it and two detectors never agree. Yet
such a counter moving is often the plainest evidence there is: on the lab recording every
packet-loss episode shows in the lossy host's ``TcpExtTCPOFOQueue`` and its sender's
``TcpExtTCPFastRetrans``, both 0 in every fault-free run (``benchmarks/sentinel_counters.py``
measures them as a detection rule; beside the detectors it costs more false alarms than the
1 % budget, so they are reported, not flagged). :func:`sentinel_counters` lists them for
``detect``'s report and ``sentinels.csv``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from reveal_lab.pipeline._method import _key
from reveal_lab.telemetry import TIMESTAMP, Run, classify, metric_columns

__all__ = ["SENTINEL_COLUMNS", "silent_counters", "silent_columns", "sentinel_counters"]

#: the columns of :func:`sentinel_counters`' frame
SENTINEL_COLUMNS = ("host", "metric", "subsystem", "samples", "share", "first", "last", "max")


def _is_counter(metric: str) -> bool:
    """A per-interval counter (a ``_diff`` source: the change of a cumulative kernel counter)."""
    return metric.split(":", 1)[0].endswith("_diff")


def silent_counters(baseline: Sequence[Run]) -> set[str]:
    """Host-free keys of the counters present in every baseline run and exactly 0 in every
    sample of every host of every one of them.

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
            k = _key(c)
            zero[k] = zero.get(k, True) and bool(x.size) and bool(np.isfinite(x).all()) and not x.any()
        here = {k for k, z in zero.items() if z}
        keys = here if keys is None else keys & here
    return keys or set()


def silent_columns(frame: pl.DataFrame, silent: set[str]) -> list[str]:
    """The metric columns of ``frame`` whose host-free key is in ``silent``
    (:func:`silent_counters`), in column order."""
    return [c for c in metric_columns(frame) if _key(c) in silent]


def sentinel_counters(parts: Mapping[str, Run], silent: set[str]) -> pl.DataFrame:
    """Per host of the scored run (``parts``: host -> its part), the counters of ``silent`` that
    are non-zero in some sample: how many samples, their share, the first and last such
    sample, the largest value; most samples first."""
    rows = []
    for host, part in parts.items():
        f = part.frame
        ts = f[TIMESTAMP]
        for c in silent_columns(f, silent):
            x = np.nan_to_num(f[c].cast(pl.Float64, strict=False).to_numpy())
            moved = np.flatnonzero(x != 0)
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
