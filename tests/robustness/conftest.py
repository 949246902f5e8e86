"""Shared pieces of the adversarial suite: a watchdog per test, the CLI in a
subprocess with a wall-clock limit, a hub that accepts connections and never
answers, and a small tmpfs for full-disk cases."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

#: no test of this suite may run longer than this (seconds): a hang fails, never blocks
TEST_LIMIT_S = 180
#: one CLI call
CLI_LIMIT_S = 120
ROOT = Path(__file__).resolve().parents[2]


class Hang(AssertionError):
    """A test ran past its watchdog."""


@pytest.fixture(autouse=True)
def watchdog() -> Iterator[None]:
    """``signal.alarm``: a test blocked in Python (a socket read, a FIFO open) is
    interrupted and fails instead of hanging the suite."""

    def on_alarm(signum, frame):  # noqa: ANN001, ARG001
        raise Hang(f"test ran longer than {TEST_LIMIT_S} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TEST_LIMIT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Result:
    rc: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def cli(
    *args: str, env: dict[str, str] | None = None, limit: float = CLI_LIMIT_S, cwd: Path | None = None
) -> Result:
    """``reveal-lab ARGS`` in a subprocess; a hang past ``limit`` fails the test."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    try:
        p = subprocess.run(
            [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())", *args],
            capture_output=True,
            text=True,
            timeout=limit,
            env=full_env,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired as exc:
        raise Hang(f"reveal-lab {' '.join(args)} still running after {limit} s") from exc
    return Result(p.returncode, p.stdout, p.stderr)


def in_process(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    """``reveal-lab ARGS`` called in this process (``main``), what it printed captured by
    ``capsys``: for a test of what a command says or writes, not of its process (the command's
    own refusals before its imports are tested through :func:`cli`)."""
    from reveal_lab.cli import main

    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    return Result(rc, out, err)


def wait_for_file(path: Path, proc: subprocess.Popen, limit: float = 60.0) -> None:
    """Wait until ``path`` exists (a child process got that far); fails when the child ends
    first, and as a hang (the child killed) after ``limit`` seconds."""
    import time

    end = time.monotonic() + limit
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args!r} ended before {path} appeared: {proc.communicate()}")
        if time.monotonic() > end:
            proc.kill()
            raise Hang(f"{path} did not appear within {limit} s")
        time.sleep(0.05)


def assert_clean_error(res: Result, *needles: str, rc: int | None = None) -> None:
    """A message, not a traceback, naming what it should."""
    assert "Traceback" not in res.text, res.text
    if rc is not None:
        assert res.rc == rc, res.text
    else:
        assert res.rc != 0, res.text
    for n in needles:
        assert n in res.text, f"{n!r} not in:\n{res.text}"


def copy_lab_runs(meta, root: Path) -> Path:  # noqa: ANN001 - rows of meta_lab.csv
    """The bundled lab dataset's runs of ``meta`` and those rows as ``root/meta_lab.csv``."""
    from reveal_lab.config import data_dir

    for sf in meta["source_file"]:
        rel = sf.removeprefix("./")
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(data_dir() / rel, root / rel)
    meta.write_csv(root / "meta_lab.csv")
    return root


@pytest.fixture
def stalled_hub() -> Iterator[str]:
    """``http://127.0.0.1:PORT``: accepts every connection, never answers a byte."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    srv.settimeout(0.2)
    conns: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            conns.append(c)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    finally:
        stop.set()
        t.join(5)
        for c in conns:
            c.close()
        srv.close()


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[callable]:
    """``mount(size)`` → a fresh tmpfs of that size (root only; unmounted afterwards)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        d = tmp_path / f"fs{len(mounted)}"
        d.mkdir()
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)], capture_output=True
        )
        if r.returncode:
            pytest.skip(f"cannot mount a tmpfs: {r.stderr.decode().strip()}")
        mounted.append(d)
        return d

    try:
        yield mount
    finally:
        for d in mounted:
            subprocess.run(["umount", "-l", str(d)], capture_output=True)


def collected(folder: Path, probes: str, duration: str = "1s") -> Path:
    """A finished collector run of ``probes`` in ``folder/run`` (a real `reveal-lab collect`)."""
    out = folder / "run"
    res = cli("collect", "--probes", probes, "--out", str(out), "--duration", duration)
    assert res.rc == 0, res.text
    return out
