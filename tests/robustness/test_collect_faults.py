"""Collector faults: two collectors into one folder, an existing run, a full disk at start
and mid-run, flags that remove every probe, ``--probes -perf``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reveal_lab.cli import _join_dash_values
from reveal_lab.io import read_collector_run

from .conftest import ROOT, Hang, assert_clean_error, cli, wait_for_file

PROBES = "meminfo,loadavg"  # cheap procfs probes present everywhere


def _start(out: Path, duration: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from reveal_lab.cli import main; sys.exit(main())",
            "collect",
            "--probes",
            PROBES,
            "--out",
            str(out),
            "--duration",
            duration,
            *extra,
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen, limit: float = 60.0) -> tuple[int, str]:
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        proc.communicate()
        raise Hang("collector did not stop") from exc
    return proc.returncode, out + err


def test_second_collector_into_the_same_folder_is_refused(tmp_path):
    out = tmp_path / "run"
    first = _start(out, "60s")
    try:
        wait_for_file(out / "journal-000000.bin", first)
        second = cli("collect", "--probes", PROBES, "--out", str(out), "--duration", "2s")
        assert_clean_error(second, "another collector", f"pid {first.pid}", str(out), rc=1)
    finally:
        first.send_signal(2)  # SIGINT: a clean stop
        rc, text = _finish(first)
    assert rc == 0, text
    run = read_collector_run(out)  # one writer only: every chunk passes its CRC
    assert not [w for w in run.warnings if "CRC" in w or "torn" in w]
    assert json.loads((out / "meta.json").read_text())["status"] == "interrupted"


def test_collect_into_an_existing_run_is_a_message(tmp_path):
    out = tmp_path / "run"
    assert cli("collect", "--probes", PROBES, "--out", str(out), "--duration", "0.3s").rc == 0
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name != ".lock"}
    res = cli("collect", "--probes", PROBES, "--out", str(out), "--duration", "0.3s")
    assert_clean_error(res, "already holds a collector run", str(out), "--out", rc=1)
    assert before == {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name != ".lock"}


def test_collect_out_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    res = cli("collect", "--probes", PROBES, "--out", str(f), "--duration", "1s")
    assert_clean_error(res, str(f), "not a directory")


@pytest.mark.parametrize("spec", ["-all,-self", "-self,-procfs,-cgroup,-perf,-turbostat,-gpu"])
def test_removing_every_probe_is_a_clear_message_and_leaves_no_folder(tmp_path, spec):
    out = tmp_path / "run"
    res = cli("collect", f"--probes={spec}", "--out", str(out), "--duration", "1s")
    assert_clean_error(res, "leaves no probe to run", rc=1)
    assert "{}" not in res.text
    assert not out.exists()


def test_unknown_probe_leaves_no_folder(tmp_path):
    out = tmp_path / "run"
    assert_clean_error(cli("collect", "--probes", "nosuch", "--out", str(out)), "unknown probe", "nosuch")
    assert not out.exists()


def test_probes_value_starting_with_a_dash_parses():
    assert _join_dash_values(["collect", "--probes", "-perf", "--out", "x"]) == [
        "collect",
        "--probes=-perf",
        "--out",
        "x",
    ]
    assert _join_dash_values(["collect", "--probes", "--out", "x"]) == ["collect", "--probes", "--out", "x"]


def test_probes_minus_perf_from_the_help_runs(tmp_path):
    out = tmp_path / "run"
    res = cli("collect", "--probes", "-perf,-turbostat,-gpu,-cgroup", "--out", str(out), "--duration", "0.3s")
    assert res.rc == 0, res.text
    meta = json.loads((out / "meta.json").read_text())
    assert "perf" not in meta["probes_requested"] and "meminfo" in meta["probes_requested"]


def test_disk_full_at_start_exits_3_and_leaves_nothing(small_tmpfs):
    fs = small_tmpfs("64k")
    out = fs / "run"
    res = cli("collect", "--probes", PROBES, "--out", str(out), "--duration", "2s")
    assert_clean_error(res, "disk full", str(out), rc=3)
    assert not out.exists()  # no truncated channels.json, no empty folder


def test_disk_full_mid_run_says_disk_full_in_meta(small_tmpfs):
    fs = small_tmpfs("1m")
    out = fs / "run"
    proc = _start(out, "60s", "--interval", "20ms")
    try:
        wait_for_file(out / "journal-000000.bin", proc)
        while b"RVLC" not in (out / "journal-000000.bin").read_bytes():  # a chunk flushed
            assert proc.poll() is None, _finish(proc)
            time.sleep(0.05)
        with open(fs / "filler", "wb", buffering=0) as f:  # fill the disk under the running collector
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
    finally:
        rc, text = _finish(proc)
    assert rc == 3, text
    assert "disk full" in text and "Traceback" not in text
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "disk-full"
    run = read_collector_run(out)
    assert run.frame.height > 0  # what was synced before is readable
    assert not (out / ".reserve").exists()
