"""The studies' per-run work on a real Dask scheduler (`reproduce --scheduler ADDR`, the notebooks'
`scale.map_runs`): a scheduler killed, the last worker killed or no worker at all is said within
seconds and the map stops; the advice on a worker's memory names a flag that exists.

The scheduler and worker are real `dask scheduler` / `dask worker` processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.robustness._dask_task import slow
from tests.robustness.conftest import ROOT

distributed = pytest.importorskip("distributed")

from reveal_lab import scale  # noqa: E402

#: the patience of every wait on Dask in these tests (``$REVEAL_LAB_DASK_PATIENCE``), shorter
#: than the product's default: each test waits it out once or twice
PATIENCE_S = 3.0
#: what "within seconds" means here: the patience of every wait, plus the time to notice
SAY_WITHIN_S = PATIENCE_S + 15
DASK = str(Path(sys.executable).with_name("dask"))
#: the runs mapped: the bundled sample of the public dataset (a worker reads one run of it)
SAMPLE = ROOT / "data/fixtures/reveal_sample"


class Cluster:
    """A scheduler (and workers) in their own processes, killed at the end."""

    def __init__(self, tmp: Path) -> None:
        self.file = tmp / "scheduler.json"
        self.procs: dict[str, subprocess.Popen] = {}
        self.tmp = tmp

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        env = {**os.environ, "PYTHONPATH": str(ROOT)}  # a worker imports this module's task function
        p = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp, env=env, start_new_session=True
        )
        self.procs[name] = p
        return p

    def scheduler(self) -> str:
        self._start(
            "scheduler",
            [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(self.file)],
        )
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            if self.file.exists():
                try:
                    return json.loads(self.file.read_text())["address"]
                except (ValueError, KeyError):
                    pass
            time.sleep(0.2)
        raise AssertionError(f"the dask scheduler did not start: {(self.tmp / 'scheduler.log').read_text()}")

    def worker(self, address: str) -> None:
        self._start(
            "worker",
            [DASK, "worker", address, "--no-nanny", "--nthreads", "1", "--no-dashboard",
             "--local-directory", str(self.tmp / "worker-space")],
        )
        with distributed.Client(address, timeout=30) as c:
            c.wait_for_workers(1, timeout=60)

    def kill(self, name: str) -> None:
        os.killpg(self.procs[name].pid, signal.SIGKILL)

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    monkeypatch.setenv(scale.PATIENCE_ENV, str(PATIENCE_S))
    assert scale.patience_s() == PATIENCE_S
    c = Cluster(tmp_path)
    try:
        yield c
    finally:
        from reveal_lab.scale._engine import close_clients

        close_clients()
        c.stop()


def _lost(
    address: str, *, after: Callable[[], None] | None = None, started: Path | None = None
) -> tuple[str, float]:
    """Map runs that take a minute each on ``address``, ``after()`` called once a task runs on a
    worker (it creates the file ``started``): what :class:`~reveal_lab.scale.ClusterLost` said and
    how long the map took to say it."""
    refs = scale.study_refs(SAMPLE, max_runs_per_workload=1)
    t0 = time.monotonic()
    watcher = None
    if after is not None:
        assert started is not None and not started.exists()

        def when_started() -> None:
            end = time.monotonic() + 60
            while not started.exists() and time.monotonic() < end:
                time.sleep(0.05)
            after()

        watcher = threading.Thread(target=when_started, daemon=True)
        watcher.start()
    with pytest.raises(scale.ClusterLost) as err:
        extra = () if started is None else (str(started),)
        res = scale.map_runs(slow, refs, 60.0, *extra, scheduler=address, progress=False)
        raise AssertionError(f"the map ended without a word: {res.pieces}, skipped {res.skipped.to_dicts()}")
    took = time.monotonic() - t0
    if watcher is not None:
        watcher.join(60)
        assert started.exists(), "no task started on the worker before the map stopped"
    return str(err.value), took


def test_a_scheduler_without_any_worker_is_said_within_seconds(cluster):
    address = cluster.scheduler()
    said, took = _lost(address)
    assert took < SAY_WITHIN_S, f"took {took:.0f} s"
    assert address in said and "no worker" in said and "dask worker" in said, said


@pytest.mark.parametrize(
    ("killed", "says"), [("worker", "has had no worker for"), ("scheduler", "stopped answering")]
)
def test_the_last_worker_or_the_scheduler_killed_is_said_within_seconds(cluster, killed, says):
    address = cluster.scheduler()
    cluster.worker(address)
    said, took = _lost(address, after=lambda: cluster.kill(killed), started=cluster.tmp / "task-started")
    assert took < SAY_WITHIN_S, f"took {took:.0f} s"
    assert address in said and says in said and ("not done" in said or "waiting" in said), said


def test_a_scheduler_that_is_not_there_is_said_within_seconds(cluster):
    address = cluster.scheduler()
    cluster.kill("scheduler")
    cluster.procs["scheduler"].wait(10)
    said, took = _lost(address)
    assert took < SAY_WITHIN_S, f"took {took:.0f} s"
    assert address in said and "cannot reach" in said, said


def test_the_advice_on_worker_memory_names_flags_that_exist():
    """Too many local workers for this machine's memory: the advice names a flag of the
    commands that start them (`reproduce --workers`, `scan --workers`), never one they lack."""
    import psutil

    from reveal_lab.cli import build_parser

    too_many = int(psutil.virtual_memory().total * 0.8) // scale.MIN_MEMORY_LIMIT + 1
    with pytest.raises(ValueError) as err:
        scale.plan_local_cluster(too_many)
    said = str(err.value)
    flags = {w.strip("(),;:") for w in said.split() if w.startswith(("--", "(--"))}
    flags = {f.lstrip("(") for f in flags}
    assert flags, said
    subs = next(a for a in build_parser()._actions if getattr(a, "choices", None)).choices
    for command in ("reproduce", "scan"):
        options = {o for a in subs[command]._actions for o in a.option_strings}
        assert flags <= options, f"{command} lacks {flags - options}: {said}"
