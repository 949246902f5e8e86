"""The collector on synthetic hosts of many cores (``write_proc_tree``, read through
``proc_root``/``sys_root``): the per-core tables' column-at-a-time scan (mode
``FIXED_WIDTH``) against the byte-by-byte one (mode 0, compiled and pure Python) on 16- and
192-core files and on seeded corruptions of them; the channels and values of ``/proc/stat``,
``/proc/interrupts`` and ``/proc/softirqs`` of 16- and 192-core files, in the compiled
loop and the interpreted one, against a label-by-label reading of the same text written
here; the per-core sums of the device IRQs (one ``OP_COLSUM`` per core) against the ops
they replace (``OP_ZERO`` then one ``OP_ADD`` per row and core). (A numba cache filled on this
host serving a start on a host of other cores is ``test_deferred_start.py``'s, on the cache its
cold start fills.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reveal_lab.collect import MISSING_INT, ProbeContext, collect, write_proc_tree
from reveal_lab.collect._probe import OP_ADD, OP_COPY, OP_ZERO, apply_ops_py
from reveal_lab.collect._proctree import per_core_files
from reveal_lab.collect.probes import _scan
from reveal_lab.collect.probes._cpu import CPU_FIELDS
from reveal_lab.collect.probes._irq import Interrupts
from reveal_lab.io import read_collector_run

H = "h"


def expected_values(files: dict[str, bytes]) -> dict[str, int]:
    """Channel name -> value, read label by label from the files' text."""
    out: dict[str, int] = {}
    for line in files["stat"].decode().splitlines():
        toks = line.split()
        if toks[0].startswith("cpu"):
            inst = "-" if toks[0] == "cpu" else toks[0][3:]
            for f, v in zip(CPU_FIELDS, toks[1:], strict=False):
                out[f"CPU:{f}.{inst}.{H}[jiffies]"] = int(v)
        elif toks[0] in ("intr", "ctxt", "processes", "procs_running", "procs_blocked"):
            out[f"CPU:{toks[0]}.{H}[count]"] = int(toks[1])
    lines = files["interrupts"].decode().splitlines()
    ncpu = len(lines[0].split())
    devices = np.zeros(ncpu, dtype=np.int64)
    for line in lines[1:]:
        label, rest = line.split(":", 1)
        label = label.strip()
        vals = [int(t) for t in rest.split()[:ncpu] if t.isdigit()]
        if label.isdigit():
            devices += np.array(vals[:ncpu])
        else:
            for c, v in enumerate(vals[:ncpu]):
                out[f"Interrupts:{label}.{c}.{H}[count]"] = v
    for c in range(ncpu):
        out[f"Interrupts:devices.{c}.{H}[count]"] = int(devices[c])
    for line in files["softirqs"].decode().splitlines()[1:]:
        label, rest = line.split(":", 1)
        for c, v in enumerate(rest.split()):
            out[f"Softirqs:{label.strip()}.{c}.{H}[count]"] = int(v)
    return out


def _scan_all(data: bytes, want: np.ndarray) -> list[tuple[int, list[int]]]:
    """The signature and values of each scanner on ``data``: compiled in modes 0 and
    FIXED_WIDTH, pure Python in mode FIXED_WIDTH."""
    buf = np.frombuffer(data, np.uint8)
    dest = np.arange(want.size, dtype=np.int64)
    out = []
    for fn, mode in ((_scan.scan, 0), (_scan.scan, _scan.FIXED_WIDTH), (_scan.scan_py, _scan.FIXED_WIDTH)):
        values = np.full(want.size, -7, dtype=np.int64)
        out.append((int(fn(buf, want, dest, values, mode)), values.tolist()))
    return out


@pytest.mark.parametrize("cores", [16, 192])
def test_the_column_scan_equals_the_byte_scan(cores):
    pytest.importorskip("numba")
    rng = np.random.default_rng(cores)
    for name in ("interrupts", "softirqs", "stat"):
        text = per_core_files(cores)[name]
        variants = [text]
        for _ in range(40):  # corrupted and cut copies: wider numbers, glued columns, labels, signs
            d = bytearray(text)
            for _ in range(int(rng.integers(1, 6))):
                d[int(rng.integers(0, len(d)))] = int(rng.choice(list(b" 0123456789a:\n\t-")))
            hi = int(rng.integers(0, len(d) + 1))
            variants.append(bytes(d[int(rng.integers(0, hi + 1)) : hi]))
        for data in variants:
            toks = data.split()
            numeric = [i for i, t in enumerate(toks) if t[:1].isdigit() or t[:1] == b"-" and t[1:2].isdigit()]
            for want in (numeric, numeric[::7]):
                a, b, c = _scan_all(data, np.array(want, dtype=np.int64))
                assert a == b == c, (name, data[:120])


def _run(tmp: Path, cores: int, name: str) -> dict[str, np.ndarray]:
    proc, sys_ = write_proc_tree(tmp / f"tree-{cores}", cores)
    run = tmp / name
    collect(run, interval_s=0.05, duration_s=0.4, probes="cpu,interrupts,softirqs", host=H,
            proc_root=str(proc), sys_root=str(sys_), handle_signals=False)  # fmt: skip
    f = read_collector_run(run, view="raw").frame
    return {c: f[c].to_numpy() for c in f.columns if not c.startswith(("Collector:", "timestamp"))}


@pytest.mark.parametrize("cores", [16, 192])
@pytest.mark.slow
def test_channels_and_values_match_the_text(tmp_path, monkeypatch, cores):
    want = expected_values(per_core_files(cores))
    compiled = _run(tmp_path, cores, "compiled")
    monkeypatch.setenv("REVEAL_LAB_COLLECT_BURST", "0")
    monkeypatch.setenv("REVEAL_LAB_COLLECT_BATCH", "0")
    interpreted = _run(tmp_path, cores, "interpreted")
    assert set(compiled) == set(want) == set(interpreted)
    assert len([c for c in want if c.startswith("Interrupts:devices.")]) == cores
    for name, value in want.items():
        assert (compiled[name] == value).all(), name  # every sample: the files do not change
        assert (interpreted[name] == value).all(), name


@pytest.mark.parametrize("cores", [16, 192])
def test_device_sums_equal_the_per_row_ops(tmp_path, cores):
    proc, sys_ = write_proc_tree(tmp_path, cores)
    p = Interrupts()
    p.open(ProbeContext(H, 0.1, proc_root=str(proc), sys_root=str(sys_)))
    try:
        values = p.table.values()
        nn, ncpu = p.n_named, p.ncpu
        rows = (p.table.n - nn) // ncpu
        old = [(0, OP_COPY, i, 0, i, 1) for i in range(nn)]
        old += [(0, OP_ZERO, 0, 0, nn + c, 1) for c in range(ncpu)]
        old += [(0, OP_ADD, nn + r * ncpu + c, 0, nn + c, 1) for r in range(rows) for c in range(ncpu)]
        a, b, c = (np.full(p.n_int, MISSING_INT, dtype=np.int64) for _ in range(3))
        apply_ops_py(old, [values], a, np.zeros(0))
        new = p.compiled_ops()
        assert len(new) == nn + ncpu
        apply_ops_py(new, [values], b, np.zeros(0))
        p.sample(c, np.zeros(0))  # the Python path: a numpy sum over the rows
        assert (a == b).all() and (a == c).all()
        pytest.importorskip("numba")
        from reveal_lab.collect import _burst

        cols = np.array(new, dtype=np.int64)
        d = np.full(p.n_int, MISSING_INT, dtype=np.int64)
        poff = np.array([0, len(new)], dtype=np.int64)
        op_cols = (np.ascontiguousarray(cols[:, i]) for i in range(1, 6))
        _burst.apply_ops(0, 0, poff, *op_cols, values, d, np.zeros(1))
        assert (a == d).all()
    finally:
        p.close()
