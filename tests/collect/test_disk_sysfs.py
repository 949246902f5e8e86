"""The ``diskstats`` probe's counters read per tick from each disk's ``/sys/block/<disk>/stat``
(where ``/proc/diskstats`` has three rows or more per disk read): the same channels, in the same
order, with the same values as read from ``/proc/diskstats``, on a tree written here (loop, ram
and partition rows beside two disks, one of them with counters wider than their columns), in
the compiled loop and the interpreted one; ``/proc/diskstats`` read where a disk's ``stat``
is missing or lacks a field; a disk removed while sampled (its ``stat`` failing to read) missing
from then on, the other disk's values kept, the compiled loop going on."""

from __future__ import annotations

import numpy as np
import pytest
from sampling_helpers import fail_reads, while_sampling

from reveal_lab.collect import ProbeContext, collect
from reveal_lab.collect.probes._disk import DISK_FIELDS, DiskStats
from reveal_lab.io._collector import read_raw_frame

DISKS = {
    "nvme0n1": [int(v) for v in np.arange(17) * 1_000_000_007 + 7],
    "vda": [1902445, 91842, 71296474, 5691129, 825514, 1297167, 337207560, 1302486, 0, 432836,
            7145990, 907791, 253, 283596656, 123210, 143914, 29163],  # fmt: skip
}
OTHERS = ["loop0", "loop1", "loop2", "nvme0n1p1", "nvme0n1p2", "ram0", "zram0"]


def _row(major: int, minor: int, name: str, vals: list[int]) -> str:
    return f"{major:4d} {minor:7d} {name} " + " ".join(str(v) for v in vals)


def _tree(tmp_path, disks=DISKS, step=0, stat_fields=17):
    """``proc/diskstats`` and ``sys/block/<disk>/stat`` of ``disks`` (values plus ``step``)."""
    proc, sys_ = tmp_path / "proc", tmp_path / "sys"
    rows = [_row(7, i, d, [0] * 17) for i, d in enumerate(OTHERS)]
    for i, (d, vals) in enumerate(disks.items()):
        v = [x + step for x in vals]
        rows.insert(2 + i, _row(254, 16 * i, d, v))
        blk = sys_ / "block" / d
        blk.mkdir(parents=True, exist_ok=True)
        (blk / "stat").write_text("".join(f"{x:8d} " for x in v[:stat_fields]).rstrip() + "\n")
    proc.mkdir(exist_ok=True)
    (proc / "diskstats").write_text("\n".join(rows) + "\n")
    return str(proc), str(sys_)


def _probe(proc, sys_):
    p = DiskStats()
    p.open(ProbeContext("h", 0.1, proc_root=proc, sys_root=sys_))
    return p


def _sample(p):
    v = np.zeros(p.n_int, np.int64)
    p.sample(v, np.zeros(0))
    return v.tolist()


def _expected(step=0):
    return [x + step for d in sorted(DISKS) for x in DISKS[d]]


def test_sysfs_gives_the_channels_and_values_of_proc_diskstats(tmp_path):
    proc, sys_ = _tree(tmp_path)
    p = _probe(proc, sys_)
    try:
        assert p.info["source"] == "/sys/block/<disk>/stat"
        assert [t.path for t in p.own_tables()] == [f"{sys_}/block/{d}/stat" for d in sorted(DISKS)]
        names = [(c.field, c.instance) for c in p.channels]
        assert names == [(f, d) for d in sorted(DISKS) for f, _, _ in DISK_FIELDS]
        assert _sample(p) == _expected()
        _tree(tmp_path, step=5)  # the counters move: read again, same layout
        assert _sample(p) == _expected(5)
        assert all(t.relayouts == 0 for t in p.own_tables())
    finally:
        p.close()
    # the same tree without the sysfs files: /proc/diskstats, the same channels and values
    for d in DISKS:
        (tmp_path / "sys" / "block" / d / "stat").unlink()
    q = _probe(proc, sys_)
    try:
        assert q.info["source"] == "/proc/diskstats"
        assert [(c.field, c.instance) for c in q.channels] == names
        assert _sample(q) == _expected(5)
    finally:
        q.close()


def test_proc_diskstats_where_a_stat_file_lacks_fields(tmp_path):
    proc, sys_ = _tree(tmp_path, stat_fields=11)
    p = _probe(proc, sys_)
    try:
        assert p.info["source"] == "/proc/diskstats"
        assert len(p.channels) == 34 and _sample(p) == _expected()
    finally:
        p.close()


def test_proc_diskstats_where_it_has_few_rows_per_disk(tmp_path):
    proc, sys_ = _tree(tmp_path)
    (tmp_path / "proc" / "diskstats").write_text(
        "\n".join(_row(254, 16 * i, d, v) for i, (d, v) in enumerate(DISKS.items())) + "\n"
    )
    p = _probe(proc, sys_)
    try:
        assert p.info["source"] == "/proc/diskstats"
        assert _sample(p) == _expected()
    finally:
        p.close()


@pytest.mark.parametrize("burst", ["1", "0"])
def test_a_run_records_the_sysfs_values(tmp_path, monkeypatch, burst):
    monkeypatch.setenv("REVEAL_LAB_COLLECT_BURST", burst)
    proc, sys_ = _tree(tmp_path)
    res = collect(
        tmp_path / "run", interval_s=0.05, duration_s=0.3, probes="diskstats", host="h", proc_root=proc,
        sys_root=sys_, handle_signals=False,
    )  # fmt: skip
    assert res.meta["probe_info"]["diskstats"]["source"] == "/sys/block/<disk>/stat"
    if burst == "1":
        assert res.meta["hot_loop"]["compiled_ticks"] > 0
    raw, _, channels, _ = read_raw_frame(tmp_path / "run")
    p = _probe(proc, sys_)
    names = [c.name("h") for c in p.channels]
    p.close()
    assert [c["name"] for c in channels if c["probe"] == "diskstats"] == names
    assert raw.height > 0
    assert raw.select(names).rows() == [tuple(_expected())] * raw.height


def test_a_removed_disk_reads_missing_and_the_others_keep_their_values(tmp_path):
    proc, sys_ = _tree(tmp_path)
    out = tmp_path / "run"
    stat = f"{sys_}/block/nvme0n1/stat"
    with while_sampling(out, lambda: fail_reads(tmp_path, lambda p: p == stat)) as failed:
        res = collect(
            out, interval_s=0.05, duration_s=1.5, probes="diskstats", host="h", proc_root=proc, sys_root=sys_,
            handle_signals=False,
        )  # fmt: skip
    assert failed == [1] and res.status == "complete"
    assert res.meta["probe_errors"] == {}
    loop = res.meta["hot_loop"]
    if loop["compiled_ticks"]:  # numba present: one interpreted tick, then compiled again
        assert loop["python_ticks"] <= 2 and loop["compiled_ticks"] > loop["python_ticks"], loop
    raw, _, channels, _ = read_raw_frame(out)
    names = [c["name"] for c in channels if c["probe"] == "diskstats"]
    assert raw.select(names).row(0) == tuple(_expected())
    assert raw.select(names).row(raw.height - 1) == (None,) * len(DISK_FIELDS) + tuple(DISKS["vda"])
