"""Follow a running collector's output directory, reading only new bytes.

The collector (``reveal_lab/collect/FORMAT.md``) writes ``channels.json``, then an
append-only journal ``journal-NNNNNN.bin`` (a header, then fixed-size binary records,
flushed every second); every ``segment_s`` it writes the journal's records as
``segment-NNNNNN.parquet``, deletes the journal and starts ``journal-(N+1)``.

:class:`CollectorFollower` keeps, per journal, the byte offset of the first record it
has not read, and on each :meth:`~CollectorFollower.poll`:

* reads the journal from that offset to its end (``os.pread``), decodes whole
  records (magic and CRC checked; a partial record at the end waits for the next
  poll);
* on roll-over (``segment-N.parquet`` appears / ``journal-N`` disappears) reads from
  the segment only the records with ``seq`` after the last one seen (those flushed
  between the previous poll and the roll), then follows ``journal-(N+1)``;
* when a journal shrinks or is replaced (a new inode: truncated or rotated by
  hand), starts again at its first record and skips the ``seq`` already delivered.

Rows are returned as a canonical telemetry frame in the dataset view (cumulative
counters as first differences under their ``dataset`` names, kept across polls) or
the raw view.
"""

from __future__ import annotations

import json
import logging
import os
import zlib
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl

from reveal_lab.telemetry import TIMESTAMP, TIMESTAMP_DTYPE, TelemetryError

__all__ = ["CollectorFollower", "FollowStats"]

log = logging.getLogger(__name__)

_MISSING_INT = -(2**63)


class FollowStats:
    """Counters of what the follower read (for tests, benchmarks and ``--verbose``)."""

    def __init__(self) -> None:
        self.bytes_read = 0
        self.records = 0
        self.segment_rows = 0
        self.rollovers = 0
        self.resets = 0
        self.bad_records = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


class CollectorFollower:
    """Incremental reader of a collector run directory.

    Parameters
    ----------
    directory : the collector's ``--out`` directory (may not exist yet).
    view : ``"dataset"`` (``_diff`` columns, the names the detectors and baselines
        use) or ``"raw"`` (the stored channels).
    from_start : read what the directory already holds (all segments) first;
        otherwise start at the end of what is there now (``tail -f``).
    """

    def __init__(self, directory: str | Path, *, view: Literal["dataset", "raw"] = "dataset",
                 from_start: bool = True) -> None:
        if view not in ("dataset", "raw"):
            raise ValueError(f"view must be 'dataset' or 'raw', got {view!r}")
        from reveal_lab.collect._format import (
            CHANNELS_FILE,
            JOURNAL_HEADER,
            JOURNAL_MAGIC,
            RECORD_HEADER,
            RECORD_MAGIC,
            journal_name,
            record_size,
            segment_name,
        )

        self._fmt = (CHANNELS_FILE, JOURNAL_HEADER, JOURNAL_MAGIC, RECORD_HEADER, RECORD_MAGIC, journal_name,
                     record_size, segment_name)
        self.dir = Path(directory)
        self.view = view
        self.from_start = from_start
        self.stats = FollowStats()
        self.channels: list[dict] | None = None
        self.seg: int | None = None
        self._fd: int | None = None
        self._ino: int | None = None
        self._offset = 0
        self._rec_size = 0
        self._last_seq: int | None = None
        self._last_ms: int | None = None
        self._prev_counter: np.ndarray | None = None

    # -- setup ------------------------------------------------------------------------------
    def _load_channels(self) -> bool:
        channels_file = self.dir / self._fmt[0]
        if not channels_file.exists():
            return False
        try:
            chans = json.loads(channels_file.read_text())
        except json.JSONDecodeError as exc:  # being written: try again next poll
            log.debug("channels.json not complete yet: %s", exc)
            return False
        self.channels = chans
        self.ints = [c for c in chans if c["dtype"] == "i"]
        self.floats = [c for c in chans if c["dtype"] == "f"]
        self.ni, self.nf = len(self.ints), len(self.floats)
        self._rec_size = self._fmt[6](self.ni, self.nf)
        ordered = self.ints + self.floats  # record order: ints then floats
        key = "dataset" if self.view == "dataset" else "name"
        keep, names, seen = [], [], set()
        for i, c in enumerate(ordered):
            name = c.get(key)
            if not name:
                continue  # kept out of the dataset view by the probe
            if name in seen:
                log.warning("%s: channel %r appears twice; the first is used", channels_file, name)
                continue
            seen.add(name)
            keep.append(i)
            names.append(name)
        self._keep = np.asarray(keep, dtype=np.int64)
        self._names = names
        counter = np.array([bool(ordered[i].get("counter")) for i in keep], dtype=bool)
        self._counter = counter if self.view == "dataset" else np.zeros(len(keep), dtype=bool)
        self._seg_cols = [c["name"] for c in ordered]
        self.seg = self._first_segment()
        return True

    def _indices(self, prefix: str) -> list[int]:
        out = []
        for p in self.dir.glob(f"{prefix}-*"):
            stem = p.name.split(".")[0]
            if p.name.endswith(".tmp"):
                continue
            try:
                out.append(int(stem.split("-")[1]))
            except (IndexError, ValueError):
                continue
        return sorted(out)

    def _first_segment(self) -> int:
        segs, journals = self._indices("segment"), self._indices("journal")
        if self.from_start:
            return min(segs + journals) if segs or journals else 0
        # tail: skip the finished segments, start at the end of the current journal
        cur = max(journals) if journals else (max(segs) + 1 if segs else 0)
        jpath = self.dir / self._fmt[5](cur)
        if jpath.exists():
            self._open_journal(jpath)
            size = os.fstat(self._fd).st_size  # type: ignore[arg-type]
            hdr = self._fmt[1].size
            self._offset = hdr + max(0, (size - hdr) // self._rec_size) * self._rec_size if size >= hdr else 0
            if self._offset > hdr:  # keep the last record so counters have a previous value
                self._offset -= self._rec_size
        return cur

    # -- reading ----------------------------------------------------------------------------
    def _open_journal(self, path: Path) -> None:
        self._close_fd()
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

    def _read_journal(self, path: Path) -> np.ndarray | None:
        """New whole records of the journal at ``path`` (structured array) or None."""
        _, JH, JMAGIC, _, _, _, _, _ = self._fmt
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        if self._fd is None or st.st_ino != self._ino:
            if self._fd is not None:
                self.stats.resets += 1  # replaced under the same name: start again, skip seen seqs
            self._open_journal(path)
        elif st.st_size < self._offset:
            self.stats.resets += 1  # truncated: start again, skip what was delivered
            self._offset = 0
        size = os.fstat(self._fd).st_size  # type: ignore[arg-type]
        if self._offset == 0:
            if size < JH.size:
                return None
            head = os.pread(self._fd, JH.size, 0)  # type: ignore[arg-type]
            magic, version, _r, ni, nf, _crc, index = JH.unpack(head)
            if magic != JMAGIC:
                raise TelemetryError(f"not a collector journal (magic {magic!r}, expected {JMAGIC!r})",
                                     path=str(path), line=None)
            if (ni, nf) != (self.ni, self.nf):
                raise TelemetryError(f"journal has {ni} int + {nf} float channels, channels.json "
                                     f"{self.ni} + {self.nf}", path=str(path))
            self._offset = JH.size
        n = (size - self._offset) // self._rec_size
        if n <= 0:
            return None
        data = os.pread(self._fd, n * self._rec_size, self._offset)  # type: ignore[arg-type]
        n = len(data) // self._rec_size
        data = data[: n * self._rec_size]
        self._offset += len(data)
        self.stats.bytes_read += len(data)
        return self._decode(data, n, str(path))

    def _decode(self, data: bytes, n: int, where: str) -> np.ndarray:
        from reveal_lab.collect._format import record_dtype

        rec = np.frombuffer(data, dtype=record_dtype(self.ni, self.nf), count=n)
        ok = rec["magic"] == self._fmt[4]
        raw = memoryview(data)
        for i in np.flatnonzero(ok):
            a = int(i) * self._rec_size
            if zlib.crc32(raw[a + 8: a + self._rec_size]) != int(rec["crc"][i]):
                ok[i] = False
        bad = int((~ok).sum())
        if bad:
            self.stats.bad_records += bad
            log.warning("%s: %d record(s) with a bad magic/CRC skipped", where, bad)
            rec = rec[ok]
        return rec

    def _read_segment_tail(self, path: Path) -> np.ndarray | None:
        """Rows of a finished segment after the last ``seq`` delivered, as a record-like dict."""
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        seq = table.column("seq").to_numpy()
        sel = np.ones(seq.size, dtype=bool) if self._last_seq is None else seq > self._last_seq
        if not sel.any():
            return None
        idx = np.flatnonzero(sel)
        from reveal_lab.collect._format import record_dtype

        out = np.zeros(idx.size, dtype=record_dtype(self.ni, self.nf))
        for k in ("seq", "t_wall_ns", "t_mono_ns"):
            out[k] = table.column(k).to_numpy()[idx]
        for j, c in enumerate(self.ints):
            col = table.column(c["name"]).to_numpy(zero_copy_only=False)
            col = np.where(np.isnan(col.astype(float)), _MISSING_INT, col) if col.dtype.kind == "f" else col
            out["ints"][:, j] = col[idx].astype(np.int64)
        for j, c in enumerate(self.floats):
            out["floats"][:, j] = table.column(c["name"]).to_numpy(zero_copy_only=False)[idx]
        self.stats.segment_rows += int(idx.size)
        return out

    def poll(self) -> pl.DataFrame | None:
        """Rows that appeared since the last poll (None if nothing new)."""
        if self.channels is None and not self._load_channels():
            return None
        assert self.seg is not None
        chunks = []
        JN, SN = self._fmt[5], self._fmt[7]
        for _ in range(1000):  # at most this many roll-overs per poll
            jpath, spath = self.dir / JN(self.seg), self.dir / SN(self.seg)
            if jpath.exists():
                rec = self._read_journal(jpath)
                if rec is not None and rec.size:
                    chunks.append(rec)
                    self._last_seq = int(rec["seq"][-1])
                if not spath.exists():
                    break
            if spath.exists():  # rolled: take what the journal had not shown us yet
                rec = self._read_segment_tail(spath)
                if rec is not None and rec.size:
                    chunks.append(rec)
                    self._last_seq = int(rec["seq"][-1])
                self._close_fd()
                self.seg += 1
                self.stats.rollovers += 1
                continue
            later = [i for i in self._indices("journal") + self._indices("segment") if i > self.seg]
            if later and not jpath.exists():
                log.warning("%s: segment %d missing; continuing at %d", self.dir, self.seg, min(later))
                self._close_fd()
                self.seg = min(later)
                continue
            break
        if not chunks:
            return None
        rec = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
        return self._to_frame(rec)

    def _to_frame(self, rec: np.ndarray) -> pl.DataFrame | None:
        # drop re-delivered / non-increasing records (journal reset, clock steps)
        ms = rec["t_wall_ns"] // 1_000_000
        keep = np.ones(rec.size, dtype=bool)
        last = self._last_ms if self._last_ms is not None else np.iinfo(np.int64).min
        last_seq = getattr(self, "_delivered_seq", None)
        for i in range(rec.size):
            if ms[i] <= last or (last_seq is not None and rec["seq"][i] <= last_seq):
                keep[i] = False
            else:
                last = ms[i]
                last_seq = int(rec["seq"][i])
        rec, ms = rec[keep], ms[keep]
        if rec.size == 0:
            return None
        self._last_ms = int(ms[-1])
        self._delivered_seq = last_seq
        self.stats.records += int(rec.size)
        parts = []
        if self.ni:
            iv = rec["ints"].astype(np.float64)
            iv[rec["ints"] == _MISSING_INT] = np.nan
            parts.append(iv)
        if self.nf:
            parts.append(rec["floats"].astype(np.float64, copy=False))
        mat = np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
        mat = mat[:, self._keep]
        if self._counter.any():
            cur = mat[:, self._counter]
            prev = self._prev_counter if self._prev_counter is not None else np.full(cur.shape[1], np.nan)
            stacked = np.vstack([prev[None, :], cur])
            self._prev_counter = cur[-1].copy()
            mat = mat.copy()
            mat[:, self._counter] = np.diff(stacked, axis=0)
        cols = {TIMESTAMP: pl.Series(TIMESTAMP, ms, dtype=pl.Int64).cast(TIMESTAMP_DTYPE)}
        frame = pl.DataFrame(cols)
        values = pl.DataFrame(np.ascontiguousarray(mat), schema=self._names, orient="row") if mat.size else None
        if values is not None:
            frame = pl.concat([frame, values], how="horizontal")
        return frame
