"""The ``sockets`` probe (``/proc/net/sockstat`` and ``sockstat6`` read as direct
tables) and the ``unix`` probe (the UNIX sockets in use) on this machine's real
procfs: the channel names runs had before the split, values equal to a plain Python
split of the files read around the probe's read, batched and unbatched."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

import numpy as np
import pytest
from collect_helpers import run_collect

from reveal_lab.collect import MISSING_INT, ProbeContext, ProbeUnavailable, resolve_probes
from reveal_lab.collect._compiled import is_direct as _is_direct
from reveal_lab.collect.probes._net import Sockets
from reveal_lab.collect.probes._table import TableBatch
from reveal_lab.collect.probes._unix import Unix
from reveal_lab.io._collector import read_collector_run

SOCKSTAT, SOCKSTAT6, UNIX = "/proc/self/net/sockstat", "/proc/self/net/sockstat6", "/proc/self/net/unix"
HAS6 = os.path.exists(SOCKSTAT6)

#: the channel fields (in order) of runs made before sockets/unix were split, with IPv6
BEFORE = [
    "total_connections",
    "TCP",
    "TCP_orphan",
    "TCP_timewait",
    "TCP_alloc",
    "TCP_mem_pages",
    "UDP",
    "UDP_mem_pages",
    "UDPLITE",
    "RAW",
    "FRAG",
    "TCP6",
    "UDP6",
    "RAW6",
    "FRAG6",
    "UNIX",
]
#: (field, file, label, word): the value is the token after ``word`` on the ``label`` line
REF = [
    ("total_connections", SOCKSTAT, "sockets:", "used"),
    ("TCP", SOCKSTAT, "TCP:", "inuse"),
    ("TCP_orphan", SOCKSTAT, "TCP:", "orphan"),
    ("TCP_timewait", SOCKSTAT, "TCP:", "tw"),
    ("TCP_alloc", SOCKSTAT, "TCP:", "alloc"),
    ("TCP_mem_pages", SOCKSTAT, "TCP:", "mem"),
    ("UDP", SOCKSTAT, "UDP:", "inuse"),
    ("UDP_mem_pages", SOCKSTAT, "UDP:", "mem"),
    ("UDPLITE", SOCKSTAT, "UDPLITE:", "inuse"),
    ("RAW", SOCKSTAT, "RAW:", "inuse"),
    ("FRAG", SOCKSTAT, "FRAG:", "inuse"),
    ("TCP6", SOCKSTAT6, "TCP6:", "inuse"),
    ("UDP6", SOCKSTAT6, "UDP6:", "inuse"),
    ("RAW6", SOCKSTAT6, "RAW6:", "inuse"),
    ("FRAG6", SOCKSTAT6, "FRAG6:", "inuse"),
]


def reference() -> dict[str, int]:
    """The socket counts from a plain split of the files (``UNIX``: lines after the header)."""
    lines = {}
    for path in (SOCKSTAT, SOCKSTAT6):
        if os.path.exists(path):
            for line in open(path).read().splitlines():  # noqa: SIM115
                toks = line.split()
                if toks:
                    lines[(path, toks[0])] = toks
    out = {}
    for field, path, label, word in REF:
        toks = lines.get((path, label))
        if toks and word in toks[1:]:
            out[field] = int(toks[toks.index(word) + 1])
    with open(UNIX, "rb") as f:
        out["UNIX"] = f.read().count(b"\n") - 1
    return out


def settled(read, fields: list[str], tries: int = 20) -> dict[str, int]:
    """Each field's value from ``read()`` (a dict), checked against the kernel's count: ``read()``
    between two reference reads, repeated until, for every field, a try in which its count did
    not move (the same before and after) gave the probe that same count. The counts change while
    other processes run, and a socket opened and closed between two reads leaves them equal while
    the probe saw it; a probe reading a wrong row or column agrees on no try. Fails, listing
    every try, when some field found no such try."""
    agreed: dict[str, int] = {}
    log = []
    for _ in range(tries):
        before = reference()
        got = read()
        after = reference()
        log.append({f: (before.get(f), got[f], after.get(f)) for f in fields if f not in agreed})
        for f in fields:
            if f not in agreed and before.get(f) == after.get(f) == got[f]:
                agreed[f] = got[f]
        if len(agreed) == len(fields):
            return agreed
    never = [f for f in fields if f not in agreed]
    tried = "\n".join(
        f"  try {i}: " + ", ".join(f"{f} {t[f]}" for f in never if f in t) for i, t in enumerate(log)
    )
    raise AssertionError(
        f"{never}: the probe's value never equalled a count unchanged around it in {tries} tries "
        f"(before, probe, after):\n{tried}"
    )


def expected_fields() -> list[str]:
    ref = reference()
    return [f for f in BEFORE if f in ref]


def test_sockets_is_a_direct_table_probe_with_the_same_channels_and_values():
    p = Sockets()
    p.open(ProbeContext("h", 0.1))
    try:
        assert _is_direct(p)
        assert p.n_float == 0 and len(p.tables) == (2 if HAS6 else 1)
        fields = [c.field for c in p.channels]
        assert fields == [f for f in expected_fields() if f != "UNIX"]
        assert {c.source for c in p.channels} == {"NetworkProtocolCounts"}
        assert {(c.unit, c.counter, c.instance) for c in p.channels} == {("count", False, None)}
        assert fields[:2] == ["total_connections", "TCP"]

        def read():
            ints = np.full(p.n_int, 7, np.int64)
            p.sample(ints, np.empty(0))
            return dict(zip(fields, ints.tolist(), strict=True))

        settled(read, fields)
    finally:
        p.close()


def test_sockets_batched_reads_land_in_the_row():
    p = Sockets()
    p.open(ProbeContext("h", 0.1))
    try:
        row = np.full(3 + p.n_int, MISSING_INT, np.int64)
        starts = np.cumsum([3] + [t.n for t in p.tables])[:-1].tolist()  # the probe's slice starts at 3
        batch = TableBatch.create(p.tables, row, starts, [True] * len(p.tables))
        if batch is None:
            pytest.skip("numba unavailable: no batched reads")
        fields = [c.field for c in p.channels]

        def read():
            row[:] = MISSING_INT
            assert batch.run()  # every direct table kept its layout: its values are in the row
            return dict(zip(fields, row[3:].tolist(), strict=True))

        settled(read, fields)
        assert (row[:3] == MISSING_INT).all()
        batch.detach()
    finally:
        p.close()


def test_sockstat6_is_optional():
    class NoIPv6(ProbeContext):
        def open_ro(self, path: str) -> int:
            if path.endswith("sockstat6"):
                raise ProbeUnavailable(f"{path} does not exist")
            return super().open_ro(path)

    p = Sockets()
    p.open(NoIPv6("h", 0.1))
    try:
        assert len(p.tables) == 1 and _is_direct(p)
        assert [c.field for c in p.channels] == [f for f in expected_fields() if f in BEFORE[:11]]
    finally:
        p.close()

    class NoSockstat(ProbeContext):
        def open_ro(self, path: str) -> int:
            if path.endswith("sockstat"):
                raise ProbeUnavailable(f"{path} does not exist")
            return super().open_ro(path)

    with pytest.raises(ProbeUnavailable, match="sockstat"):
        Sockets().open(NoSockstat("h", 0.1))


@pytest.mark.parametrize("source", ["/proc/net/protocols", "/proc/net/unix"])
def test_unix_counts_the_sockets_listed_in_proc_net_unix(tmp_path, source):
    """The count from the kernel's in-use counters (``/proc/net/protocols``) equals the lines
    of ``/proc/net/unix``; a procfs root without ``net/protocols`` counts those lines
    itself. Either way the compiled loop takes it (ops, no Python per tick)."""
    # 200 sockets: the file spans several pages, and one read of a seq_file returns one page
    pairs = [socket.socketpair(socket.AF_UNIX) for _ in range(100)]
    ctx = ProbeContext("h", 0.1)
    if source == "/proc/net/unix":  # a procfs root that has net/unix but not net/protocols
        (tmp_path / "self" / "net").mkdir(parents=True)
        (tmp_path / "self" / "net" / "unix").symlink_to(UNIX)
        ctx = ProbeContext("h", 0.1, proc_root=str(tmp_path))
    p = Unix()
    p.open(ctx)
    try:
        assert [c.name("h") for c in p.channels] == ["NetworkProtocolCounts:UNIX.h[count]"]
        assert p.info["source"] == source
        assert p.compiled_ops() and not _is_direct(p)

        def read():
            ints = np.zeros(1, np.int64)
            p.sample(ints, np.empty(0))
            return {"UNIX": int(ints[0])}

        got = settled(read, ["UNIX"])["UNIX"]
        assert got >= 200  # our 100 pairs are open
        assert len(open(UNIX, "rb").read()) > 2 * 4096  # noqa: SIM115
        # the line count, not the byte count: a socket's line is listed by its inode
        inode = os.fstat(pairs[0][0].fileno()).st_ino
        assert any(line.split()[6:7] == [str(inode)] for line in open(UNIX).read().splitlines()[1:])
        for a, b in pairs[:50]:
            a.close()
            b.close()
        settled(read, ["UNIX"])
    finally:
        p.close()
        for a, b in pairs:
            a.close()
            b.close()


def test_unix_is_in_procfs_and_all():
    assert "unix" in resolve_probes("procfs") and "unix" in resolve_probes("all")
    order = resolve_probes("all")
    assert order.index("unix") == order.index("sockets") + 1  # UNIX stays after the sockstat columns
    assert "unix" not in resolve_probes("all,-unix")


def _watch(stop: threading.Event, seen: dict[str, list[int]]) -> None:
    while not stop.is_set():
        for k, v in reference().items():
            seen.setdefault(k, []).append(v)
        time.sleep(0.002)


@pytest.mark.parametrize(
    ("spec", "batched"), [("sockets,unix", True), ("sockets,unix@500ms", False)], ids=["batched", "unbatched"]
)
def test_run_has_the_old_channel_names_and_the_files_values(tmp_path, spec, batched):
    """Every sampled value lies within the counts a watcher thread read while the run ran. A
    socket opened and closed by another process between two of the watcher's reads may be
    sampled by the run alone: a run with a value outside is made again (3 runs at most); a
    probe reading a wrong row or column falls outside in every run."""
    env = dict(os.environ, REVEAL_LAB_COLLECT_BATCH="1" if batched else "0")
    outside: list = []
    for attempt in range(3):
        out = tmp_path / f"run{attempt}"
        seen: dict[str, list[int]] = {}
        stop = threading.Event()
        watcher = threading.Thread(target=_watch, args=(stop, seen))
        watcher.start()
        try:
            res = run_collect(
                out, "--interval", "100ms", "--duration", "1s", "--probes", spec, "--host", "h", env=env
            )
        finally:
            stop.set()
            watcher.join()
        assert res.returncode == 0, res.stderr
        meta = json.loads((out / "meta.json").read_text())
        assert meta["probes_used"] == ["self", "sockets", "unix"]
        if batched:
            # numba is a dependency: both sockstat files and /proc/net/protocols go through
            # the one compiled read per tick
            assert meta["batch_read_tables"] == (3 if HAS6 else 2)
        else:
            assert meta["probe_every_ticks"] == {"unix": 5}
        frame = read_collector_run(out).frame
        fields = expected_fields()
        cols = [c for c in frame.columns if c.startswith("NetworkProtocolCounts:")]
        assert cols == [f"NetworkProtocolCounts:{f}.h[count]" for f in fields]
        assert frame.height >= 8
        now = []
        for f, c in zip(fields, cols, strict=True):
            vals = frame.get_column(c)
            if f == "UNIX" and not batched:
                # sampled every 5th tick (500 ms), missing on the ticks between
                assert 1 <= vals.drop_nulls().len() <= 3 and vals.null_count() >= frame.height - 3
            else:
                assert vals.null_count() == 0, c
            lo, hi = min(seen[f]), max(seen[f])
            if not vals.drop_nulls().is_between(lo, hi).all():
                now.append((c, lo, hi, vals.to_list()))
        if not now:
            return
        outside.append(now)
    raise AssertionError(
        f"values outside the watched counts in every run (column, low, high, values): {outside}"
    )
