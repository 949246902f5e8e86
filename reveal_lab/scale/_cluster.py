"""Getting a Dask client: a ``LocalCluster`` sized to this machine, or a real scheduler.

``dask.distributed`` is imported inside the functions (it is an optional extra:
``pip install 'reveal-lab[scale]'``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["ClusterPlan", "plan_local_cluster", "dask_client", "dashboard_note"]

log = logging.getLogger(__name__)

#: what one worker needs at least: one CPU run of ~90 min at 100 ms with ~790
#: float64 channels is 54,000 x 790 x 8 B = 341 MB as a frame; parsing the text
#: member and the window features roughly triple that (see docs/SCALE_PLAN.md).
MIN_WORKER_MEMORY = 1_500_000_000
#: a worker's memory limit below this is refused: the worker's interpreter with the scientific
#: stack takes ~250 MB before it holds a run, and under its limit it is restarted over and over
MIN_MEMORY_LIMIT = 512_000_000


@dataclass(frozen=True)
class ClusterPlan:
    """How a local cluster is sized: one process per core, one thread each."""

    n_workers: int
    threads_per_worker: int
    memory_limit: int  # bytes per worker

    def describe(self) -> str:
        return (
            f"{self.n_workers} worker process(es) x {self.threads_per_worker} thread, "
            f"{self.memory_limit / 1e9:.1f} GB memory limit each"
        )


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
        raise ValueError(
            f"memory limit {mem / 1e6:.3g} MB per worker is below {MIN_MEMORY_LIMIT / 1e6:.0f} MB: a "
            "worker needs that much for its interpreter and one run, and under the limit Dask would "
            f"restart it over and over; give --memory-limit {MIN_MEMORY_LIMIT // 1_000_000}MB or more "
            "(default: 80 % of RAM / workers)"
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
        client = Client(scheduler)
        try:
            if not quiet:
                log.info(
                    "connected to %s (%d workers)", scheduler, len(client.scheduler_info().get("workers", {}))
                )
                log.info("%s", dashboard_note(client))
            yield client
        finally:
            client.close()
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
