"""The per-core tables re-read only the rows whose bytes changed since the last tick
(``Table(changed_rows=True)``, the batch's ``rows_scan``): on a synthetic host whose counters
move as a real host's do (``ProcTreeMover``), and through rows appearing and vanishing, a
label changing, a CPU going offline, a count outgrowing its column and random corruptions,
every read gives the values and the layout signature of a scan of the whole file, in a
table whose batch writes the row itself (the row blanked between reads) and in one that
hands its values on."""

from __future__ import annotations

import numpy as np
import pytest

from reveal_lab.collect import MISSING_INT, ProbeContext, write_proc_tree
from reveal_lab.collect._proctree import ProcTreeMover
from reveal_lab.collect.probes._irq import PERCPU_MODE, _percpu_index
from reveal_lab.collect.probes._table import Table, TableBatch

pytest.importorskip("numba")
from reveal_lab.collect.probes import _scan  # noqa: E402


def _drop_last_column(data: bytes) -> bytes:
    """The file after its last CPU went offline: the header's last name and each row's last
    count gone."""
    lines = data.split(b"\n")
    ncpu = len(lines[0].split())
    out = [lines[0][: lines[0].rindex(b"CPU")].rstrip()]
    for line in lines[1:]:
        colon = line.find(b":")
        toks = line[colon + 1 :].split()
        if colon < 0 or len(toks) < ncpu:
            out.append(line)
            continue
        cut = colon + 1 + 11 * ncpu
        out.append(line[: cut - 11] + line[cut:])
    return b"\n".join(out)


def _with_device_row(data: bytes, irq: int) -> bytes:
    lines = data.split(b"\n")
    ncpu = len(lines[0].split())
    row = (
        b"%4d:" % irq + b"".join(b" %10d" % (7 * c) for c in range(ncpu)) + b"  PCI-MSI 12345-edge      eth9"
    )
    at = (
        max((i for i, ln in enumerate(lines) if ln.split(b":")[0].strip().isdigit()), default=len(lines) - 2)
        + 1
    )
    return b"\n".join([*lines[:at], row, *lines[at:]])


def _events(data: bytes, rng: np.random.Generator) -> list[bytes]:
    """Versions of a per-core file that change its layout or break its columns."""
    out = [_with_device_row(data, 999), data]  # a device appears, then goes again
    out.append(data.replace(b"nvme0q3", b"nvme1q3", 1).replace(b"SCHED", b"SCHEX", 1))  # same length
    lines = data.split(b"\n")
    k = len(lines) // 2
    wide = lines[k][: lines[k].index(b":") + 1] + b" 12345678901" + lines[k][lines[k].index(b":") + 12 :]
    out.append(b"\n".join([*lines[:k], wide, *lines[k + 1 :]]))  # a count outgrows its column
    out.append(data)
    out.append(_drop_last_column(data))  # a CPU offline
    out.append(data)
    d = bytearray(data)
    for _ in range(30):  # random corruptions, one after the other
        d[int(rng.integers(0, len(d)))] = int(rng.choice(list(b" 0123456789a:\n\t-")))
        out.append(bytes(d))
    out += [data, data[: len(data) // 2], data]  # cut short, then whole again
    return out


@pytest.mark.parametrize("cores", [16, 192])
@pytest.mark.parametrize("name", ["interrupts", "softirqs"])
def test_changed_rows_read_what_a_whole_scan_reads(tmp_path, cores, name):
    proc, sys_ = write_proc_tree(tmp_path, cores)
    path = proc / name
    ctx = ProbeContext("h", 0.1, proc_root=str(proc), sys_root=str(sys_))
    tables = [Table(ctx, str(path), _percpu_index, colons=PERCPU_MODE, changed_rows=True) for _ in range(2)]
    n = tables[0].n
    row = np.full(n, MISSING_INT, np.int64)
    direct = TableBatch.create([tables[0]], row, [0], [True])  # into the row
    handed = TableBatch.create([tables[1]])  # values handed on
    assert direct is not None and handed is not None
    assert direct.colons[0] & 32 and handed.colons[0] & 32
    ref = np.full(n, MISSING_INT, np.int64)  # a whole scan's values, kept between reads as the batch's
    rng = np.random.default_rng(cores)
    partial = 0

    def check(what: str) -> None:
        nonlocal partial
        data = path.read_bytes()
        row[:] = MISSING_INT  # the loop may blank a direct table's slice between ticks
        direct.run()
        handed.run()
        t = tables[0]
        sig = _scan.scan(np.frombuffer(data, np.uint8), t._want, t._dest, ref, t.mode)
        for b, values in ((direct, row), (handed, handed.out)):
            if b.sigs[0] == 0:  # the file outgrew the buffer: the table reads it itself
                assert len(data) >= t.hint, what
                continue
            assert b.sigs[0] == sig, what
            assert values.tolist() == ref.tolist(), what
        partial += int(direct.cst[0, 0] > 0)

    check("first read")
    mover = ProcTreeMover(proc, seed=cores)
    for k in range(8):  # counters move as on a host: some rows each tick
        assert mover.step() > 0
        check(f"tick {k}")
    check("nothing changed")
    mover.close()
    base = path.read_bytes()
    for k, data in enumerate(_events(base, rng)):
        path.write_bytes(data)
        check(f"event {k}")
    assert partial > 0


def test_a_moving_tree_changes_only_some_rows(tmp_path):
    proc, _ = write_proc_tree(tmp_path, 64)
    before = [(proc / f).read_bytes().split(b"\n") for f in ("interrupts", "softirqs")]
    m = ProcTreeMover(proc, seed=3)
    m.step()
    m.close()
    after = [(proc / f).read_bytes().split(b"\n") for f in ("interrupts", "softirqs")]
    for b, a in zip(before, after, strict=True):
        assert len(a) == len(b) and [len(x) for x in a] == [len(x) for x in b]
        changed = {x.split(b":")[0].strip() for x, y in zip(b, a, strict=True) if x != y}
        assert {b"LOC", b"CAL"} <= changed or {b"SCHED", b"TIMER"} <= changed
        assert len(changed) < len(b) // 2  # most rows keep their bytes
