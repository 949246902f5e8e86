"""cgroup v2 probe on a real child cgroup: CPU burnt inside it shows up in its channels."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reveal_lab.collect import ProbeContext, ProbeUnavailable, collect
from reveal_lab.collect.probes._cgroup import Cgroups, default_root, discover
from reveal_lab.io._collector import read_collector_run


def test_missing_root_is_reported(tmp_path):
    with pytest.raises(ProbeUnavailable, match="no cgroup v2 hierarchy"):
        Cgroups().open(ProbeContext(host="h", interval_s=0.1, cgroup_root=str(tmp_path)))


@pytest.mark.root
def test_cpu_burnt_in_a_child_cgroup_is_attributed_to_it(tmp_path):
    root = default_root()
    if os.geteuid() != 0 or root is None:
        pytest.skip("needs root and a cgroup v2 hierarchy")
    base = Path(root) / f"rvl-test-{os.getpid()}"
    try:
        (base / "work").mkdir(parents=True)
        with contextlib.suppress(OSError):  # memory.current for the child, where allowed
            (base / "cgroup.subtree_control").write_text("+memory")
    except OSError as exc:
        pytest.skip(f"cannot create cgroups here: {exc}")
    busy = None
    try:
        assert discover(str(base), 4) == ["work"]
        spin = "import time\nt=time.time()+4\nwhile time.time()<t: pass"
        busy = subprocess.Popen([sys.executable, "-c", spin])
        (base / "work" / "cgroup.procs").write_text(str(busy.pid))
        out = tmp_path / "cg"

        def usage_usec() -> int:
            stat = (base / "work" / "cpu.stat").read_text().split()
            return int(stat[stat.index("usage_usec") + 1])

        before = usage_usec()
        res = collect(
            out,
            interval_s=0.1,
            duration_s=2.0,
            probes="cgroup",
            cgroup_root=str(base),
            host="c",
            handle_signals=False,
        )
        after = usage_usec()
        assert res.probes_used == ["self", "cgroup"], res.probes_skipped
        f = read_collector_run(out).frame
        used_us = f.get_column("Cgroup_diff:cpu_usage_usec.work.c[us]").drop_nulls().sum()
        # the busy child's CPU is attributed to its cgroup: some share of a core, whatever
        # the load (a fair scheduler runs it within 2 s), and no more than the cgroup's own
        # counter moved while the collector ran (its samples lie inside [before, after])
        assert 0 < used_us <= after - before, (used_us, after - before)
        # memory: a Python child holds megabytes (checked only where the memory
        # controller is enabled for the test cgroup; the `or` that stood here was always true)
        mem = f.get_column("Cgroup:memory_current.work.c[Bytes]")
        if (base / "work" / "memory.current").exists():
            assert mem.drop_nulls().len() > 0 and mem.drop_nulls().min() > 1e6, mem
        else:  # no controller: missing values, not zeros
            assert mem.null_count() == mem.len(), mem
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
        for _ in range(50):
            try:
                (base / "work").rmdir()
                base.rmdir()
                break
            except OSError:
                time.sleep(0.1)
