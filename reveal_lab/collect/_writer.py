"""Crash-safe run writer: an append-only journal of compressed chunks, written and
``fdatasync``-ed every ``flush_s`` seconds, rolled into a zstd Parquet segment every
``segment_s`` seconds and at a clean stop. See ``FORMAT.md``."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from reveal_lab.collect._format import (
    CHANNELS_FILE,
    FORMAT_VERSION,
    JOURNAL_HEADER,
    JOURNAL_MAGIC,
    encode_chunk,
    journal_name,
    segment_name,
)
from reveal_lab.collect._probe import MISSING_INT

__all__ = ["RunWriter", "DiskFull", "write_atomic", "write_json_atomic", "write_bytes_atomic", "write_segment"]

log = logging.getLogger("reveal_lab.collect")


class DiskFull(OSError):
    """The output filesystem is full; everything flushed before is readable."""


def _is_enospc(exc: BaseException) -> bool:
    return getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(exc)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to ``path`` via a temporary file, fsync and rename."""
    write_bytes_atomic(path, json.dumps(obj, indent=1, default=str).encode())


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`write_atomic`)."""
    write_atomic(path, lambda tmp: tmp.write_bytes(data))


def write_atomic(path: Path, write: Callable[[Path], object], *, full: str | None = None) -> None:
    """Write ``path`` through ``write(tmp)`` on a temporary file beside it, fsync and rename:
    ``path`` holds either its old content or all of the new, never a truncated file. Raises
    :class:`DiskFull` (``full``, or "disk full writing PATH") when the filesystem is full;
    the temporary file is removed on any error."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if _is_enospc(exc):
            raise DiskFull(errno.ENOSPC, full or f"disk full writing {path}") from exc
        raise


class RunWriter:
    """Append samples to ``out_dir``.

    Parameters
    ----------
    out_dir : Path
    channels : list of dict
        One entry per stored channel (ints first, then floats), as in ``channels.json``.
    flush_s, segment_s : float
        Journal write+sync period and Parquet roll period (monotonic seconds).
    """

    def __init__(
        self, out_dir: Path, channels: list[dict[str, Any]], *, flush_s: float = 1.0, segment_s: float = 300.0
    ) -> None:
        self.out = Path(out_dir)
        self.channels = channels
        self.ints = [c for c in channels if c["dtype"] == "i"]
        self.floats = [c for c in channels if c["dtype"] == "f"]
        self.ni, self.nf = len(self.ints), len(self.floats)
        self.flush_ns = int(flush_s * 1e9)
        self.segment_ns = int(segment_s * 1e9)
        blob = json.dumps(channels, separators=(",", ":")).encode()
        self.channels_crc = zlib.crc32(blob)
        self.segment = 0
        self.n_records = 0
        self.bytes_segments = 0
        self.bytes_journal = 0
        self.fd: int | None = None
        # the current flush period: preallocated rows (grown if a flush is late)
        self._cap = 64
        self._bt = np.empty((self._cap, 3), dtype=np.int64)
        self._bi = np.empty((self._cap, self.ni), dtype=np.int64)
        self._bf = np.empty((self._cap, self.nf), dtype=np.float64)
        self._k = 0
        # the current segment, as numpy blocks (one per flushed chunk)
        self._seg: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._unwritten = b""
        write_bytes_atomic(self.out / CHANNELS_FILE, blob)  # never a truncated channels.json
        self._open_journal(0)

    @property
    def seg_records(self) -> int:
        return sum(b[0].shape[0] for b in self._seg) + self._k

    # -- journal ---------------------------------------------------------------------------
    def _open_journal(self, mono_ns: int) -> None:
        path = self.out / journal_name(self.segment)
        try:
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if _is_enospc(exc):
                raise DiskFull(errno.ENOSPC, f"disk full creating {path}") from exc
            raise
        self._unwritten = JOURNAL_HEADER.pack(
            JOURNAL_MAGIC, FORMAT_VERSION, 0, self.ni, self.nf, self.channels_crc, self.segment
        )
        self.last_flush = mono_ns
        self.seg_start: int | None = None
        self._write_pending()
        _fsync_dir(self.out)

    def reserve(self, n: int) -> None:
        """Make room for ``n`` more samples before the next flush (the compiled loop
        writes rows into the buffers itself)."""
        need = self._k + n
        if need <= self._cap:
            return
        while self._cap < need:
            self._cap *= 2
        for name in ("_bt", "_bi", "_bf"):
            old = getattr(self, name)
            new = np.empty((self._cap, old.shape[1]), dtype=old.dtype)
            new[: self._k] = old[: self._k]
            setattr(self, name, new)

    def append(self, seq: int, t_wall_ns: int, t_mono_ns: int, ints: np.ndarray, floats: np.ndarray) -> None:
        """Queue one sample (copied); it reaches the disk at the next flush (see :meth:`tick`)."""
        k = self._k
        if k == self._cap:
            self._cap *= 2
            for name in ("_bt", "_bi", "_bf"):
                old = getattr(self, name)
                new = np.empty((self._cap, old.shape[1]), dtype=old.dtype)
                new[:k] = old
                setattr(self, name, new)
        bt = self._bt[k]
        bt[0] = seq
        bt[1] = t_wall_ns
        bt[2] = t_mono_ns
        self._bi[k] = ints
        self._bf[k] = floats
        self._k = k + 1
        self.n_records += 1
        if self.seg_start is None:
            self.seg_start = t_mono_ns

    def tick(self, mono_ns: int) -> None:
        """Flush and/or roll when due. Raises :class:`DiskFull`."""
        if mono_ns - self.last_flush >= self.flush_ns:
            self.flush(mono_ns)
            if self.seg_start is not None and mono_ns - self.seg_start >= self.segment_ns:
                self.roll(mono_ns)

    def _write_pending(self) -> None:
        data = self._unwritten
        written = 0
        try:
            while written < len(data):
                written += os.write(self.fd, data[written:])  # type: ignore[arg-type]
            os.fdatasync(self.fd)  # type: ignore[arg-type]
        except OSError as exc:
            if _is_enospc(exc):
                raise DiskFull(
                    errno.ENOSPC, f"disk full writing {self.out / journal_name(self.segment)}"
                ) from exc
            raise
        finally:
            # what reached the file stays there; a torn chunk is detected by the reader
            self.bytes_journal += written
            self._unwritten = data[written:]

    def flush(self, mono_ns: int | None = None) -> None:
        """Encode the samples queued since the last flush as one chunk, write it, fdatasync."""
        if mono_ns is not None:
            self.last_flush = mono_ns
        if self._k:
            k = self._k
            times, ints, floats = self._bt[:k].copy(), self._bi[:k].copy(), self._bf[:k].copy()
            self._k = 0
            self._seg.append((times, ints, floats))
            self._unwritten += encode_chunk(times, ints, floats)
        if self._unwritten and self.fd is not None:
            self._write_pending()

    # -- segments --------------------------------------------------------------------------
    def roll(self, mono_ns: int) -> None:
        """Write the current segment as Parquet, then drop its journal."""
        self.flush(mono_ns)
        if not self._seg:
            return
        path = self.out / segment_name(self.segment)
        write_atomic(
            path,
            lambda tmp: write_segment(
                tmp,
                np.vstack([b[0] for b in self._seg]),
                np.vstack([b[1] for b in self._seg]),
                np.vstack([b[2] for b in self._seg]),
                self.ints,
                self.floats,
                {"segment": self.segment},
            ),
            full=f"disk full writing {path}; journal {journal_name(self.segment)} keeps the segment's samples",
        )
        self.bytes_segments += path.stat().st_size
        os.close(self.fd)  # type: ignore[arg-type]
        self.fd = None
        os.unlink(self.out / journal_name(self.segment))
        self._seg = []
        self.segment += 1
        self._open_journal(mono_ns)

    def close(self, mono_ns: int, *, roll: bool = True) -> None:
        """Final flush (and roll into Parquet unless ``roll=False``, e.g. on a full disk)."""
        try:
            if roll:
                self.roll(mono_ns)
            elif self.fd is not None:
                try:
                    self.flush(mono_ns)
                except DiskFull:
                    pass
        finally:
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None
                if roll and not self._seg:  # the fresh journal after the last roll holds no sample
                    try:
                        os.unlink(self.out / journal_name(self.segment))
                    except OSError:
                        pass


def _arrow(pa: Any, values: np.ndarray, typ: Any, missing: np.ndarray | None = None) -> Any:
    """``pa.array(values, type=typ, mask=missing)`` built on ``values``' own buffer: ``pa.array``
    imports pandas (to ask whether ``values`` is a Series), over a second of CPU in a collector's
    first segment roll. NaN stays a value, as in ``pa.array``'s default."""
    values = np.ascontiguousarray(values)
    data = pa.py_buffer(values)
    if missing is None or not missing.any():
        return pa.Array.from_buffers(typ, len(values), [None, data], null_count=0)
    valid = pa.py_buffer(np.packbits(~missing, bitorder="little"))
    return pa.Array.from_buffers(typ, len(values), [valid, data], null_count=int(missing.sum()))


def write_segment(
    path: Path,
    times: np.ndarray,
    ints: np.ndarray,
    floats: np.ndarray,
    int_channels: list[dict],
    float_channels: list[dict],
    meta: dict,
) -> None:
    """One Parquet file: ``seq, t_wall_ns, t_mono_ns`` and one column per channel.

    Integer channels use DELTA_BINARY_PACKED (a cumulative counter costs a few bits
    a sample), floats BYTE_STREAM_SPLIT, all zstd-compressed; no statistics and no
    embedded Arrow schema (the column metadata of ~700 channels would dominate).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, pa.Array] = {
        name: _arrow(pa, times[:, j], pa.int64()) for j, name in enumerate(("seq", "t_wall_ns", "t_mono_ns"))
    }
    enc = dict.fromkeys(cols, "DELTA_BINARY_PACKED")
    if int_channels:
        mat = np.ascontiguousarray(ints.T)
        for j, c in enumerate(int_channels):
            col = mat[j]
            cols[c["name"]] = _arrow(pa, col, pa.int64(), col == MISSING_INT)
            enc[c["name"]] = "DELTA_BINARY_PACKED"
    if float_channels:
        mat = np.ascontiguousarray(floats.T)
        for j, c in enumerate(float_channels):
            cols[c["name"]] = _arrow(pa, mat[j], pa.float64())
            enc[c["name"]] = "BYTE_STREAM_SPLIT"
    table = pa.table(cols).replace_schema_metadata({"reveal_lab.collector": json.dumps(meta)})
    pq.write_table(
        table,
        path,
        compression="zstd",
        compression_level=9,
        use_dictionary=False,
        column_encoding=enc,
        write_statistics=False,
        store_schema=False,
    )
