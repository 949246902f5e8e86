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
the collector's own :func:`reveal_lab.collect._views.dataset_view` applied to the new
raw rows preceded by the last row already seen (every expression there looks one
row back at most), so the stream equals what :func:`reveal_lab.io.read_collector_run`
returns for the finished run (tested).
"""

from __future__ import annotations

import json
import logging
import os
import re
import zlib
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

from reveal_lab.telemetry import TIMESTAMP, TIMESTAMP_DTYPE, TelemetryError

__all__ = ["CollectorFollower", "FollowStats"]

log = logging.getLogger(__name__)

_SEG_RE = re.compile(r"^segment-(\d{6})\.parquet$")
_JOURNAL_RE = re.compile(r"^journal-(\d{6})\.bin$")


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
        self._fd: int | None = None
        self._ino: int | None = None
        self._offset = 0
        self._need = 0  # the journal must reach this size before a read can yield a whole chunk
        self._first_head: bytes | None = None  # the first chunk's header, to notice a rewrite
        self._last_seq: int | None = None  # last seq read (delivered or not)
        self._delivered_seq: int | None = None
        self._last_ms: int | None = None
        self._prev_raw: pl.DataFrame | None = None  # the last raw row, for the one-row look-back

    # -- setup ------------------------------------------------------------------------------
    def _load(self) -> bool:
        from reveal_lab.collect._format import CHANNELS_FILE, META_FILE

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
        self._names = ["seq", "t_wall_ns", "t_mono_ns"] + [c["name"] for c in channels]
        self._schema = {"seq": pl.Int64, "t_wall_ns": pl.Int64, "t_mono_ns": pl.Int64}
        self._schema.update({c["name"]: (pl.Int64 if c["dtype"] == "i" else pl.Float64) for c in channels})
        if self.view == "dataset":
            from reveal_lab.collect._views import dataset_view

            probe = pl.DataFrame(schema=self._schema)
            self._exprs = dataset_view(probe, channels, meta)
        else:
            self._exprs = [pl.col(c["name"]).cast(pl.Float64) for c in channels]
        clock = meta.get("clock") or {}
        self._wall0, self._mono0 = clock.get("wall_ns"), clock.get("mono_ns")
        self.seg = self._start_segment()
        return True

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
        from reveal_lab.collect._format import journal_name

        segs, journals = self._indices()
        if self.from_start or not (segs or journals):
            return min(segs + journals) if segs or journals else 0
        cur = max(journals) if journals else max(segs) + 1
        jpath = self.dir / journal_name(cur)
        if jpath.exists():  # tail: the chunks already there are skipped, new ones are read
            self._open(jpath)
            size = os.fstat(self._fd).st_size  # type: ignore[arg-type]
            self._offset = self._chunk_boundary(size)
        return cur

    def _chunk_boundary(self, size: int) -> int:
        """Offset just after the last whole chunk below ``size`` (walks the chunk headers only)."""
        from reveal_lab.collect._format import CHUNK_HEADER, JOURNAL_HEADER

        off = JOURNAL_HEADER.size
        while off + CHUNK_HEADER.size <= size:
            _m, _c, _n, plen = CHUNK_HEADER.unpack(os.pread(self._fd, CHUNK_HEADER.size, off))  # type: ignore[arg-type]
            if off + CHUNK_HEADER.size + plen > size:
                break
            off += CHUNK_HEADER.size + plen
        return min(off, size) if size >= JOURNAL_HEADER.size else 0

    # -- files ------------------------------------------------------------------------------
    def _rewritten(self) -> bool:
        """Does the journal's first chunk differ from the one read (rewritten in place)?"""
        from reveal_lab.collect._format import CHUNK_HEADER, JOURNAL_HEADER

        if self._first_head is None:
            return False
        return os.pread(self._fd, CHUNK_HEADER.size, JOURNAL_HEADER.size) != self._first_head  # type: ignore[arg-type]

    def _open(self, path: Path) -> None:
        self._close_fd()
        self._need = 0
        self._first_head: bytes | None = None
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        self._ino = os.fstat(self._fd).st_ino
        self._offset = 0

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None
        self._ino = None

    def close(self) -> None:
        self._close_fd()

    def __enter__(self) -> CollectorFollower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ----------------------------------------------------------------------------
    def _read_journal(self, path: Path) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The whole chunks of ``path`` after the current offset."""
        from reveal_lab.collect._format import (
            CHUNK_HEADER,
            CHUNK_MAGIC,
            JOURNAL_HEADER,
            JOURNAL_MAGIC,
            decode_chunk,
        )

        try:
            st = os.stat(path)
        except FileNotFoundError:
            return []
        if self._fd is None or st.st_ino != self._ino:
            if self._fd is not None:
                self.stats.resets += 1  # replaced under the same name: start again, skip seen seqs
            self._open(path)
        elif st.st_size < self._offset or self._rewritten():
            self.stats.resets += 1  # truncated or rewritten: start again, skip what was delivered
            self._offset = 0
            self._need = 0
            self._first_head = None
        size = os.fstat(self._fd).st_size  # type: ignore[arg-type]
        if self._offset == 0:
            if size < JOURNAL_HEADER.size:
                return []
            magic, version, _r, ni, nf, ccrc, _index = JOURNAL_HEADER.unpack(
                os.pread(self._fd, JOURNAL_HEADER.size, 0)
            )  # type: ignore[arg-type]
            if magic != JOURNAL_MAGIC:
                raise TelemetryError(
                    f"not a collector journal (magic {magic!r}, expected {JOURNAL_MAGIC!r})", path=str(path)
                )
            if (ni, nf) != (self.ni, self.nf) or ccrc != self._crc:
                raise TelemetryError(
                    f"journal written for another channel set ({ni} int/{nf} float channels; "
                    f"channels.json has {self.ni}/{self.nf})",
                    path=str(path),
                )
            self._offset = JOURNAL_HEADER.size
        if size <= self._offset or size < self._need:
            return []  # nothing new, or the chunk being written is not whole yet
        data = os.pread(self._fd, size - self._offset, self._offset)  # type: ignore[arg-type]
        self.stats.bytes_read += len(data)
        out = []
        pos = 0
        while pos + CHUNK_HEADER.size <= len(data):
            cm, ccrc, n, plen = CHUNK_HEADER.unpack_from(data, pos)
            if cm != CHUNK_MAGIC:
                self.stats.bad_chunks += 1
                log.warning(
                    "%s: no chunk marker at byte %d; the rest of this journal is skipped",
                    path,
                    self._offset + pos,
                )
                pos = len(data)
                break
            end = pos + CHUNK_HEADER.size + plen
            if end > len(data):
                break  # being written: read it once it is whole
            payload = data[pos + CHUNK_HEADER.size : end]
            pos = end
            if zlib.crc32(payload) != ccrc:
                self.stats.bad_chunks += 1
                log.warning(
                    "%s: chunk at byte %d fails its CRC: %d samples skipped",
                    path,
                    self._offset + pos - plen - CHUNK_HEADER.size,
                    n,
                )
                continue
            try:
                out.append(decode_chunk(payload, n, self.ni, self.nf))
                self.stats.chunks += 1
            except (ValueError, zlib.error) as exc:
                self.stats.bad_chunks += 1
                log.warning("%s: unreadable chunk (%s): %d samples skipped", path, exc, n)
        if self._first_head is None and pos:
            self._first_head = (
                bytes(data[: CHUNK_HEADER.size]) if self._offset == JOURNAL_HEADER.size else None
            )
        self._offset += pos
        # where the next whole chunk will end at the earliest (no re-read of a torn tail before)
        rest = data[pos:]
        if len(rest) >= CHUNK_HEADER.size:
            self._need = self._offset + CHUNK_HEADER.size + CHUNK_HEADER.unpack_from(rest, 0)[3]
        else:
            self._need = self._offset + CHUNK_HEADER.size
        return out

    def _blocks_frame(self, blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> pl.DataFrame:
        from reveal_lab.collect._probe import MISSING_INT

        times = np.vstack([b[0] for b in blocks])
        cols: dict[str, Any] = {"seq": times[:, 0], "t_wall_ns": times[:, 1], "t_mono_ns": times[:, 2]}
        if self.ni:
            im = np.vstack([b[1] for b in blocks])
            for j, c in enumerate(self.ints):
                col = im[:, j]
                s = pl.Series(c["name"], col, dtype=pl.Int64)
                miss = col == MISSING_INT
                if miss.any():
                    s = s.scatter(np.flatnonzero(miss), None)
                cols[c["name"]] = s
        if self.nf:
            fm = np.vstack([b[2] for b in blocks])
            for j, c in enumerate(self.floats):
                cols[c["name"]] = fm[:, j]
        return pl.DataFrame(cols).select(self._names).cast(self._schema)  # type: ignore[arg-type]

    def _segment_tail(self, path: Path) -> pl.DataFrame | None:
        try:
            seg = pl.read_parquet(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow/polars raise several types
            raise TelemetryError(f"unreadable Parquet segment: {exc}", path=str(path)) from None
        if self._last_seq is not None:
            seg = seg.filter(pl.col("seq") > self._last_seq)
        if seg.height == 0:
            return None
        missing = [n for n in self._names if n not in seg.columns]
        if missing:
            raise TelemetryError(
                "segment lacks a channel listed in channels.json", path=str(path), column=missing[0]
            )
        self.stats.segment_samples += seg.height
        return seg.select(self._names).cast(self._schema)  # type: ignore[arg-type]

    def poll(self) -> pl.DataFrame | None:
        """Rows that appeared since the last poll, as a canonical frame (None if nothing new)."""
        from reveal_lab.collect._format import journal_name, segment_name

        if self.channels is None and not self._load():
            return None
        assert self.seg is not None
        raws: list[pl.DataFrame] = []

        def take(df: pl.DataFrame | None) -> None:
            if df is not None and df.height:
                raws.append(df)
                self._last_seq = int(df.get_column("seq")[-1])

        for _ in range(10_000):  # bounded: at most this many roll-overs in one poll
            jpath, spath = self.dir / journal_name(self.seg), self.dir / segment_name(self.seg)
            seg_done = spath.exists()  # look before reading: a roll may happen meanwhile
            if jpath.exists() and not seg_done:
                blocks = self._read_journal(jpath)
                if blocks:
                    take(self._blocks_frame(blocks))
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
        if not raws:
            return None
        raw = pl.concat(raws, how="vertical") if len(raws) > 1 else raws[0]
        if self._delivered_seq is not None:
            raw = raw.filter(pl.col("seq") > self._delivered_seq)
        if raw.height == 0:
            return None
        return self._to_frame(raw)

    def _timestamp(self) -> pl.Expr:
        if self._wall0 is None or self._mono0 is None:
            ns = pl.col("t_wall_ns")
        else:
            ns = pl.lit(int(self._wall0)) + (pl.col("t_mono_ns") - pl.lit(int(self._mono0)))
        return (ns // 1_000_000).cast(pl.Datetime("ms")).cast(TIMESTAMP_DTYPE).alias(TIMESTAMP)

    def _to_frame(self, raw: pl.DataFrame) -> pl.DataFrame | None:
        self._delivered_seq = int(raw.get_column("seq")[-1])
        n_prev = 0
        src = raw
        if self._prev_raw is not None:
            src = pl.concat([self._prev_raw, raw], how="vertical")
            n_prev = 1
        self._prev_raw = raw.tail(1)
        frame = src.select(self._timestamp(), *self._exprs).slice(n_prev)
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
