"""CollectorFollower against a real collector (roll-over included) and against journals
truncated or replaced under it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reveal_lab.collect.journal import (
    CHANNELS_FILE,
    JOURNAL_HEADER,
    JOURNAL_MAGIC,
    META_FILE,
    encode_chunk,
    journal_name,
)
from reveal_lab.io import read_collector_run
from reveal_lab.live import CollectorFollower

CLI = str(Path(sys.executable).with_name("reveal-lab"))


def test_follows_a_real_collector_through_segment_rollover(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [
            CLI,
            "collect",
            "--out",
            str(out),
            "--probes",
            "procfs",
            "--interval",
            "100ms",
            "--duration",
            "3.5s",
            "--segment",
            "2s",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    got: list[pl.DataFrame] = []
    polls_with_data = 0
    try:
        with CollectorFollower(out) as f:
            deadline = time.monotonic() + 180  # a hang guard: a cold numba compile under load is slow
            while proc.poll() is None and time.monotonic() < deadline:
                rows = f.poll()
                if rows is not None:
                    got.append(rows)
                    polls_with_data += 1
                time.sleep(0.2)
            assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            rows = f.poll()
            if rows is not None:
                got.append(rows)
            stats = f.stats.as_dict()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert polls_with_data >= 2  # rows arrived while the collector was running, not only at the end
    assert stats["rollovers"] >= 1
    stream = pl.concat(got, how="vertical")
    run = read_collector_run(out)
    assert_frame_equal(stream, run.frame)  # the stream is exactly the finished run (dataset view)


# -- a hand-written run directory, to truncate and replace its journal ---------------------------
CHANNELS = [
    {
        "source": "Test",
        "field": "events",
        "instance": None,
        "unit": "count",
        "counter": True,
        "dtype": "i",
        "dataset_source": None,
        "name": "Test:events.h1[count]",
        "dataset": "Test_diff:events.h1[count]",
        "probe": "test",
    },
    {
        "source": "Test",
        "field": "level",
        "instance": None,
        "unit": "%",
        "counter": False,
        "dtype": "f",
        "dataset_source": None,
        "name": "Test:level.h1[%]",
        "dataset": "Test:level.h1[%]",
        "probe": "test",
    },
]
WALL0 = 1_750_000_000_000_000_000


def _chunk(seqs: range) -> bytes:
    seq = np.array(list(seqs), dtype=np.int64)
    times = np.stack([seq, WALL0 + seq * 100_000_000, seq * 100_000_000], axis=1)
    ints = (seq * 7)[:, None]
    floats = (seq * 0.5)[:, None]
    return encode_chunk(times, ints, floats)


def _make_run(d: Path) -> tuple[Path, bytes]:
    d.mkdir()
    blob = json.dumps(CHANNELS).encode()
    (d / CHANNELS_FILE).write_bytes(blob)
    (d / META_FILE).write_text(json.dumps({"host": "h1", "clock": {"wall_ns": WALL0, "mono_ns": 0}}))
    header = JOURNAL_HEADER.pack(JOURNAL_MAGIC, 1, 0, 1, 1, zlib.crc32(blob), 0)
    return d / journal_name(0), header


def _seqs(frame: pl.DataFrame) -> list[int]:
    return ((frame.get_column("timestamp").dt.epoch("ns") - WALL0) // 100_000_000).to_list()


def test_reads_only_whole_new_chunks(tmp_path):
    journal, header = _make_run(tmp_path / "run")
    first, second = _chunk(range(0, 10)), _chunk(range(10, 15))
    journal.write_bytes(header + first + second[:7])  # the second chunk is being written
    f = CollectorFollower(tmp_path / "run")
    a = f.poll()
    assert _seqs(a) == list(range(10))
    assert f.poll() is None  # nothing whole yet
    with open(journal, "ab") as fh:
        fh.write(second[7:])
    b = f.poll()
    assert _seqs(b) == list(range(10, 15))
    # only new bytes are read: the torn 7 bytes twice (once torn, once whole), nothing while they waited
    assert f.stats.bytes_read == len(first) + 7 + len(second)
    # counters become first differences across polls (7 per sample), the first is null
    ev = pl.concat([a, b]).get_column("Test_diff:events.h1[count]")
    assert ev[0] is None and ev.slice(1).to_list() == [7.0] * 14
    f.close()


def test_truncated_and_replaced_journals_deliver_no_row_twice(tmp_path):
    journal, header = _make_run(tmp_path / "run")
    journal.write_bytes(header + _chunk(range(0, 10)))
    f = CollectorFollower(tmp_path / "run")
    assert _seqs(f.poll()) == list(range(10))
    # truncated in place, then rewritten from the start with old and new samples
    os.truncate(journal, JOURNAL_HEADER.size)
    with open(journal, "ab") as fh:
        fh.write(_chunk(range(5, 10)) + _chunk(range(10, 13)))
    assert _seqs(f.poll()) == [10, 11, 12]
    # replaced by a new file (another inode) holding the same samples and one more chunk
    tmp = journal.with_name("rotated.tmp")
    tmp.write_bytes(header + _chunk(range(0, 13)) + _chunk(range(13, 16)))
    os.replace(tmp, journal)
    assert _seqs(f.poll()) == [13, 14, 15]
    assert f.stats.resets == 2
    f.close()


def test_bad_chunk_crc_is_skipped_and_reported(tmp_path, caplog):
    journal, header = _make_run(tmp_path / "run")
    bad = bytearray(_chunk(range(5, 10)))
    bad[-1] ^= 0xFF
    journal.write_bytes(header + _chunk(range(0, 5)) + bytes(bad) + _chunk(range(10, 12)))
    f = CollectorFollower(tmp_path / "run")
    rows = f.poll()
    assert _seqs(rows) == [0, 1, 2, 3, 4, 10, 11]
    assert f.stats.bad_chunks == 1
    assert any("CRC" in r.getMessage() for r in caplog.records)


def test_foreign_journal_is_a_clear_error(tmp_path):
    from reveal_lab.telemetry import TelemetryError

    journal, _header = _make_run(tmp_path / "run")
    journal.write_bytes(b"NOPE" + bytes(40))
    with pytest.raises(TelemetryError, match="not a collector journal"):
        CollectorFollower(tmp_path / "run").poll()
