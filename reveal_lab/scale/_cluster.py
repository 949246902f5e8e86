"""Getting a Dask client: a ``LocalCluster`` sized to this machine, or a real scheduler.

``dask.distributed`` is imported inside the functions (it is an optional extra:
``pip install 'reveal-lab[scale]'``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ClusterPlan",
    "plan_local_cluster",
    "dask_client",
    "dashboard_note",
    "ClusterLost",
    "PATIENCE_S",
    "PATIENCE_ENV",
    "patience_s",
    "connect",
    "completed",
    "scheduler_name",
    "WORKER_ENVIRON",
]

log = logging.getLogger(__name__)

#: what one worker needs at least: one CPU run of ~90 min at 100 ms with ~790
#: float64 channels is 54,000 x 790 x 8 B = 341 MB as a frame; parsing the text
#: member and the window features roughly triple that (see docs/SCALE_PLAN.md).
MIN_WORKER_MEMORY = 1_500_000_000
#: a worker's memory limit below this is refused: the worker's interpreter with the scientific
#: stack takes ~250 MB before it holds a run, and under its limit it is restarted over and over
MIN_MEMORY_LIMIT = 512_000_000
#: the longest any wait on Dask goes without news: reaching the scheduler, a first worker
#: joining, the scheduler answering, or a worker to run the waiting tasks on
PATIENCE_S = 10.0
#: the environment variable that sets that patience in seconds (a positive number) for this
#: process and the notebooks it runs: longer for a scheduler across a slow network
PATIENCE_ENV = "REVEAL_LAB_DASK_PATIENCE"
#: how often a wait for results asks the scheduler how many workers it has (seconds)
CHECK_EVERY_S = 1.0
#: set in each local worker's process before it runs a task: one thread for BLAS (as Dask
#: sets it), OpenMP (dtaidistance) and numba's parallel loops (the window features), so that N
#: single-threaded workers keep to N cores; a variable set in this process's environment wins
WORKER_ENVIRON = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
}


class ClusterLost(RuntimeError):
    """The Dask scheduler cannot be reached or went away, or it has no worker to run on."""


@dataclass(frozen=True)
class ClusterPlan:
    """How a local cluster is sized: one process per core, one thread each (and one thread for
    BLAS, OpenMP and numba in each: :data:`WORKER_ENVIRON`)."""

    n_workers: int
    threads_per_worker: int
    memory_limit: int  # bytes per worker

    def describe(self) -> str:
        return (
            f"{self.n_workers} worker process(es) x {self.threads_per_worker} thread, "
            f"{self.memory_limit / 1e9:.1f} GB memory limit each"
        )


def patience_s() -> float:
    """The patience of every wait on Dask (seconds): ``$REVEAL_LAB_DASK_PATIENCE``, else
    :data:`PATIENCE_S`.

    >>> patience_s() > 0
    True
    """
    raw = os.environ.get(PATIENCE_ENV, "").strip()
    if not raw:
        return PATIENCE_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ValueError(f"${PATIENCE_ENV} must be a positive number of seconds, got {raw!r}")
    return value


def _total_memory() -> int:
    import psutil

    return int(psutil.virtual_memory().total)


def plan_local_cluster(n_workers: int | None = None, memory_limit: int | str | None = None) -> ClusterPlan:
    """Size a ``LocalCluster`` for this machine.

    Workers are processes (the per-run work is Python + numpy and holds the GIL
    between kernels) with one thread each, so a worker holds one run at a time
    and memory per worker is bounded by one run. By default: one worker per
    core, but no more than fit in 80 % of RAM at :data:`MIN_WORKER_MEMORY` each.

    >>> p = plan_local_cluster(2, memory_limit="2GB")
    >>> (p.n_workers, p.threads_per_worker, p.memory_limit)
    (2, 1, 2000000000)
    """
    usable = int(_total_memory() * 0.8)
    if n_workers is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        n_workers = max(1, min(cores, usable // MIN_WORKER_MEMORY))
    if n_workers < 1:
        raise ValueError(f"n_workers must be >= 1, got {n_workers}")
    if memory_limit is None:
        mem = usable // n_workers
    elif isinstance(memory_limit, str):
        from dask.utils import parse_bytes

        mem = int(parse_bytes(memory_limit))
    else:
        mem = int(memory_limit)
    if mem < MIN_MEMORY_LIMIT:
        if memory_limit is None:  # this machine's memory shared by too many workers
            fit = max(1, usable // MIN_MEMORY_LIMIT)
            advice = (
                f"80 % of this machine's memory ({usable / 1e9:.1f} GB) shared by {n_workers} workers; "
                f"start {fit} worker(s) or fewer (--workers {fit})"
            )
        else:
            advice = f"give a memory limit of {MIN_MEMORY_LIMIT // 1_000_000}MB or more (scan --memory-limit)"
        raise ValueError(
            f"memory limit {mem / 1e6:.3g} MB per worker is below {MIN_MEMORY_LIMIT / 1e6:.0f} MB: a "
            "worker needs that much for its interpreter and one run, and under the limit Dask would "
            f"restart it over and over: {advice}"
        )
    if mem < MIN_WORKER_MEMORY // 4:
        log.warning("memory limit %.2f GB per worker is small for one full-length run", mem / 1e9)
    return ClusterPlan(n_workers, 1, mem)


def _serves_dashboard(dask_scheduler: Any) -> bool:
    """Run on the scheduler: whether a Bokeh dashboard is attached to its HTTP server."""
    apps = getattr(getattr(dask_scheduler, "http_application", None), "applications", None) or []
    return any("Bokeh" in type(a).__name__ for a in apps)


def dashboard_note(client: Any) -> str:
    """One line for the user: the dashboard link, or why there is none.

    The link is printed only when the scheduler serves a dashboard (asked on the
    scheduler itself): ``Client.dashboard_link`` is formatted from the local dask config
    and points at the scheduler's HTTP port whether or not a dashboard is attached there.
    """
    try:
        serves = bool(client.run_on_scheduler(_serves_dashboard))
    except Exception as exc:  # noqa: BLE001 - a note for the user, never fatal
        return f"Dask dashboard unknown: the scheduler did not answer ({exc})"
    if not serves:
        why = "the scheduler serves no dashboard"
        if importlib.util.find_spec("bokeh") is None:
            why += " (bokeh is not installed here: pip install 'reveal-lab[scale]' or 'bokeh>=3.1')"
        return f"Dask dashboard unavailable: {why}"
    return f"Dask dashboard: {client.dashboard_link}"


@contextlib.contextmanager
def dask_client(
    scheduler: Any = None,
    *,
    n_workers: int | None = None,
    memory_limit: int | str | None = None,
    quiet: bool = False,
) -> Iterator[Any]:
    """A ``dask.distributed.Client``; the cluster it started (if any) is closed on exit.

    Parameters
    ----------
    scheduler
        ``None``: start a :class:`~distributed.LocalCluster` sized by
        :func:`plan_local_cluster`. A string ``"tcp://HOST:PORT"``: connect to a
        running scheduler (nothing is shut down on exit). A ``Client``: used as is.
    n_workers, memory_limit
        Local cluster size (ignored with a remote scheduler).
    """
    from distributed import Client, LocalCluster

    if isinstance(scheduler, Client):
        yield scheduler
        return
    if scheduler is not None:
        client = connect(scheduler)
        try:
            if not quiet:
                log.info(
                    "connected to %s (%d workers)", scheduler, len(client.scheduler_info().get("workers", {}))
                )
                log.info("%s", dashboard_note(client))
            yield client
        finally:
            with contextlib.suppress(Exception):  # a scheduler gone: nothing left to close there
                client.close(timeout=patience_s())
        return
    plan = plan_local_cluster(n_workers, memory_limit)
    has_bokeh = importlib.util.find_spec("bokeh") is not None
    cluster = LocalCluster(
        n_workers=plan.n_workers,
        threads_per_worker=plan.threads_per_worker,
        processes=True,
        memory_limit=plan.memory_limit,
        dashboard_address=":0" if has_bokeh else None,
        silence_logs=logging.ERROR,
        env={k: os.environ.get(k, v) for k, v in WORKER_ENVIRON.items()},
    )
    client = Client(cluster)
    try:
        if not quiet:
            log.info("local Dask cluster: %s", plan.describe())
            log.info("%s", dashboard_note(client))
        yield client
    finally:
        client.close()
        cluster.close()


def connect(address: str, patience: float | None = None) -> Any:
    """A client of the scheduler at ``address`` that has at least one worker; raises
    :class:`ClusterLost` within about ``patience`` seconds (default :func:`patience_s`) when
    the scheduler cannot be reached or no worker joins it."""
    from distributed import Client

    patience = patience_s() if patience is None else patience

    try:
        client = Client(address, timeout=patience)
    except (OSError, TimeoutError) as exc:
        raise ClusterLost(
            f"cannot reach the Dask scheduler {address} within {patience:g} s ({exc}): is it running? "
            "Start one (dask scheduler) or leave out --scheduler"
        ) from exc
    try:
        client.wait_for_workers(1, timeout=patience)
    except (OSError, TimeoutError) as exc:
        with contextlib.suppress(Exception):
            client.close(timeout=patience)
        raise ClusterLost(
            f"the Dask scheduler {address} has no worker: none joined within {patience:g} s; start one "
            f"(dask worker {address}) or leave out --scheduler"
        ) from exc
    return client


def _workers(client: Any, patience: float) -> int | None:
    """How many workers the client's scheduler has now; ``None`` when it cannot be asked."""
    if client.status != "running":
        return None
    try:
        info = client.sync(client.scheduler.identity, callback_timeout=min(patience, 5.0))
    except Exception:  # noqa: BLE001 - any failure to ask is a scheduler that does not answer
        return None
    return len((info or {}).get("workers", {}))


def scheduler_name(client: Any) -> str:
    """``the Dask scheduler ADDRESS`` of a client, for messages."""
    return f"the Dask scheduler {getattr(getattr(client, 'scheduler', None), 'address', None) or ''}".rstrip()


def completed(client: Any, ac: Any, patience: float | None = None) -> Iterator[Any]:
    """The futures of ``ac`` (a ``distributed.as_completed``, which may grow while this runs)
    as they complete, like iterating it, but a wait never outlasts ``patience`` seconds
    (default :func:`patience_s`) without a scheduler that answers or without a worker: then
    :class:`ClusterLost` says which (the tasks would otherwise wait for ever, Dask's client
    reconnecting inside the process)."""
    patience = patience_s() if patience is None else patience
    where = scheduler_name(client)
    gone_since: float | None = None  # the scheduler stopped answering
    empty_since: float | None = None  # it answers and has no worker
    next_check = time.monotonic() + CHECK_EVERY_S
    while not ac.is_empty():
        if ac.has_ready():
            yield next(ac)
            continue
        now = time.monotonic()
        if now >= next_check:
            n = _workers(client, patience)
            now = time.monotonic()
            next_check = now + CHECK_EVERY_S
            gone_since = (gone_since or now) if n is None else None
            empty_since = (empty_since or now) if n == 0 else None
            waiting = ac.count()
            if gone_since is not None and now - gone_since >= patience:
                raise ClusterLost(
                    f"{where} stopped answering {now - gone_since:.0f} s ago (killed, or its host "
                    f"unreachable) with {waiting} task(s) not done; start it again and rerun"
                )
            if empty_since is not None and now - empty_since >= patience:
                raise ClusterLost(
                    f"{where} has had no worker for {now - empty_since:.0f} s (the last one stopped or "
                    f"was killed) with {waiting} task(s) waiting for one; start a worker and rerun"
                )
        time.sleep(0.05)
