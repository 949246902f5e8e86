"""The canonical telemetry frame and the run that carries it.

A *telemetry frame* is a polars ``DataFrame`` (or ``LazyFrame``) with

* ``timestamp``: ``Datetime("ms")`` without time zone, strictly increasing;
* one ``Float64`` column per metric, named in the metric grammar
  (:mod:`reveal_lab.telemetry._names`).

A :class:`Run` pairs the frame with :class:`RunMeta` (who, what, where) and the
warnings recorded while loading it: nothing is dropped silently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import polars as pl

from reveal_lab.telemetry._errors import TelemetryError, TelemetryWarning
from reveal_lab.telemetry._names import parse_metric_name

__all__ = [
    "TIMESTAMP",
    "TIMESTAMP_DTYPE",
    "Frame",
    "TelemetryError",
    "TelemetryWarning",
    "RunMeta",
    "Run",
    "validate_frame",
    "metric_columns",
    "to_long",
    "to_wide",
    "split_hosts",
    "frame_hosts",
]

TIMESTAMP = "timestamp"
TIMESTAMP_DTYPE = pl.Datetime("ms")
Frame: TypeAlias = pl.DataFrame | pl.LazyFrame


@dataclass
class RunMeta:
    """Who, what and where of one run. Every field is optional except ``run_id``."""

    run_id: str
    hosts: tuple[str, ...] = ()
    workload: str | None = None
    model: str | None = None
    task: str | None = None
    dataset: str | None = None
    phase: str | None = None
    mode: str | None = None
    platform: str | None = None  # "gpu" | "cpu" | "lab" | ...
    source_path: str | None = None
    start_time: str | None = None  # ISO 8601
    interval_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def host(self) -> str | None:
        return self.hosts[0] if len(self.hosts) == 1 else None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["hosts"] = list(self.hosts)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunMeta:
        names = {f.name for f in dataclasses.fields(cls)}
        known = {k: v for k, v in d.items() if k in names}
        extra = dict(known.pop("extra", {}) or {})
        extra.update({k: v for k, v in d.items() if k not in names})
        known["hosts"] = tuple(known.get("hosts", ()) or ())
        return cls(**known, extra=extra)


@dataclass
class Run:
    """A run: metadata, its telemetry frame and the warnings raised loading it."""

    meta: RunMeta
    frame: pl.DataFrame
    warnings: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.meta.run_id

    def split_hosts(self) -> dict[str, Run]:
        """One run per host (multi-host files and merged collector runs)."""
        parts = split_hosts(self.frame)
        return {
            h: Run(dataclasses.replace(self.meta, hosts=(h,), run_id=f"{self.meta.run_id}@{h}" if len(parts) > 1
                                       else self.meta.run_id), f, list(self.warnings))
            for h, f in parts.items()
        }


def metric_columns(frame: Frame) -> list[str]:
    """All columns except ``timestamp``."""
    cols = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    return [c for c in cols if c != TIMESTAMP]


def validate_frame(frame: Frame, *, source: str | None = None, strict_names: bool = False) -> Frame:
    """Check that ``frame`` is a canonical telemetry frame; return it unchanged.

    Raises :class:`TelemetryError` naming the offending column (and ``source``).
    With ``strict_names`` every metric column must follow the grammar.

    >>> import datetime as dt
    >>> df = pl.DataFrame({"timestamp": [dt.datetime(2025, 1, 1)], "Perf:IPC.h[-]": [1.0]},
    ...                   schema_overrides={"timestamp": TIMESTAMP_DTYPE})
    >>> validate_frame(df).shape
    (1, 2)
    >>> validate_frame(df.rename({"timestamp": "time"}))
    Traceback (most recent call last):
    ...
    reveal_lab.telemetry._errors.TelemetryError: frame has no 'timestamp' column (columns: ['time', 'Perf:IPC.h[-]'])
    """
    schema = frame.collect_schema()
    names = schema.names()
    if TIMESTAMP not in names:
        raise TelemetryError(f"frame has no {TIMESTAMP!r} column (columns: {names[:5]})", path=source)
    if schema[TIMESTAMP] != TIMESTAMP_DTYPE:
        raise TelemetryError(f"timestamp must be {TIMESTAMP_DTYPE}, found {schema[TIMESTAMP]}",
                             path=source, column=TIMESTAMP)
    if len(set(names)) != len(names):
        dup = sorted({c for c in names if names.count(c) > 1})
        raise TelemetryError(f"duplicate columns {dup}", path=source)
    for c in names:
        if c == TIMESTAMP:
            continue
        if schema[c] != pl.Float64:
            raise TelemetryError(f"metric columns must be Float64, found {schema[c]}", path=source, column=c)
        if strict_names and parse_metric_name(c) is None:
            raise TelemetryError("column does not follow <Source>:<field>[.<instance>].<host>[<unit>]",
                                 path=source, column=c)
    if isinstance(frame, pl.DataFrame) and frame.height > 1:
        ts = frame.get_column(TIMESTAMP)
        if ts.null_count():
            row = int(ts.is_null().arg_max())  # type: ignore[arg-type]
            raise TelemetryError(f"null timestamp at row {row}", path=source, column=TIMESTAMP)
        d = ts.diff().dt.total_milliseconds().slice(1)
        bad = d <= 0
        if bad.any():
            row = int(bad.arg_max()) + 1  # type: ignore[arg-type]
            kind = "duplicate" if d[row - 1] == 0 else "non-monotonic"
            raise TelemetryError(f"{kind} timestamp at row {row} ({ts[row]} after {ts[row - 1]})",
                                 path=source, column=TIMESTAMP)
    return frame


def to_long(frame: Frame) -> Frame:
    """Wide → long: columns ``timestamp, metric, value`` (nulls kept).

    >>> import datetime as dt
    >>> df = pl.DataFrame({"timestamp": [dt.datetime(2025, 1, 1)], "A:x.h[-]": [1.0], "B:y.h[-]": [2.0]})
    >>> to_long(df).columns
    ['timestamp', 'metric', 'value']
    """
    return frame.unpivot(index=TIMESTAMP, variable_name="metric", value_name="value")


def to_wide(long: Frame) -> Frame:
    """Long → wide; the inverse of :func:`to_long` (metric order by first appearance)."""
    if isinstance(long, pl.LazyFrame):
        long = long.collect()
    order = long.get_column("metric").unique(maintain_order=True).to_list()
    wide = long.pivot(on="metric", index=TIMESTAMP, values="value", aggregate_function=None)
    return wide.select(TIMESTAMP, *order).sort(TIMESTAMP)


def frame_hosts(frame: Frame) -> list[str]:
    """Hosts present in the frame's column names, in order of first appearance."""
    seen: dict[str, None] = {}
    for c in metric_columns(frame):
        m = parse_metric_name(c)
        if m is not None:
            seen.setdefault(m.host, None)
    return list(seen)


def split_hosts(frame: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Split a multi-host frame into one frame per host (rows where the host has
    no data at all are dropped; unparsable columns go with every host)."""
    hosts = frame_hosts(frame)
    if len(hosts) <= 1:
        return {hosts[0] if hosts else "unknown": frame}
    shared = [c for c in metric_columns(frame) if parse_metric_name(c) is None]
    out = {}
    for h in hosts:
        cols = [c for c in metric_columns(frame) if (m := parse_metric_name(c)) is not None and m.host == h]
        part = frame.select(TIMESTAMP, *cols, *shared)
        part = part.filter(~pl.all_horizontal(pl.col(cols).is_null()))
        out[h] = part
    return out
