"""turbostat parser (turbostat is not installed on the CI machines: the probe is skipped
there, see test_collect). The block below is hand-written in the layout of
``turbostat --quiet --interval 1`` (tab separated, a summary row with ``-``), not
recorded."""

from __future__ import annotations

import shutil

import pytest

from reveal_lab.collect import ProbeContext, ProbeUnavailable
from reveal_lab.collect.probes._turbostat import Turbostat, parse_turbostat_block

BLOCK = """\
Core\tCPU\tAvg_MHz\tBusy%\tBzy_MHz\tTSC_MHz\tIPC\tIRQ\tSMI\tC1%\tCPU%c6\tCoreTmp\tPkgTmp\tPkgWatt\tRAMWatt
-\t-\t1203\t41.20\t2920\t2400\t1.31\t5120\t0\t10.50\t48.10\t61\t64\t182.40\t21.70
0\t0\t2890\t99.10\t2916\t2400\t1.05\t2600\t0\t0.00\t0.80\t63\t64\t182.40\t21.70
1\t1\t12\t0.40\t2850\t2400\t0.52\t12\t0\t1.10\t98.40\t58
"""


def test_parse_block():
    head, vals = parse_turbostat_block(BLOCK.splitlines())
    assert head[:3] == ["Core", "CPU", "Avg_MHz"]
    assert vals[("Busy%", "-")] == 41.20 and vals[("Bzy_MHz", "0")] == 2916
    assert (
        vals[("PkgWatt", "-")] == 182.40 and ("PkgWatt", "1") not in vals
    )  # package columns only on one row
    assert ("Core", "0") not in vals and ("CPU", "-") not in vals  # identifiers are not values


def test_probe_reports_why_it_cannot_run():
    if shutil.which("turbostat"):
        pytest.skip("turbostat is installed here")
    with pytest.raises(ProbeUnavailable, match="turbostat"):
        Turbostat().open(ProbeContext(host="h", interval_s=0.1))
