"""``watch`` refuses what ``detect`` refuses, and stops, saying why, when its collector is
killed (``kill -9``: meta.json stays "running", the lock names a dead pid) or its run folder
is deleted, instead of polling forever. Real collector processes."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from .conftest import ROOT, Hang, assert_clean_error, cli, wait_for_file

CLI = [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize(
    "flags, needles",
    [
        (("--window", "3s", "--stride", "10s"), ("--stride 10s is longer than --window 3s",)),
        (("--warmup", "1s"), ("--warmup 1s holds 0 complete windows", "--baseline")),
        (("--warmup", "5s"), ("--warmup 5s holds 3 complete windows", "fewer than 20", "22s")),
    ],
)
def test_watch_refuses_what_detect_refuses(tmp_path, flags, needles):
    res = cli("watch", str(tmp_path / "run"), *flags, "--wait", "1s", limit=60)
    assert_clean_error(res, *needles, rc=1)
    assert "watching" not in res.out  # refused before following anything


def _first_line(proc: subprocess.Popen, limit: float = 120) -> str:
    """The child's first stdout line (read on a thread, so a silent child cannot block)."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        return lines.get(timeout=limit)
    except queue.Empty:
        raise Hang(f"{proc.args!r} printed nothing within {limit} s") from None


def _collector(run: Path) -> subprocess.Popen:
    """A real collector writing into ``run`` for up to 2 minutes, once its first journal is there."""
    collector = subprocess.Popen([*CLI, "collect", "--out", str(run), "--probes", "procfs", "--interval", "100ms",
                                  "--duration", "120s"], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for_file(run / "journal-000000.bin", collector, 120)
    return collector


def _collector_and_watch(run: Path) -> tuple[subprocess.Popen, subprocess.Popen]:
    collector = _collector(run)
    watcher = subprocess.Popen([*CLI, "watch", str(run)], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    assert _first_line(watcher).startswith(f"watching {run}")
    return collector, watcher


def _end(watcher: subprocess.Popen, limit: float = 60) -> tuple[str, str]:
    try:
        return watcher.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        raise Hang(f"watch still polling {limit} s after its collector was gone") from None


def _stop(*procs: subprocess.Popen) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(30)


def test_watch_stops_when_its_collector_is_killed(tmp_path):
    run = tmp_path / "run"
    collector, watcher = _collector_and_watch(run)
    try:
        collector.send_signal(signal.SIGKILL)
        collector.wait(30)
        assert '"running"' in (run / "meta.json").read_text()  # the state the issue describes
        out, err = _end(watcher)
    finally:
        _stop(collector, watcher)
    text = out + err
    assert "Traceback" not in text
    assert f"collector (pid {collector.pid}) is no longer running" in text and "kill -9" in text
    assert "everything it wrote was read" in text


def test_watch_stops_when_the_run_folder_is_deleted(tmp_path):
    run = tmp_path / "run"
    collector, watcher = _collector_and_watch(run)
    try:
        shutil.rmtree(run)
        out, err = _end(watcher)
    finally:
        _stop(collector, watcher)
    assert "Traceback" not in out + err
    assert "the run folder was deleted while it was watched" in out + err


def test_a_folder_deleted_right_after_watching_is_named_deleted(tmp_path):
    """The folder goes the moment "watching" is said, before the first poll (the race CI
    met): named as deleted, not as a run that never started."""
    from reveal_lab.live import watch

    run = tmp_path / "run"
    collector = _collector(run)
    said: list[str] = []

    def echo(msg: str) -> None:
        said.append(msg)
        if msg.startswith("watching"):
            shutil.rmtree(run)

    try:
        summary = watch(run, wait_s=1.0, duration_s=60, echo=echo)
    finally:
        _stop(collector)
    assert summary.stopped == "the run folder was deleted while it was watched", said


def test_a_pruned_space_the_stream_lacks_advises_a_flag_that_exists():
    from reveal_lab.cli import build_parser
    from reveal_lab.live import LiveDetector
    from reveal_lab.pipeline import POLICIES, Pruning
    from reveal_lab.telemetry import TelemetryError

    det = LiveDetector(policy=POLICIES["default"].with_(prune=Pruning(["nosuch:metric"], {}, {})))
    with pytest.raises(TelemetryError) as exc:
        det._selected(["timestamp", "cpu:user.h1"])
    assert "prune=False" not in str(exc.value) and "watch --no-prune" in str(exc.value)
    assert build_parser().parse_args(["watch", "run", "--no-prune"]).prune is False
