"""Ctrl-C while a command is starting is one line, never a traceback; a collector interrupted
while it opens its probes leaves no folder behind. The SIGINT is real, sent by the process to
itself at a fixed point of the start (an import, the probe opening), so the test does not
depend on timing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import ROOT, TEST_LIMIT_S

#: the CLI with a real SIGINT sent at one point of its start
PROGRAM = """
import importlib, os, signal, sys
point = sys.argv.pop(1)
if point == "import":  # while the command modules load (reveal-lab's first second)
    real = importlib.import_module
    def imp(name, *a, **k):
        if name == "reveal_lab.cli._collect":
            os.kill(os.getpid(), signal.SIGINT)
        return real(name, *a, **k)
    importlib.import_module = imp
else:  # while the collector opens its probes, after it made its folder and lock
    import reveal_lab.collect._collect as loop
    real_open = loop._open_probes
    def opening(*a, **k):
        os.kill(os.getpid(), signal.SIGINT)
        return real_open(*a, **k)
    loop._open_probes = opening
from reveal_lab.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize("point", ["import", "probes"])
def test_ctrl_c_while_collect_starts_is_one_line(tmp_path, point):
    out = tmp_path / "run"
    p = subprocess.run(
        [sys.executable, "-c", PROGRAM, point, "collect", "--out", str(out), "--probes", "procfs",
         "--duration", "5s"],
        capture_output=True,
        text=True,
        timeout=TEST_LIMIT_S - 30,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert p.returncode == 130, p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip() and "INFO" not in ln]
    assert lines == [lines[0]] and "interrupted" in lines[0], p.stderr
    assert not out.exists()  # nothing recorded, nothing left
