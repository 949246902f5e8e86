"""The collector's journal, public: its byte layout and the one reader every consumer uses.

The layout (``FORMAT.md`` beside this module): a 24-byte header, then one zlib-compressed
*chunk* per flush with a CRC::

    header  <4sHHIIII  b"RVLJ", version, 0, n_int, n_float, crc32(channels.json), segment
    chunk   <4sIII     b"RVLC", crc32(payload), n_records, len(payload)

Readers:

* :func:`iter_chunks` -- the chunks of a buffer holding (part of) a journal, each decoded
  or with the reason it cannot be (bad CRC, unreadable, torn, no chunk marker);
* :func:`read_journal` -- a whole journal file (what :func:`reveal_lab.io.read_collector_run`
  reads for the samples not yet in a Parquet segment), with a warning per damaged chunk;
* :class:`JournalTail` -- a live tail: reads only the new bytes of a journal that is being
  written (``os.pread`` from the first unread chunk), waits for a chunk being written, and
  starts again when the file is truncated, rewritten or replaced
  (:class:`reveal_lab.live.CollectorFollower` follows a run directory with it).

A *block* is ``(times[n, 3], ints[n, n_int], floats[n, n_float])``: ``seq, t_wall_ns,
t_mono_ns``, the integer channels (:data:`MISSING_INT` where a reading is missing) and the
float channels, as written.

Examples
--------
>>> import numpy as np
>>> t = np.array([[0, 10, 5], [1, 20, 15]]); i = np.array([[7], [9]]); f = np.zeros((2, 0))
>>> data = JOURNAL_HEADER.pack(JOURNAL_MAGIC, FORMAT_VERSION, 0, 1, 0, 0, 0) + encode_chunk(t, i, f)
>>> [(c.n, c.problem, c.block[1].ravel().tolist()) for c in iter_chunks(data, 1, 0)]
[(2, None, [7, 9])]
>>> [c.problem for c in iter_chunks(data[:-3], 1, 0)]  # the last chunk is still being written
['torn']
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from reveal_lab.collect._format import (
    CHANNELS_FILE,
    CHUNK_HEADER,
    CHUNK_MAGIC,
    FORMAT_VERSION,
    JOURNAL_HEADER,
    JOURNAL_MAGIC,
    META_FILE,
    TIME_COLUMNS,
    decode_chunk,
    encode_chunk,
    journal_name,
    segment_name,
)
from reveal_lab.collect._probe import MISSING_INT
from reveal_lab.telemetry import TelemetryError

__all__ = [
    "FORMAT_VERSION",
    "JOURNAL_MAGIC",
    "CHUNK_MAGIC",
    "JOURNAL_HEADER",
    "CHUNK_HEADER",
    "META_FILE",
    "CHANNELS_FILE",
    "TIME_COLUMNS",
    "MISSING_INT",
    "journal_name",
    "segment_name",
    "JOURNAL_RE",
    "SEGMENT_RE",
    "encode_chunk",
    "decode_chunk",
    "JournalHeader",
    "Chunk",
    "parse_header",
    "iter_chunks",
    "read_journal",
    "JournalTail",
    "TORN",
    "NO_MARKER",
    "BAD_CRC",
]

Block = tuple[np.ndarray, np.ndarray, np.ndarray]

#: a journal's / a Parquet segment's file name in a run directory (group 1: its index)
JOURNAL_RE = re.compile(r"^journal-(\d{6})\.bin$")
SEGMENT_RE = re.compile(r"^segment-(\d{6})\.parquet$")

#: :attr:`Chunk.problem` of a chunk not yet wholly written (the last one of a live journal)
TORN = "torn"
#: :attr:`Chunk.problem` where no chunk marker is found: the rest of the buffer is unusable
NO_MARKER = "no chunk marker"
#: :attr:`Chunk.problem` of a chunk whose payload fails its CRC
BAD_CRC = "crc"


@dataclass(frozen=True, slots=True)
class JournalHeader:
    """The journal's header fields."""

    version: int
    n_int: int
    n_float: int
    channels_crc: int
    segment: int


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk found by :func:`iter_chunks`.

    ``offset`` is where its header starts and ``end`` where it ends (for a torn chunk: where
    it will end once whole; for :data:`NO_MARKER`: the end of the buffer), both as offsets in
    the file. ``block`` is the decoded samples, ``None`` when ``problem`` says why not
    (:data:`TORN`, :data:`NO_MARKER`, :data:`BAD_CRC` or ``"unreadable (...)"``).
    """

    offset: int
    end: int
    n: int
    block: Block | None
    problem: str | None = None


def parse_header(
    data: bytes, path: str | Path = "", *, channels: tuple[int, int, int] | None = None
) -> JournalHeader:
    """The header at the start of ``data`` (at least ``JOURNAL_HEADER.size`` bytes).

    Raises :class:`~reveal_lab.telemetry.TelemetryError` (naming ``path``) for another magic
    or version, and, when ``channels=(n_int, n_float, crc32(channels.json))`` is given, for a
    journal written for another channel set.
    """
    magic, version, _reserved, ni, nf, ccrc, seg = JOURNAL_HEADER.unpack_from(data, 0)
    if magic != JOURNAL_MAGIC:
        raise TelemetryError(
            f"not a collector journal (magic {magic!r}, expected {JOURNAL_MAGIC!r})", path=str(path)
        )
    if version != FORMAT_VERSION:
        raise TelemetryError(
            f"journal format version {version} is not supported (expected {FORMAT_VERSION})", path=str(path)
        )
    if channels is not None:
        n_int, n_float, crc = channels
        if (ni, nf) != (n_int, n_float) or ccrc != crc:
            raise TelemetryError(
                f"journal was written for another channel set ({ni} int/{nf} float channels, "
                f"crc {ccrc:#x}; channels.json has {n_int}/{n_float}, crc {crc:#x})",
                path=str(path),
            )
    return JournalHeader(version, ni, nf, ccrc, seg)


def iter_chunks(
    data: bytes | memoryview, n_int: int, n_float: int, *, offset: int | None = None, base: int = 0
) -> Iterator[Chunk]:
    """The chunks of ``data``, the journal's bytes from file offset ``base`` on, starting at
    file offset ``offset`` (default: just after the header when ``base`` is 0, else ``base``).

    Whole chunks come back decoded, or with :data:`BAD_CRC` / ``"unreadable (...)"``; a chunk
    cut off by the end of ``data`` comes last as :data:`TORN`, and a missing chunk marker
    ends the iteration with :data:`NO_MARKER`.
    """
    pos = (JOURNAL_HEADER.size if base == 0 else base) if offset is None else offset
    pos -= base
    size = len(data)
    hsize = CHUNK_HEADER.size
    while pos < size:
        if size - pos < hsize:
            yield Chunk(base + pos, base + pos + hsize, 0, None, TORN)
            return
        marker, crc, n, plen = CHUNK_HEADER.unpack_from(data, pos)
        if marker != CHUNK_MAGIC:
            yield Chunk(base + pos, base + size, 0, None, NO_MARKER)
            return
        end = pos + hsize + plen
        if end > size:
            yield Chunk(base + pos, base + end, n, None, TORN)
            return
        payload = data[pos + hsize : end]
        if zlib.crc32(payload) != crc:
            yield Chunk(base + pos, base + end, n, None, BAD_CRC)
        else:
            try:
                yield Chunk(base + pos, base + end, n, decode_chunk(bytes(payload), n, n_int, n_float))
            except (ValueError, zlib.error) as exc:
                yield Chunk(base + pos, base + end, n, None, f"unreadable ({exc})")
        pos = end


def read_journal(path: str | Path, n_int: int, n_float: int, crc: int) -> tuple[list[Block], list[str]]:
    """The whole chunks of the journal file ``path`` and a message per damaged part.

    The header must match (see :func:`parse_header`); a torn header or last chunk (the
    collector was killed mid-write), a chunk failing its CRC or not decodable, and a missing
    chunk marker are skipped with a message (``"path: torn last chunk at byte ..."``).
    """
    data = Path(path).read_bytes()
    if len(data) < JOURNAL_HEADER.size:
        return [], ([f"{path}: torn journal header, {len(data)} bytes ignored"] if data else [])
    parse_header(data, path, channels=(n_int, n_float, crc))
    blocks: list[Block] = []
    notes: list[str] = []
    for c in iter_chunks(data, n_int, n_float):
        rest = len(data) - c.offset
        if c.block is not None:
            blocks.append(c.block)
        elif c.problem == TORN:
            if rest < CHUNK_HEADER.size:
                notes.append(f"{path}: torn last chunk at byte {c.offset}: {rest} bytes ignored")
            else:
                plen = c.end - c.offset - CHUNK_HEADER.size
                notes.append(
                    f"{path}: torn last chunk at byte {c.offset} ({c.n} samples, {plen}-byte payload, "
                    f"only {rest - CHUNK_HEADER.size} bytes written): {rest} bytes ignored"
                )
        elif c.problem == NO_MARKER:
            found = bytes(data[c.offset : c.offset + 4])
            notes.append(
                f"{path}: no chunk marker at byte {c.offset} (found {found!r}): {rest} bytes ignored"
            )
        elif c.problem == BAD_CRC:
            notes.append(f"{path}: chunk at byte {c.offset} fails its CRC: {c.n} samples ignored")
        else:
            notes.append(f"{path}: chunk at byte {c.offset} {c.problem}: {c.n} samples ignored")
    return blocks, notes


class JournalTail:
    """Follow one journal file as it is written: each :meth:`read` returns the blocks of the
    whole chunks that appeared since the last one, reading only the new bytes.

    ``n_int``, ``n_float``, ``crc`` are those of ``channels.json`` (the header must match).
    ``counters`` (any object with ``bytes_read``, ``chunks``, ``bad_chunks``, ``resets``)
    receives the counts; by default :attr:`counters` is a fresh namespace.
    ``warn(message)`` is called for a damaged chunk (skipped).
    """

    def __init__(self, n_int: int, n_float: int, crc: int, *, counters: Any = None, warn: Any = None) -> None:
        self.n_int, self.n_float, self.crc = n_int, n_float, crc
        if counters is None:
            counters = SimpleNamespace(bytes_read=0, chunks=0, bad_chunks=0, resets=0)
        self.counters = counters
        self._warn = warn or (lambda msg: None)
        self._fd: int | None = None
        self._ino: int | None = None
        self._offset = 0
        self._need = 0  # the journal must reach this size before a read can yield a whole chunk
        self._first_head: bytes | None = None  # the first chunk's header, to notice a rewrite

    # -- files ------------------------------------------------------------------------------
    def open(self, path: str | Path, *, at_end: bool = False) -> None:
        """Follow ``path`` from its first chunk, or (``at_end``) from after its last whole one."""
        self.close()
        self._need = 0
        self._first_head = None
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        self._ino = os.fstat(self._fd).st_ino
        self._offset = 0
        if at_end:
            self._offset = self._chunk_boundary(os.fstat(self._fd).st_size)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None
        self._ino = None

    def _chunk_boundary(self, size: int) -> int:
        """Offset just after the last whole chunk below ``size`` (walks the chunk headers only)."""
        off = JOURNAL_HEADER.size
        while off + CHUNK_HEADER.size <= size:
            head = os.pread(self._fd, CHUNK_HEADER.size, off)  # type: ignore[arg-type]
            _m, _c, _n, plen = CHUNK_HEADER.unpack(head)
            if off + CHUNK_HEADER.size + plen > size:
                break
            off += CHUNK_HEADER.size + plen
        return min(off, size) if size >= JOURNAL_HEADER.size else 0

    def _rewritten(self) -> bool:
        """Does the journal's first chunk differ from the one read (rewritten in place)?"""
        if self._first_head is None:
            return False
        head = os.pread(self._fd, CHUNK_HEADER.size, JOURNAL_HEADER.size)  # type: ignore[arg-type]
        return head != self._first_head

    # -- reading ----------------------------------------------------------------------------
    def read(self, path: str | Path) -> list[Block]:
        """The whole chunks of ``path`` after the current offset (``[]`` when it is absent)."""
        c = self.counters
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return []
        if self._fd is None or st.st_ino != self._ino:
            if self._fd is not None:
                c.resets += 1  # replaced under the same name: start again
            self.open(path)
        elif st.st_size < self._offset or self._rewritten():
            c.resets += 1  # truncated or rewritten: start again
            self._offset = 0
            self._need = 0
            self._first_head = None
        size = os.fstat(self._fd).st_size  # type: ignore[arg-type]
        if self._offset == 0:
            if size < JOURNAL_HEADER.size:
                return []
            parse_header(
                os.pread(self._fd, JOURNAL_HEADER.size, 0),  # type: ignore[arg-type]
                path,
                channels=(self.n_int, self.n_float, self.crc),
            )
            self._offset = JOURNAL_HEADER.size
        if size <= self._offset or size < self._need:
            return []  # nothing new, or the chunk being written is not whole yet
        start = self._offset
        data = os.pread(self._fd, size - start, start)  # type: ignore[arg-type]
        c.bytes_read += len(data)
        out: list[Block] = []
        done = start
        self._need = start + CHUNK_HEADER.size
        for ch in iter_chunks(data, self.n_int, self.n_float, offset=start, base=start):
            if ch.problem == TORN:  # being written: read it once it is whole
                self._need = ch.end
                break
            if ch.problem == NO_MARKER:
                c.bad_chunks += 1
                self._warn(
                    f"{path}: no chunk marker at byte {ch.offset}; the rest of this journal is skipped"
                )
                done = ch.end
                self._need = done + CHUNK_HEADER.size
                break
            done = ch.end
            self._need = done + CHUNK_HEADER.size
            if ch.block is None:
                c.bad_chunks += 1
                what = "fails its CRC" if ch.problem == BAD_CRC else ch.problem
                self._warn(f"{path}: chunk at byte {ch.offset} {what}: {ch.n} samples skipped")
                continue
            out.append(ch.block)
            c.chunks += 1
        if self._first_head is None and done > start and start == JOURNAL_HEADER.size:
            self._first_head = bytes(data[: CHUNK_HEADER.size])
        self._offset = done
        return out
