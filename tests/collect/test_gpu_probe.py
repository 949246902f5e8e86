"""GPU probe: parsers against the bundled nvidia-smi / NVML samples (data/fixtures/gpu,
hand-written, see its README), the long-lived nvidia-smi child path replaying that
sample, and the probe reported as skipped where there is no GPU."""

from __future__ import annotations

import json
import math
import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from reveal_lab.collect import ProbeContext, ProbeUnavailable, collect
from reveal_lab.collect.probes._gpu import (
    GPU_FIELDS,
    NVML_EXTRA,
    Gpu,
    nvml_values,
    parse_smi_line,
    smi_command,
)
from reveal_lab.config import fixtures_dir
from reveal_lab.io._collector import read_collector_run

FIX = fixtures_dir() / "gpu"
FIELDS = [f for f, _, _ in GPU_FIELDS]


def _sample_lines() -> list[str]:
    return [
        ln
        for ln in (FIX / "nvidia-smi-query-gpu.csv").read_text().splitlines()
        if ln and not ln.startswith("#")
    ]


def test_fixture_matches_the_probe_query():
    first = (FIX / "nvidia-smi-query-gpu.csv").read_text().splitlines()[0]
    assert first == "# query: " + ",".join(["index", *FIELDS])
    assert smi_command(0.1)[1] == "--query-gpu=" + ",".join(["index", *FIELDS])


def test_parse_smi_lines():
    rows = [parse_smi_line(ln, len(FIELDS)) for ln in _sample_lines()]
    assert [r[0] for r in rows] == [0, 1, 0, 1, 0, 1]
    busy0 = dict(zip(FIELDS, rows[2][1], strict=True))
    assert busy0["utilization.gpu"] == 87 and busy0["power.draw"] == 512.47 and busy0["memory.used"] == 30245
    assert math.isnan(busy0["retired_pages.single_bit_ecc.count"])
    last1 = dict(zip(FIELDS, rows[5][1], strict=True))
    assert last1["clocks_throttle_reasons.active"] == 4.0  # 0x...04: SW power cap
    assert (last1["pcie.link.gen.current"], last1["pcie.link.width.current"]) == (4, 8)
    assert parse_smi_line("0, 1, 2", len(FIELDS)) is None  # wrong field count
    assert parse_smi_line("GPU 0: H100", len(FIELDS)) is None


def test_nvml_values_convert_units():
    sample = json.loads((FIX / "nvml-readings.json").read_text())
    vals = dict(zip([f for f, _, _ in GPU_FIELDS + NVML_EXTRA], nvml_values(sample["gpu0"]), strict=True))
    for k, want in sample["expected_channels"].items():
        assert vals[k] == pytest.approx(want), k
    assert math.isnan(vals["retired_pages.single_bit_ecc.count"])


def test_gpu_probe_is_skipped_without_a_gpu():
    p = Gpu()
    try:
        p.open(ProbeContext(host="h", interval_s=0.1))
    except ProbeUnavailable as exc:
        assert str(exc)  # a reason, e.g. "NVML init failed: ...; nvidia-smi is not installed"
    else:
        p.close()
        pytest.skip("this machine has a GPU: the probe opened")


FAKE_SMI = textwrap.dedent('''\
    #!{python}
    """Replays data/fixtures/gpu/nvidia-smi-query-gpu.csv like nvidia-smi --loop-ms (test double)."""
    import sys, time
    fix = {fixture!r}
    text = open(fix).read().splitlines()
    query = text[0].split(": ", 1)[1]
    names = [p.split("=", 1)[1] for p in text[1].split(" ; ")[1].split(": ", 1)[1].split(", ")]
    rows = [ln for ln in text if ln and not ln.startswith("#")]
    args = dict(a.split("=", 1) if "=" in a else (a, "") for a in sys.argv[1:])
    q = args.get("--query-gpu", "")
    if q == "index,name":
        for i, n in enumerate(names):
            print(f"{{i}}, {{n}}")
        sys.exit(0)
    bad = [f for f in q.split(",") if f not in query.split(",")]
    if bad:
        print(f'Field "{{bad[0]}}" is not a valid field to query.', file=sys.stderr)
        sys.exit(2)
    if "--loop-ms" not in args:
        print("\\n".join(rows[:2]))
        sys.exit(0)
    period = int(args["--loop-ms"]) / 1000
    k = 0
    while True:
        for ln in rows[2 * (k % 3): 2 * (k % 3) + 2]:
            print(ln, flush=True)
        k += 1
        time.sleep(period)
''')


def test_nvidia_smi_child_path_replaying_the_sample(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text(FAKE_SMI.format(python=sys.executable, fixture=str(FIX / "nvidia-smi-query-gpu.csv")))
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "run"
    res = collect(
        out,
        interval_s=0.1,
        duration_s=1.5,
        probes="gpu",
        host="g1",
        gpu_backend="nvidia-smi",
        handle_signals=False,
    )
    assert res.probes_used == ["self", "gpu"], res.probes_skipped
    assert res.meta["gpu_models"] == ["NVIDIA H100 80GB HBM3"] * 2
    f = read_collector_run(out).frame
    util = f.get_column("GPU: utilization.gpu.0.g1[%]").drop_nans().drop_nulls()
    # the replay cycles idle (0), busy (87) and full (100) intervals
    assert set(util.to_list()) <= {0.0, 87.0, 100.0} and {87.0, 100.0} & set(util.to_list())
    power1 = set(f.get_column("GPU: power.draw.1.g1[W]").drop_nans().to_list())
    assert power1 <= {69.80, 538.06, 700.01} and len(power1) >= 2
    assert "GPU: clocks_throttle_reasons.active.0.g1[-]" in f.columns
    assert Path(out / "meta.json").exists()
