"""ChildLines: the long-lived child reader shared by the perf, turbostat and nvidia-smi
probes, against real child processes."""

from __future__ import annotations

import sys
import time

import pytest

from reveal_lab.collect.probes._child import ChildLines

SCRIPT = r"""
import sys, time
out = getattr(sys, sys.argv[1])
out.write("one\ntw"); out.flush()
time.sleep(0.4)
out.write("o\nthree\n"); out.flush()
time.sleep(0.4)
"""


def _collect(child, seconds):
    got = []
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end and not child.eof:
        got += child.lines()
        time.sleep(0.02)
    return got


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_complete_lines_only_then_eof(stream):
    child = ChildLines([sys.executable, "-c", SCRIPT, stream], stream=stream)
    try:
        first = []
        t_end = time.monotonic() + 20
        while not first and time.monotonic() < t_end:
            first = child.lines()
            time.sleep(0.02)
        assert first == [b"one"]  # "tw" waits for the rest of its line
        rest = _collect(child, 20)
        assert rest == [b"two", b"three"]
        assert child.eof and child.lines() == []
    finally:
        child.stop()
    assert child.proc.poll() is not None


def test_stop_terminates_a_child_that_keeps_running():
    child = ChildLines([sys.executable, "-c", "import time\nwhile True: time.sleep(1)"])
    assert child.lines() == [] and not child.eof  # nothing yet, and no blocking read
    child.stop(timeout=5)
    assert child.proc.returncode is not None


def test_bad_stream_is_refused():
    with pytest.raises(ValueError, match="stdout"):
        ChildLines(["true"], stream="both")
