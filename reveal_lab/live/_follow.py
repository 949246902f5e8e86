"""Follow a running collector's output directory, reading only new bytes.

The collector (``reveal_lab/collect/FORMAT.md``) writes ``meta.json`` and
``channels.json``, then an append-only journal ``journal-NNNNNN.bin``: a 24-byte
header, then one zlib-compressed *chunk* per flush (≈1 s of samples, with a CRC).
Every ``segment_s`` it writes the journal's samples as ``segment-NNNNNN.parquet``,
deletes the journal and starts ``journal-(N+1)``.

:class:`CollectorFollower` keeps, for the journal it follows, the byte offset of
the first chunk it has not read, and on each :meth:`~CollectorFollower.poll`:

* reads the journal from that offset to its end (``os.pread``: only new bytes) and
  decodes the whole chunks (CRC checked; a chunk still being written waits for the
  next poll);
* on roll-over (``segment-N.parquet`` appears) reads from the segment only the
  samples with ``seq`` after the last one delivered (those flushed between the
  previous poll and the roll), then follows ``journal-(N+1)``;
* when a journal shrinks or is replaced (a new inode: truncated or rotated), starts
  again at its first chunk and skips the ``seq`` already delivered.

Rows come back as a canonical telemetry frame, in the dataset view by default:
the collector's own dataset view (:func:`reveal_lab.collect.dataset_view`) applied to the new
raw rows preceded by the last row already seen (every expression there looks one
row back at most), so the stream equals what :func:`reveal_lab.io.read_collector_run`
returns for the finished run (tested).
"""

from __future__ import annotations

import json
import logging
import os
import zlib
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

from reveal_lab.collect import DERIVED_VIEWS as DERIVED
from reveal_lab.collect.journal import (
    CHANNELS_FILE,
    JOURNAL_RE,
    META_FILE,
    MISSING_INT,
    SEGMENT_RE,
    JournalTail,
    journal_name,
    segment_name,
)
from reveal_lab.telemetry import TIMESTAMP, TIMESTAMP_DTYPE, TelemetryError

__all__ = ["CollectorFollower", "FollowStats"]

log = logging.getLogger(__name__)

_SEG_RE, _JOURNAL_RE = SEGMENT_RE, JOURNAL_RE  # one definition, in collect.journal


class FollowStats:
    """Counters of what the follower read (for tests, benchmarks and ``--verbose``)."""

    def __init__(self) -> None:
        self.bytes_read = 0
        self.chunks = 0
        self.samples = 0
        self.segment_samples = 0
        self.rollovers = 0
        self.resets = 0
        self.bad_chunks = 0
        self.dropped_same_ms = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


class CollectorFollower:
    """Incremental reader of a collector run directory.

    Parameters
    ----------
    directory : the collector's ``--out`` directory (may not exist yet).
    view : ``"dataset"`` (the public dataset's columns: ``_diff`` counters and
        derived utilizations, what detectors and baselines use) or ``"raw"``.
    from_start : read what the directory already holds first (all segments);
        otherwise start at the end of the current journal (``tail -f``).

    Examples
    --------
    >>> f = CollectorFollower("/nonexistent/run")
    >>> f.poll() is None  # nothing there yet: poll again later
    True
    """

    def __init__(
        self, directory: str | Path, *, view: Literal["dataset", "raw"] = "dataset", from_start: bool = True
    ) -> None:
        if view not in ("dataset", "raw"):
            raise ValueError(f"view must be 'dataset' or 'raw', got {view!r}")
        self.dir = Path(directory)
        self.view = view
        self.from_start = from_start
        self.stats = FollowStats()
        self.meta: dict[str, Any] | None = None
        self.channels: list[dict[str, Any]] | None = None
        self.seg: int | None = None
        self._tail: JournalTail | None = None  # the journal being followed (set once channels.json is read)
        self._last_seq: int | None = None  # last seq read (delivered or not)
        self._delivered_seq: int | None = None
        self._last_ms: int | None = None
        self._prev: tuple[np.ndarray, np.ndarray] | None = None  # the last sample, for the look-back

    # -- setup ------------------------------------------------------------------------------
    def _load(self) -> bool:
        try:
            meta = json.loads((self.dir / META_FILE).read_text())
            blob = (self.dir / CHANNELS_FILE).read_bytes()
            channels = json.loads(blob)
        except FileNotFoundError:
            return False  # the collector has not started yet
        except json.JSONDecodeError as exc:  # written atomically, but be patient
            log.debug("%s: metadata not readable yet (%s)", self.dir, exc)
            return False
        self.meta, self.channels = meta, channels
        self._crc = zlib.crc32(blob)
        self.ints = [c for c in channels if c["dtype"] == "i"]
        self.floats = [c for c in channels if c["dtype"] == "f"]
        self.ni, self.nf = len(self.ints), len(self.floats)
        self._tail = JournalTail(self.ni, self.nf, self._crc, counters=self.stats, warn=log.warning)
        self._names = ["seq", "t_wall_ns", "t_mono_ns"] + [c["name"] for c in channels]
        self._schema = {"seq": pl.Int64, "t_wall_ns": pl.Int64, "t_mono_ns": pl.Int64}
        self._schema.update({c["name"]: (pl.Int64 if c["dtype"] == "i" else pl.Float64) for c in channels})
        self._plan_view(channels, meta)
        clock = meta.get("clock") or {}
        self._wall0, self._mono0 = clock.get("wall_ns"), clock.get("mono_ns")
        self.seg = self._start_segment()
        return True

    def _plan_view(self, channels: list[dict[str, Any]], meta: dict[str, Any]) -> None:
        """Split the view into plain columns (a channel as is, or its first difference:
        computed with numpy) and the derived columns of
        the collector's dataset view (polars expressions over the raw channels of the
        probes that have them), in the order ``dataset_view`` gives them."""
        pos = {c["name"]: i for i, c in enumerate(self.ints + self.floats)}  # record order
        if self.view == "dataset":
            plain = [c for c in channels if c.get("dataset")]
            names = [c["dataset"] for c in plain]
            counter = [bool(c["counter"]) for c in plain]
        else:
            plain, names, counter = list(channels), [c["name"] for c in channels], [False] * len(channels)
        self._plain_idx = np.array([pos[c["name"]] for c in plain], dtype=np.int64)
        self._plain_names = names
        self._plain_counter = np.array(counter, dtype=bool)
        self._plain_int_names = [n for n, c in zip(names, plain, strict=True) if c["dtype"] == "i"]
        self._plain_int_pos = np.array([j for j, c in enumerate(plain) if c["dtype"] == "i"], dtype=np.int64)
        self._plain_float_counters = [
            n for n, c, k in zip(names, plain, counter, strict=True) if c["dtype"] == "f" and k
        ]
        self._derived_exprs: list[pl.Expr] = []
        self._derived_idx = np.empty(0, dtype=np.int64)
        self._derived_raw: list[str] = []
        self._derived_int_names: list[str] = []
        self._derived_int_pos = np.empty(0, dtype=np.int64)
        if self.view != "dataset":
            return
        by_probe: dict[str, list[dict[str, Any]]] = {}
        for c in channels:
            by_probe.setdefault(c["probe"], []).append(c)
        used = [c for p, cs in by_probe.items() if p in DERIVED for c in cs]
        if not used:
            return
        schema = {"t_mono_ns": pl.Int64, **{c["name"]: pl.Float64 for c in used}}
        empty = pl.DataFrame(schema=schema)
        for p, cs in by_probe.items():
            fn = DERIVED.get(p)
            if fn is not None:
                self._derived_exprs.extend(fn(empty, cs, meta, meta["host"]))
        self._derived_idx = np.array([pos[c["name"]] for c in used], dtype=np.int64)
        self._derived_raw = [c["name"] for c in used]
        self._derived_int_names = [c["name"] for c in used if c["dtype"] == "i"]
        self._derived_int_pos = np.array([pos[c["name"]] for c in used if c["dtype"] == "i"], dtype=np.int64)

    def _indices(self) -> tuple[list[int], list[int]]:
        segs, journals = [], []
        try:
            names = [p.name for p in self.dir.iterdir()]
        except FileNotFoundError:
            return [], []
        for n in names:
            if m := _SEG_RE.match(n):
                segs.append(int(m.group(1)))
            elif m := _JOURNAL_RE.match(n):
                journals.append(int(m.group(1)))
        return sorted(segs), sorted(journals)

    def _start_segment(self) -> int:
        segs, journals = self._indices()
        if self.from_start or not (segs or journals):
            return min(segs + journals) if segs or journals else 0
        cur = max(journals) if journals else max(segs) + 1
        jpath = self.dir / journal_name(cur)
        if jpath.exists():  # tail: the chunks already there are skipped, new ones are read
            assert self._tail is not None
            self._tail.open(jpath, at_end=True)
        return cur

    def _close_fd(self) -> None:
        if self._tail is not None:
            self._tail.close()

    def close(self) -> None:
        self._close_fd()

    def __enter__(self) -> CollectorFollower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # A batch of samples is ``(times[n, 3], values[n, n_int + n_float])``: seq, t_wall_ns,
    # t_mono_ns, then every channel in record order (ints, then floats) as float64, a missing
    # integer reading as NaN. Integer channels are cast to float64 exactly as the reader's
    # ``cast(pl.Float64)`` does, so the dataset view computed from it is the same.
    def _blocks_batch(
        self, blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    ) -> tuple[np.ndarray, ...]:
        times = np.vstack([b[0] for b in blocks]).astype(np.int64, copy=False)
        parts = []
        if self.ni:
            im = np.vstack([b[1] for b in blocks])
            iv = im.astype(np.float64)
            iv[im == MISSING_INT] = np.nan
            parts.append(iv)
        if self.nf:
            parts.append(np.vstack([b[2] for b in blocks]).astype(np.float64, copy=False))
        values = np.hstack(parts) if len(parts) > 1 else (parts[0] if parts else np.empty((len(times), 0)))
        return times, values

    def _segment_tail(self, path: Path) -> tuple[np.ndarray, ...] | None:
        try:
            seg = pl.read_parquet(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow/polars raise several types
            raise TelemetryError(f"unreadable Parquet segment: {exc}", path=str(path)) from None
        if self._last_seq is not None:
            seg = seg.filter(pl.col("seq") > self._last_seq)
        if seg.height == 0:
            return None
        have = set(seg.columns)  # a polars frame builds its column list on each access
        missing = [n for n in self._names if n not in have]
        if missing:
            raise TelemetryError(
                "segment lacks a channel listed in channels.json", path=str(path), column=missing[0]
            )
        self.stats.segment_samples += seg.height
        times = seg.select("seq", "t_wall_ns", "t_mono_ns").to_numpy().astype(np.int64)
        order = [c["name"] for c in self.ints + self.floats]
        values = (
            seg.select(pl.col(order).cast(pl.Float64).fill_null(np.nan)).to_numpy()
            if order
            else np.empty((seg.height, 0))
        )
        return times, values

    def poll(self) -> pl.DataFrame | None:
        """Rows that appeared since the last poll, as a canonical frame (None if nothing new)."""
        if self.channels is None and not self._load():
            return None
        assert self.seg is not None
        batches: list[tuple[np.ndarray, ...]] = []

        def take(batch: tuple[np.ndarray, ...] | None) -> None:
            if batch is not None and len(batch[0]):
                batches.append(batch)
                self._last_seq = int(batch[0][-1, 0])

        for _ in range(10_000):  # bounded: at most this many roll-overs in one poll
            jpath, spath = self.dir / journal_name(self.seg), self.dir / segment_name(self.seg)
            seg_done = spath.exists()  # look before reading: a roll may happen meanwhile
            if jpath.exists() and not seg_done:
                assert self._tail is not None
                blocks = self._tail.read(jpath)
                if blocks:
                    take(self._blocks_batch(blocks))
                if not spath.exists():
                    break
                seg_done = True
            if seg_done:  # rolled: what the journal had not shown us is in the segment
                take(self._segment_tail(spath))
                self._close_fd()
                self.seg += 1
                self.stats.rollovers += 1
                continue
            segs, journals = self._indices()
            later = [i for i in segs + journals if i > self.seg]
            if later:
                log.warning("%s: segment %d is missing; continuing at %d", self.dir, self.seg, min(later))
                self._close_fd()
                self.seg = min(later)
                continue
            break
        if not batches:
            return None
        times = np.vstack([b[0] for b in batches])
        values = np.vstack([b[1] for b in batches])
        if self._delivered_seq is not None:
            new = times[:, 0] > self._delivered_seq
            times, values = times[new], values[new]
        if len(times) == 0:
            return None
        return self._to_frame(times, values)

    def _to_frame(self, times: np.ndarray, values: np.ndarray) -> pl.DataFrame | None:
        """The canonical frame of a batch: the collector's dataset view (or the raw view),
        with the batch's previous sample as look-back for the first differences."""
        self._delivered_seq = int(times[-1, 0])
        first = self._prev is None
        if not first:
            times = np.vstack([self._prev[0], times])
            values = np.vstack([self._prev[1], values])
        self._prev = (times[-1:].copy(), values[-1:].copy())
        k = 0 if first else 1
        mono = times[:, 2]
        if self._wall0 is None or self._mono0 is None:  # no clock anchor: the wall clock, as the reader
            ns = times[:, 1]
        else:
            ns = int(self._wall0) + (mono - int(self._mono0))
        cols: dict[str, Any] = {TIMESTAMP: pl.Series(TIMESTAMP, (ns // 1_000_000)[k:], dtype=pl.Int64)}
        plain = values[:, self._plain_idx]
        if self._plain_counter.any():
            d = np.full((plain.shape[0], int(self._plain_counter.sum())), np.nan)
            d[1:] = np.diff(plain[:, self._plain_counter], axis=0)
            plain = plain.copy()
            plain[:, self._plain_counter] = d
        frame = pl.DataFrame(cols).with_columns(pl.col(TIMESTAMP).cast(TIMESTAMP_DTYPE))
        if self._plain_names:
            block = pl.from_numpy(np.ascontiguousarray(plain[k:]), schema=self._plain_names, orient="row")
            fixes = []
            if self._plain_int_names:  # a missing integer reading is null, as in the reader
                gaps = np.isnan(plain[k:, self._plain_int_pos]).any(axis=0)
                if gaps.any():  # usually none: then no per-column work at all
                    fixes.append(
                        pl.col([n for n, g in zip(self._plain_int_names, gaps, strict=True) if g]).fill_nan(
                            None
                        )
                    )
            if first and self._plain_float_counters:  # polars' diff leaves the first row null
                fixes.append(
                    pl.when(pl.int_range(pl.len()) == 0)
                    .then(None)
                    .otherwise(pl.col(self._plain_float_counters))
                    .name.keep()
                )
            if fixes:
                block = block.with_columns(fixes)
            frame = pl.concat([frame, block], how="horizontal")
        if self._derived_exprs:
            raw = pl.from_numpy(
                np.ascontiguousarray(values[:, self._derived_idx]), schema=self._derived_raw, orient="row"
            ).with_columns(pl.Series("t_mono_ns", mono, dtype=pl.Int64))
            if self._derived_int_names:
                gaps = np.isnan(values[:, self._derived_int_pos]).any(axis=0)
                if gaps.any():
                    raw = raw.with_columns(
                        pl.col([n for n, g in zip(self._derived_int_names, gaps, strict=True) if g]).fill_nan(
                            None
                        )
                    )
            frame = pl.concat([frame, raw.select(self._derived_exprs).slice(k)], how="horizontal")
        # samples within one millisecond of the previous one cannot be told apart: keep the first
        ms = frame.get_column(TIMESTAMP).dt.epoch("ms").to_numpy()
        keep = np.empty(ms.size, dtype=bool)
        last = self._last_ms if self._last_ms is not None else np.iinfo(np.int64).min
        for i, t in enumerate(ms):
            keep[i] = t > last
            if keep[i]:
                last = t
        if not keep.all():
            self.stats.dropped_same_ms += int((~keep).sum())
            frame = frame.filter(pl.Series(keep))
        if frame.height == 0:
            return None
        self._last_ms = int(last)
        self.stats.samples += frame.height
        return frame
