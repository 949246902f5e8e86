"""cgroup v2 probe on a real child cgroup: CPU burnt inside it shows up in its channels."""

from __future__ import annotations

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
    except OSError as exc:
        pytest.skip(f"cannot create cgroups here: {exc}")
    busy = None
    try:
        assert discover(str(base), 4) == ["work"]
        spin = "import time\nt=time.time()+4\nwhile time.time()<t: pass"
        busy = subprocess.Popen([sys.executable, "-c", spin])
        (base / "work" / "cgroup.procs").write_text(str(busy.pid))
        out = tmp_path / "cg"
        res = collect(
            out,
            interval_s=0.1,
            duration_s=2.0,
            probes="cgroup",
            cgroup_root=str(base),
            host="c",
            handle_signals=False,
        )
        assert res.probes_used == ["self", "cgroup"], res.probes_skipped
        f = read_collector_run(out).frame
        used_us = f.get_column("Cgroup_diff:cpu_usage_usec.work.c[us]").drop_nulls().sum()
        # a busy loop gets a large share of a core over the 2 s (the machine may be shared)
        assert used_us > 0.2 * 1e6, used_us
        assert "Cgroup:memory_current.work.c[Bytes]" in f.columns or res.meta["probe_info"]["cgroup"]
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
