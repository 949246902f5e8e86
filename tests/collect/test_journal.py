"""The collector's writer against the one public journal reader (``reveal_lab.collect.journal``):
what :class:`RunWriter` writes is what :func:`read_journal`, :func:`iter_chunks` and
:class:`JournalTail` read back, and damage is reported, not read as samples."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from reveal_lab.collect._writer import RunWriter
from reveal_lab.collect.journal import (
    BAD_CRC,
    CHUNK_HEADER,
    JOURNAL_HEADER,
    MISSING_INT,
    TORN,
    JournalTail,
    iter_chunks,
    journal_name,
    parse_header,
    read_journal,
)
from reveal_lab.telemetry import TelemetryError

CHANNELS = [
    {"name": "a", "dtype": "i", "probe": "t", "counter": True},
    {"name": "b", "dtype": "i", "probe": "t", "counter": False},
    {"name": "x", "dtype": "f", "probe": "t", "counter": False},
]


def _crc() -> int:
    return zlib.crc32(json.dumps(CHANNELS, separators=(",", ":")).encode())


def _write(w: RunWriter, seqs: range) -> None:
    for s in seqs:
        ints = np.array([s * 1000, MISSING_INT if s == 3 else -s], dtype=np.int64)
        w.append(s, 10_000 + s, 5_000 + s, ints, np.array([s / 4]))
    w.flush()


def _rows(blocks):
    t = np.vstack([b[0] for b in blocks])
    i = np.vstack([b[1] for b in blocks])
    f = np.vstack([b[2] for b in blocks])
    return t[:, 0].tolist(), i.tolist(), f.ravel().tolist()


def test_writer_journal_reads_back_whole_and_live(tmp_path):
    w = RunWriter(tmp_path, CHANNELS, segment_s=1e9)
    path = tmp_path / journal_name(0)
    tail = JournalTail(2, 1, _crc())
    assert tail.read(path) == []  # only the header so far
    _write(w, range(0, 4))
    first = tail.read(path)
    _write(w, range(4, 6))
    second = tail.read(path)
    assert tail.read(path) == []  # nothing new
    assert tail.counters.bytes_read == path.stat().st_size - JOURNAL_HEADER.size  # each byte read once
    assert [len(b[0]) for b in first + second] == [4, 2]
    blocks, notes = read_journal(path, 2, 1, _crc())
    assert notes == []
    seq, ints, floats = _rows(blocks)
    assert seq == list(range(6))
    assert ints[3] == [3000, MISSING_INT] and ints[5] == [5000, -5]  # wrapping differences undone exactly
    assert floats == [s / 4 for s in range(6)]
    assert _rows(first + second) == (seq, ints, floats)
    assert parse_header(path.read_bytes()).n_int == 2
    w.close(0, roll=False)
    tail.close()


def test_damage_is_reported_not_read(tmp_path):
    w = RunWriter(tmp_path, CHANNELS, segment_s=1e9)
    _write(w, range(0, 3))
    _write(w, range(3, 5))
    w.close(0, roll=False)
    path = tmp_path / journal_name(0)
    data = path.read_bytes()
    chunks = list(iter_chunks(data, 2, 1))
    assert [(c.n, c.problem) for c in chunks] == [(3, None), (2, None)]
    assert chunks[1].end == len(data)

    path.write_bytes(data[:-5])  # killed mid-write: the last chunk is torn
    blocks, notes = read_journal(path, 2, 1, _crc())
    assert _rows(blocks)[0] == [0, 1, 2]
    assert len(notes) == 1 and "torn last chunk" in notes[0] and f"byte {chunks[1].offset}" in notes[0]
    tail = JournalTail(2, 1, _crc())
    assert len(tail.read(path)) == 1  # the torn chunk waits ...
    path.write_bytes(data)  # ... until it is whole (same inode: written in place)
    assert [len(b[0]) for b in tail.read(path)] == [2] and tail.counters.resets == 0
    tail.close()

    bad = bytearray(data)
    bad[chunks[0].offset + CHUNK_HEADER.size + 2] ^= 0xFF  # a flipped payload byte
    path.write_bytes(bytes(bad))
    assert [c.problem for c in iter_chunks(bytes(bad), 2, 1)] == [BAD_CRC, None]
    blocks, notes = read_journal(path, 2, 1, _crc())
    assert _rows(blocks)[0] == [3, 4] and "fails its CRC" in notes[0]
    assert [c.problem for c in iter_chunks(data[: chunks[0].offset + 3], 2, 1)] == [TORN]

    with pytest.raises(TelemetryError, match="another channel set"):
        read_journal(path, 1, 1, _crc())
    path.write_bytes(b"XXXX" + data[4:])
    with pytest.raises(TelemetryError, match="not a collector journal"):
        read_journal(path, 2, 1, _crc())
