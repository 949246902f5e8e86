"""Read the collector's on-disk format (``reveal_lab/collect/FORMAT.md``) into a :class:`Run`,
and merge runs recorded on several hosts at once.

A run directory holds ``meta.json``, ``channels.json``, zstd Parquet segments and
the journal of the segment being written. The reader replays the segments, then
the journal tail; a torn last chunk (the collector was killed mid-write, or the
disk filled) becomes a warning naming the bytes left out, never an error.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

from reveal_lab.collect import dataset_view
from reveal_lab.collect.journal import JOURNAL_RE, MISSING_INT, SEGMENT_RE, read_journal
from reveal_lab.telemetry import (
    TIMESTAMP,
    TIMESTAMP_DTYPE,
    Run,
    RunMeta,
    TelemetryError,
    TelemetryWarning,
    metric_columns,
    validate_frame,
)

__all__ = ["read_collector_run", "merge_hosts", "is_collector_run"]

_SEG_RE, _JOURNAL_RE = SEGMENT_RE, JOURNAL_RE  # one definition, in collect.journal


def is_collector_run(path: str | Path) -> bool:
    """True when ``path`` is a directory written by ``reveal-lab collect``."""
    p = Path(path)
    return p.is_dir() and (p / "meta.json").is_file() and (p / "channels.json").is_file()


def _warn(warns: list[str], msg: str) -> None:
    warns.append(msg)
    warnings.warn(msg, TelemetryWarning, stacklevel=3)


def _read_journal(path: Path, n_int: int, n_float: int, crc: int, warns: list[str]) -> list[pl.DataFrame]:
    blocks, notes = read_journal(path, n_int, n_float, crc)
    for msg in notes:
        _warn(warns, msg)
    return blocks


def _blocks_to_frame(
    blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]], ints: list[dict], floats: list[dict]
) -> pl.DataFrame:
    times = np.vstack([b[0] for b in blocks])
    cols: dict[str, Any] = {"seq": times[:, 0], "t_wall_ns": times[:, 1], "t_mono_ns": times[:, 2]}
    if ints:
        im = np.vstack([b[1] for b in blocks])
        for j, c in enumerate(ints):
            col = im[:, j]
            miss = col == MISSING_INT
            cols[c["name"]] = pl.Series(c["name"], col, dtype=pl.Int64)
            if miss.any():
                cols[c["name"]] = pl.Series(c["name"], np.where(miss, 0, col)).scatter(
                    np.flatnonzero(miss), None
                )
    if floats:
        fm = np.vstack([b[2] for b in blocks])
        for j, c in enumerate(floats):
            cols[c["name"]] = fm[:, j]
    return pl.DataFrame(cols)


def read_raw_frame(path: str | Path) -> tuple[pl.DataFrame, dict[str, Any], list[dict[str, Any]], list[str]]:
    """The stored samples (``seq, t_wall_ns, t_mono_ns`` + raw channels, ints as Int64),
    ``meta.json``, ``channels.json`` and the warnings raised reading them."""
    p = Path(path)
    if not p.is_dir():
        raise TelemetryError("no such collector run directory", path=str(p))
    warns: list[str] = []
    try:
        meta = json.loads((p / "meta.json").read_text())
    except FileNotFoundError:
        raise TelemetryError("not a collector run: meta.json is missing", path=str(p)) from None
    except json.JSONDecodeError as exc:
        raise TelemetryError(
            f"meta.json is not valid JSON: {exc.msg}", path=str(p / "meta.json"), line=exc.lineno
        ) from None
    try:
        blob = (p / "channels.json").read_bytes()
    except FileNotFoundError:
        raise TelemetryError(
            "channels.json is missing (the collector stopped before its first sample?)", path=str(p)
        ) from None
    try:
        channels = json.loads(blob)
    except json.JSONDecodeError as exc:
        raise TelemetryError(
            f"channels.json is not valid JSON: {exc.msg}",
            path=str(p / "channels.json"),
            line=exc.lineno,
        ) from None
    import zlib

    crc = zlib.crc32(blob)
    ints = [c for c in channels if c["dtype"] == "i"]
    floats = [c for c in channels if c["dtype"] == "f"]
    names = ["seq", "t_wall_ns", "t_mono_ns"] + [c["name"] for c in channels]
    schema = {"seq": pl.Int64, "t_wall_ns": pl.Int64, "t_mono_ns": pl.Int64}
    schema.update({c["name"]: (pl.Int64 if c["dtype"] == "i" else pl.Float64) for c in channels})

    frames: list[pl.DataFrame] = []
    segs = {int(m.group(1)): f for f in p.iterdir() if (m := _SEG_RE.match(f.name))}
    journals = {int(m.group(1)): f for f in p.iterdir() if (m := _JOURNAL_RE.match(f.name))}
    for i in sorted(segs):
        f = segs[i]
        try:
            seg = pl.read_parquet(f)
        except Exception as exc:  # noqa: BLE001 - pyarrow/polars raise several types
            if i in journals:
                _warn(warns, f"{f}: unreadable segment ({exc}); using its journal instead")
                continue
            raise TelemetryError(f"unreadable Parquet segment: {exc}", path=str(f)) from None
        have = set(seg.columns)  # a polars frame builds its column list on each access
        missing = [n for n in names if n not in have]
        if missing:
            raise TelemetryError(
                f"segment lacks {len(missing)} channel(s) listed in channels.json",
                path=str(f),
                column=missing[0],
            )
        frames.append(seg.select(names).cast(schema))  # type: ignore[arg-type]
        if i in journals:
            _warn(
                warns,
                f"{journals[i]}: left over after its segment was written (collector stopped "
                "between rename and unlink); ignored",
            )
            journals.pop(i)
    for i in sorted(journals):
        blocks = _read_journal(journals[i], len(ints), len(floats), crc, warns)
        if blocks:
            frames.append(_blocks_to_frame(blocks, ints, floats).select(names).cast(schema))  # type: ignore[arg-type]
    if frames:
        raw = pl.concat(frames, how="vertical")
    else:
        raw = pl.DataFrame(schema=schema)
        _warn(warns, f"{p}: the run holds no sample")
    raw = raw.sort("seq")
    dup = raw.height - raw.get_column("seq").n_unique()
    if dup:
        _warn(warns, f"{p}: {dup} samples stored twice (segment and journal); kept once")
        raw = raw.unique("seq", keep="first", maintain_order=True)
    return raw, meta, channels, warns


def _timestamps(raw: pl.DataFrame, meta: dict[str, Any]) -> pl.Expr:
    clock = meta.get("clock") or {}
    wall0, mono0 = clock.get("wall_ns"), clock.get("mono_ns")
    if wall0 is None or mono0 is None:  # no clock anchor: fall back to the wall clock
        ns = pl.col("t_wall_ns")
    else:
        ns = pl.lit(int(wall0)) + (pl.col("t_mono_ns") - pl.lit(int(mono0)))
    return (ns // 1_000_000).cast(pl.Datetime("ms")).alias(TIMESTAMP)


def read_collector_run(path: str | Path, view: Literal["dataset", "raw"] = "dataset") -> Run:
    """Read a collector run directory (Parquet segments + journal tail + ``meta.json``).

    Parameters
    ----------
    path : str or Path
        The ``--out`` directory of ``reveal-lab collect``.
    view : {"dataset", "raw"}
        ``"raw"``: every stored channel as recorded (cumulative counters cumulative).
        ``"dataset"``: the public dataset's columns: counters as ``<Source>_diff``
        first differences (first row null), plus derived columns (``CPU:Busy%``,
        ``Memory:MemoryUtilization``, ``NetworkInterStat_diff:NetworkUtilization``,
        all-core ``Perf:`` counts and ``Storage_diff:`` sums over disks).

    Returns
    -------
    Run
        A canonical frame (``timestamp`` from the monotonic clock anchored at the
        start's wall time, UTC, naive, ms) and ``meta.extra`` holding ``meta.json``.
        Torn journal tails and other recoverable oddities are in ``Run.warnings``.
    """
    if view not in ("dataset", "raw"):
        raise ValueError(f"view must be 'dataset' or 'raw', not {view!r}")
    raw, meta, channels, warns = read_raw_frame(path)
    ts = _timestamps(raw, meta)
    if view == "raw":
        frame = raw.select(ts, *[pl.col(c["name"]).cast(pl.Float64) for c in channels])
    else:
        frame = raw.select(ts, *dataset_view(raw, channels, meta))
    # samples closer than 1 ms cannot be told apart in the canonical frame
    if frame.height > 1:
        d = frame.get_column(TIMESTAMP).diff().slice(1)
        bad = int((d.dt.total_milliseconds() <= 0).sum())
        if bad:
            _warn(
                warns,
                f"{path}: {bad} samples share a millisecond with the previous one; the later one is dropped",
            )
            frame = frame.unique(TIMESTAMP, keep="first", maintain_order=True)
    frame = frame.with_columns(pl.col(TIMESTAMP).cast(TIMESTAMP_DTYPE))
    validate_frame(frame, source=str(path))
    extra = {k: v for k, v in meta.items() if k not in ("host", "interval_ms", "start_time")}
    extra["view"] = view
    if meta.get("status") == "running":
        _warn(
            warns,
            f"{path}: meta.json says the collector is still running or was killed "
            f"({raw.height} samples readable)",
        )
    rm = RunMeta(
        run_id=Path(path).resolve().name,
        hosts=(meta["host"],),
        platform="collector",
        source_path=str(path),
        start_time=meta.get("start_time"),
        interval_ms=meta.get("interval_ms"),
        extra=extra,
    )
    return Run(rm, frame, warns)


def merge_hosts(
    runs: Sequence[Run], *, tolerance_ms: float | None = None, skew_ms: dict[str, float] | None = None
) -> Run:
    """Merge single-host runs recorded at the same time into one multi-host run, by time.

    The first run's timestamps are the reference timeline; every other host's
    samples are joined to the nearest reference timestamp within ``tolerance_ms``
    (default: half the largest interval), after subtracting that host's known clock
    offset ``skew_ms[host]`` (its clock minus the reference clock, e.g. from
    ``chronyc tracking`` or ``clockdiff``). Reference rows with no sample from a host
    within the tolerance hold nulls for that host; samples left unmatched are counted
    in the run's warnings.
    """
    if not runs:
        raise ValueError("merge_hosts needs at least one run")
    skew_ms = dict(skew_ms or {})
    hosts: list[str] = []
    for r in runs:
        if len(r.meta.hosts) != 1:
            raise ValueError(f"run {r.run_id} has hosts {r.meta.hosts}; merge single-host runs")
        if r.meta.hosts[0] in hosts:
            raise ValueError(f"host {r.meta.hosts[0]!r} appears in two runs")
        hosts.append(r.meta.hosts[0])
    intervals = [r.meta.interval_ms for r in runs if r.meta.interval_ms]
    tol = tolerance_ms if tolerance_ms is not None else (max(intervals) / 2 if intervals else 50.0)
    base = runs[0].frame
    if hosts[0] in skew_ms:
        base = base.with_columns(pl.col(TIMESTAMP) - pl.duration(milliseconds=skew_ms[hosts[0]]))
    warns: list[str] = []
    for r in runs:
        warns.extend(r.warnings)
    merged = base.sort(TIMESTAMP)
    for r, h in zip(runs[1:], hosts[1:], strict=True):
        other = r.frame
        if h in skew_ms:
            other = other.with_columns(
                (pl.col(TIMESTAMP).cast(pl.Int64) - int(round(skew_ms[h]))).cast(TIMESTAMP_DTYPE)
            )
        clash = set(metric_columns(other)) & set(metric_columns(merged))
        if clash:
            raise ValueError(
                f"runs share column names, e.g. {sorted(clash)[0]!r}: give each host its own --host"
            )
        other = other.sort(TIMESTAMP).with_columns(pl.col(TIMESTAMP).alias("__t_" + h))
        merged = merged.join_asof(other, on=TIMESTAMP, strategy="nearest", tolerance=f"{int(round(tol))}ms")
        matched = merged.get_column("__t_" + h).drop_nulls()
        n_unused = other.height - matched.n_unique()
        if n_unused > 0:
            _warn(
                warns,
                f"merge_hosts: {n_unused} of {other.height} samples of host {h} matched no reference "
                f"timestamp within {tol:g} ms",
            )
        merged = merged.drop("__t_" + h)
    meta = RunMeta(
        run_id="+".join(r.run_id for r in runs),
        hosts=tuple(hosts),
        platform=runs[0].meta.platform,
        start_time=runs[0].meta.start_time,
        interval_ms=runs[0].meta.interval_ms,
        extra={
            "merged_from": [r.meta.source_path or r.run_id for r in runs],
            "tolerance_ms": tol,
            "skew_ms": skew_ms,
            "reference_host": hosts[0],
        },
    )
    validate_frame(merged)
    return Run(meta, merged, warns)
