"""Byte layout of the collector's journal and names of the files in a run directory.

See ``FORMAT.md`` beside this module for the full specification. In short, a
journal is a 24-byte header followed by *chunks*; each chunk holds the samples of
one flush period (≈1 s), zlib-compressed, with a CRC::

    header  <4sHHIIII  b"RVLJ", version, 0, n_int, n_float, crc32(channels.json), segment
    chunk   <4sIII     b"RVLC", crc32(payload), n_records, len(payload)
            payload    zlib( seq[n] t_wall_ns[n] t_mono_ns[n]        int64
                             ints[n, n_int]  row 0 raw, rows 1.. as differences (int64, wrapping)
                             floats[n, n_float] )                     float64
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = [
    "FORMAT_VERSION",
    "JOURNAL_MAGIC",
    "CHUNK_MAGIC",
    "JOURNAL_HEADER",
    "CHUNK_HEADER",
    "META_FILE",
    "CHANNELS_FILE",
    "LOCK_FILE",
    "RESERVE_FILE",
    "TIME_COLUMNS",
    "journal_name",
    "segment_name",
    "encode_chunk",
    "decode_chunk",
]

FORMAT_VERSION = 1
JOURNAL_MAGIC = b"RVLJ"
CHUNK_MAGIC = b"RVLC"
#: magic, version, reserved, n_int, n_float, channels crc32, segment index
JOURNAL_HEADER = struct.Struct("<4sHHIIII")
#: magic, crc32(payload), n_records, payload length
CHUNK_HEADER = struct.Struct("<4sIII")
META_FILE = "meta.json"
CHANNELS_FILE = "channels.json"
#: held with ``flock`` by the collector writing the run (holds its pid)
LOCK_FILE = ".lock"
#: space set aside at start, freed to write the final ``meta.json`` on a full disk
RESERVE_FILE = ".reserve"
TIME_COLUMNS = ("seq", "t_wall_ns", "t_mono_ns")


def journal_name(index: int) -> str:
    return f"journal-{index:06d}.bin"


def segment_name(index: int) -> str:
    return f"segment-{index:06d}.parquet"


def encode_chunk(times: np.ndarray, ints: np.ndarray, floats: np.ndarray, level: int = 1) -> bytes:
    """One chunk (header + payload) from ``times[n, 3]``, ``ints[n, n_int]``, ``floats[n, n_float]``.

    >>> t = np.array([[0, 10, 5], [1, 20, 15]]); i = np.array([[7, 1], [9, 1]]); f = np.zeros((2, 0))
    >>> tt, ii, ff = decode_chunk(encode_chunk(t, i, f)[CHUNK_HEADER.size:], 2, 2, 0)
    >>> ii.tolist(), tt[:, 2].tolist()
    ([[7, 1], [9, 1]], [5, 15])
    """
    n = times.shape[0]
    d = ints.astype("<i8", copy=True)
    if n > 1:
        d[1:] -= ints[:-1]  # wraps on overflow (MISSING_INT), undone exactly by cumsum
    payload = zlib.compress(
        np.ascontiguousarray(times.T, dtype="<i8").tobytes() + d.tobytes() + floats.astype("<f8").tobytes(),
        level,
    )
    return CHUNK_HEADER.pack(CHUNK_MAGIC, zlib.crc32(payload), n, len(payload)) + payload


def decode_chunk(
    payload: bytes, n: int, n_int: int, n_float: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inverse of :func:`encode_chunk` (payload without the chunk header)."""
    raw = zlib.decompress(payload)
    want = 8 * n * (3 + n_int + n_float)
    if len(raw) != want:
        raise ValueError(f"chunk holds {len(raw)} bytes, expected {want} for {n} records")
    times = np.frombuffer(raw, "<i8", 3 * n).reshape(3, n).T
    with np.errstate(over="ignore"):
        ints = np.cumsum(np.frombuffer(raw, "<i8", n * n_int, 24 * n).reshape(n, n_int), axis=0, dtype="<i8")
    floats = np.frombuffer(raw, "<f8", n * n_float, 8 * n * (3 + n_int)).reshape(n, n_float)
    return times, ints, floats
