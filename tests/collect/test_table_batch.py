"""Batched proc reads (one compiled pread+scan call per tick for every table): same
values as each table reading on its own, and the table's own path takes over when
a file's layout changes or it outgrows its buffer."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest
from collect_helpers import collect_cmd

from reveal_lab.collect import MISSING_INT, ProbeContext
from reveal_lab.collect.probes._memory import _meminfo_index
from reveal_lab.collect.probes._table import Table, TableBatch
from reveal_lab.io._collector import read_raw_frame


def _write(path, rows):
    path.write_bytes(b"".join(b"%s: %d kB\n" % (k.encode(), v) for k, v in rows))


def test_batch_reads_the_same_values_and_falls_back_on_changes(tmp_path):
    f = tmp_path / "meminfo"
    rows = [("MemTotal", 1000), ("MemFree", 400), ("Cached", 7)]
    _write(f, rows)
    t = Table(ProbeContext("h", 0.1), str(f), _meminfo_index)
    batch = TableBatch.create([t])
    if batch is None:
        pytest.skip("numba unavailable: no batched reads")
    out = np.zeros(3, np.int64)
    batch.run()
    t.read_into(out)
    assert out.tolist() == [1000, 400, 7] and t.relayouts == 0
    # values change, layout does not: the batch's values are used, no relayout
    _write(f, [("MemTotal", 1000), ("MemFree", 123456), ("Cached", 8)])
    batch.run()
    assert t._pre is not None
    t.read_into(out)
    assert out.tolist() == [1000, 123456, 8] and t.relayouts == 0
    # a line vanished: the signature differs, the table re-learns its layout itself
    _write(f, [("MemTotal", 1000), ("Cached", 9)])
    batch.run()
    t.read_into(out)
    assert out.tolist() == [1000, MISSING_INT, 9] and t.relayouts == 1
    assert batch.dirty  # the batch rebuilds its arrays before the next read
    # the file outgrows the buffer: the batch reports 0, the table reads it whole
    big = [("MemTotal", 1000), ("MemFree", 5), ("Cached", 10)] + [(f"X{i}", i) for i in range(2000)]
    _write(f, big)
    batch.run()
    assert batch.sigs[0] == 0
    t.read_into(out)
    assert out.tolist() == [1000, 5, 10]
    assert t.hint > 2000 * 10
    batch.run()
    assert batch.sigs[0] != 0  # rebuilt with the larger buffer
    # an inactive table gets nothing from the batch and reads on its own
    batch.active[:] = False
    batch.run()
    assert t._pre is None
    t.read_into(out)
    assert out.tolist() == [1000, 5, 10]
    t.close()


def test_direct_batch_writes_the_row_and_reports_layout_changes(tmp_path):
    f, g = tmp_path / "a", tmp_path / "b"
    _write(f, [("MemTotal", 1), ("MemFree", 2)])
    _write(g, [("Cached", 3)])
    ctx = ProbeContext("h", 0.1)
    ta, tb = Table(ctx, str(f), _meminfo_index), Table(ctx, str(g), _meminfo_index)
    row = np.full(5, MISSING_INT, np.int64)
    # ta straight into row[1:3]; tb (indirect) into row[4:5], handed to its read_into
    batch = TableBatch.create([ta, tb], row, [1, 4], [True, False])
    if batch is None:
        pytest.skip("numba unavailable: no batched reads")
    assert batch.run() is True
    assert row.tolist() == [MISSING_INT, 1, 2, MISSING_INT, 3]
    _write(f, [("MemTotal", 10), ("MemFree", 20)])
    _write(g, [("Cached", 30), ("Dirty", 1)])  # an indirect table's change does not concern run()
    assert batch.run() is True
    assert row[1:3].tolist() == [10, 20]
    out = np.zeros(1, np.int64)
    tb.read_into(out)
    assert out.tolist() == [30] and tb.relayouts == 1
    _write(f, [("MemFree", 7), ("MemTotal", 8)])  # same tokens, moved: layout differs
    assert batch.run() is False  # the probe must sample on its own this tick
    vals = np.zeros(2, np.int64)
    ta.read_into(vals)
    assert vals.tolist() == [8, 7] and ta.relayouts == 1
    assert batch.run() is True and row[1:3].tolist() == [8, 7]  # re-learnt layout in the batch
    ta.close()
    tb.close()


def test_collector_with_and_without_batch_agree(tmp_path, monkeypatch):
    """The same probes with batching on and off: same channels, gauges that do not
    move (MemTotal, cores' presence) identical, counters non-decreasing."""
    runs = {}
    probes = "cpu,meminfo,interrupts,nstat"
    procs = {  # side by side
        flag: subprocess.Popen(
            collect_cmd(tmp_path / f"b{flag}", "--interval", "100ms", "--duration", "1s", "--probes", probes),
            env={**os.environ, "REVEAL_LAB_COLLECT_BATCH": flag},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for flag in ("1", "0")
    }
    for flag, proc in procs.items():
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        out = tmp_path / f"b{flag}"
        meta = json.loads((out / "meta.json").read_text())
        raw, _, channels, _ = read_raw_frame(out)
        runs[flag] = (meta, raw, channels)
    m1, r1, c1 = runs["1"]
    m0, r0, c0 = runs["0"]
    if m1["batch_read_tables"] == 0:
        pytest.skip("numba unavailable: no batched reads")
    assert m1["batch_read_tables"] == 5  # stat, meminfo, interrupts, snmp, netstat
    assert m0["batch_read_tables"] == 0
    assert [c["name"] for c in c1] == [c["name"] for c in c0]
    total = next(c["name"] for c in c1 if c["name"].startswith("Memory:MemTotal"))
    assert r1[total].unique().to_list() == r0[total].unique().to_list()
    for c in c1:
        if c["counter"] and c["probe"] in ("cpu", "interrupts"):
            col = r1[c["name"]]
            assert col.null_count() == 0 and (np.diff(col.to_numpy()) >= 0).all(), c["name"]
    assert m1["relayouts"] == {"cpu": 0, "meminfo": 0, "interrupts": 0, "nstat": 0}


def test_stale_compiled_caches_are_dropped_when_a_dependency_changes(tmp_path):
    """numba keys a cached function on its own file; drop_stale_cache drops a module's
    cache when a file it calls into changed."""
    from reveal_lab.collect.probes._scan import drop_stale_cache

    mod, dep = tmp_path / "mod.py", tmp_path / "dep.py"
    mod.write_text("x = 1\n")
    dep.write_text("y = 1\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    entries = [cache / "mod.f-10.py311.nbi", cache / "mod.f-10.py311.1.nbc"]
    other = cache / "dep.g-3.py311.nbi"
    for f in (*entries, other):
        f.write_bytes(b"old")
    drop_stale_cache(str(mod), str(dep))  # no digest yet: unknown provenance, dropped
    assert not any(f.exists() for f in entries) and other.exists()
    assert (cache / "mod.deps-sha256").exists()
    for f in entries:
        f.write_bytes(b"new")
    drop_stale_cache(str(mod), str(dep))  # nothing changed: kept
    assert all(f.exists() for f in entries)
    dep.write_text("y = 2\n")
    drop_stale_cache(str(mod), str(dep))  # a dependency changed: dropped
    assert not any(f.exists() for f in entries) and other.exists()
