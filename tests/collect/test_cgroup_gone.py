"""A cgroup removed while the collector samples it (a container that exits): its files' reads
fail from then on; its channels read as missing, the other cgroups' keep their values, and the
probe stays in the compiled loop instead of sending every later tick back to the interpreted
loop (its files are read as empty files from then on, in the compiled loop's batch and ops as
in Python). The removal is a real failing read: the files' descriptors are replaced by a
directory's (``EISDIR``, as a removed cgroup's files give ``ENODEV``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sampling_helpers import fail_reads, while_sampling
from test_cgroup_probe import _compiled_row

from reveal_lab.collect import MISSING_INT, ProbeContext, collect
from reveal_lab.collect.probes._cgroup import N_PER_GROUP, Cgroups
from reveal_lab.io._collector import read_raw_frame

FILES = {
    "cpu/{c}/cpu.stat": "nr_periods 120\nnr_throttled 37\nthrottled_time 2500000000\n",
    "cpuacct/{c}/cpuacct.usage": "3456789012\n",
    "cpuacct/{c}/cpuacct.stat": "user 250\nsystem 40\n",
    "memory/{c}/memory.usage_in_bytes": "52428800\n",
    "blkio/{c}/blkio.throttle.io_service_bytes": (
        "8:0 Read 4096\n8:0 Write 8192\n8:0 Total 12288\nTotal 12288\n"
    ),
    "blkio/{c}/blkio.throttle.io_serviced": "8:0 Read 2\n8:0 Write 3\n8:0 Total 5\nTotal 5\n",
}
#: ctr_b's channels as the files above give them (cpu usage in us, user/system ticks in us, ...)
CTR_B = [3456789, 2500000, 400000, 120, 37, 2500000, 52428800, 4096, 8192, 2, 3]


def _tree(tmp_path: Path) -> Path:
    """v1 controllers mounted apart with two containers, ``ctr_a`` and ``ctr_b``."""
    for c in ("ctr_a", "ctr_b"):
        for rel, text in FILES.items():
            f = tmp_path / rel.format(c=c)
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.controllers").write_text("\n")
    mounts = tmp_path / "mounts"
    ctrl = ("cpu", "cpuacct", "memory", "blkio")
    mounts.write_text(
        "".join(f"cgroup {tmp_path / c} cgroup rw,relatime,{c} 0 0\n" for c in ctrl)
        + f"cgroup2 {tmp_path / 'unified'} cgroup2 rw,relatime 0 0\n"
    )
    return mounts


def _remove(tmp_path: Path, ctr: str) -> int:
    """Make every open file of ``ctr`` fail to read, as a removed cgroup's do; how many."""
    gone = [str(tmp_path / c / ctr) + "/" for c in ("cpu", "cpuacct", "memory", "blkio")]
    return fail_reads(tmp_path, lambda p: any(p.startswith(g) for g in gone))


def test_a_removed_cgroup_reads_missing_and_leaves_the_compiled_ops(tmp_path):
    mounts = _tree(tmp_path)
    p = Cgroups()
    p.open(ProbeContext(host="h", interval_s=0.1, options={"cgroup_mounts": str(mounts)}))
    try:
        assert p.info["cgroups"] == ["ctr_a", "ctr_b"]
        ints = np.zeros(p.n_int, dtype=np.int64)
        p.sample(ints, np.zeros(0))
        assert ints.tolist() == CTR_B * 2 and p.compiled_ops() is not None
        assert _remove(tmp_path, "ctr_a") == len(FILES)
        p.sample(ints, np.zeros(0))
        assert (ints[:N_PER_GROUP] == MISSING_INT).all()
        assert ints[N_PER_GROUP:].tolist() == CTR_B
        assert all(t.gone == (".ctr_a" in t.path or "/ctr_a/" in t.path) for t in p.tables)
        assert all(t.relayouts == 0 for t in p.tables)
        # the compiled ops go on: the removed cgroup's channels missing, the other's values
        np.testing.assert_array_equal(_compiled_row(p), ints)
        p.sample(ints, np.zeros(0))  # and Python's next read of the emptied files agrees
        assert (ints[:N_PER_GROUP] == MISSING_INT).all() and ints[N_PER_GROUP:].tolist() == CTR_B
    finally:
        p.close()


def test_a_run_goes_on_compiled_after_a_cgroup_is_removed(tmp_path):
    mounts = _tree(tmp_path)
    out = tmp_path / "run"
    with while_sampling(out, lambda: _remove(tmp_path, "ctr_a")) as removed:
        res = collect(
            out, interval_s=0.05, duration_s=1.5, probes="cgroup", host="h", handle_signals=False,
            options={"cgroup_mounts": str(mounts)},
        )  # fmt: skip
    assert removed == [len(FILES)]
    assert res.status == "complete"
    loop = res.meta["hot_loop"]
    if loop["compiled_ticks"]:  # numba present: the compiled loop went on, cgroups in it
        assert loop["python_ticks"] <= 2 and loop["partial_ticks"] == 0, loop
        assert loop["compiled_ticks"] > loop["python_ticks"], loop
    raw, _, channels, _ = read_raw_frame(out)
    names = [c["name"] for c in channels if c["probe"] == "cgroup"]
    a, b = names[:N_PER_GROUP], names[N_PER_GROUP:]
    assert all(".ctr_a." in n for n in a) and all(".ctr_b." in n for n in b)
    first, last = raw.row(0, named=True), raw.row(raw.height - 1, named=True)
    assert [first[n] for n in names] == CTR_B * 2
    assert [last[n] for n in a] == [None] * N_PER_GROUP
    assert [last[n] for n in b] == CTR_B
