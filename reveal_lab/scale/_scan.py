"""Per-run work over a whole dataset, on Dask (or in this process, for comparison).

The client builds a list of :class:`RunRef` from the dataset index and runs the per-run
function :func:`~reveal_lab.scale._tasks.run_task` over it through the engine the studies'
:func:`~reveal_lab.scale.map_runs` goes through (:func:`~reveal_lab.scale._engine.each_run`):
on Dask it keeps at most ``max_in_flight`` runs submitted at a time, so neither the
scheduler nor the client ever holds more than a window of results, and each worker holds
one run at a time (one thread per worker process).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from reveal_lab.scale._cluster import dashboard_note, dask_client
from reveal_lab.scale._engine import each_run
from reveal_lab.scale._studies import run_studies
from reveal_lab.scale._tasks import (
    INPROCESS,
    RunOutcome,
    RunRef,
    RunResult,
    detect_task,
    outcome_of,
    run_task,
    run_refs,
)

__all__ = ["ScanResult", "scan", "run_refs", "INPROCESS"]

log = logging.getLogger(__name__)

@dataclass
class ScanResult:
    """Outcomes of a scan, one per run, in run-id order, plus the cross-run studies."""

    outcomes: list[RunOutcome]
    seconds: float = 0.0
    n_workers: int = 1
    backend: str = INPROCESS
    studies: dict[str, Any] = field(default_factory=dict)
    #: the most runs that were submitted and not yet collected at any moment
    peak_in_flight: int = 1
    dashboard: str | None = None

    @property
    def failures(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if not o.ok]

    @property
    def succeeded(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if o.ok]

    @property
    def anomalies(self) -> pl.DataFrame:
        """All runs' evidence rows (``run_id`` + the anomalies.csv columns), sorted."""
        given = [o.evidence for o in self.succeeded if o.evidence is not None]
        frames = [f for f in given if f.height]
        if not frames:  # nothing flagged anywhere: still the anomalies.csv columns
            return given[0].clear() if given else pl.DataFrame(schema={"run_id": pl.String})
        df = pl.concat(frames, how="diagonal_relaxed")
        keys = [c for c in ("run_id", "window_id", "host", "metric", "feature") if c in df.columns]
        return df.sort(keys, maintain_order=True)

    @property
    def runs(self) -> pl.DataFrame:
        """One row per run: id, ok, error, seconds, worker, peak RSS and the summary fields."""
        rows = []
        for o in self.outcomes:
            row = {
                "run_id": o.run_id,
                "ok": o.ok,
                "error": o.error,
                "seconds": o.seconds,
                "worker": o.worker,
                "peak_rss_mb": o.peak_rss_mb,
                "archive": o.archive,
                "member": o.member,
            }
            row.update({k: v for k, v in o.summary.items() if k not in row})
            rows.append(row)
        return (
            pl.DataFrame(rows, infer_schema_length=None)
            if rows
            else pl.DataFrame(schema={"run_id": pl.String})
        )

    @property
    def runs_per_minute(self) -> float:
        return 60.0 * len(self.outcomes) / self.seconds if self.seconds > 0 else float("nan")

    def write(self, out_dir: str | Path) -> Path:
        """``anomalies.csv`` (all runs), ``runs.csv``, ``failures.json``, ``scan.json`` (+ studies)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        an = self.anomalies
        if an.height:
            an = an.with_columns(pl.col(pl.Datetime).dt.to_string("%Y-%m-%dT%H:%M:%S%.3f"))
        an.write_csv(out / "anomalies.csv")
        self.runs.write_csv(out / "runs.csv")
        (out / "failures.json").write_text(
            json.dumps(
                [
                    {
                        "run_id": o.run_id,
                        "archive": o.archive,
                        "member": o.member,
                        "error": o.error,
                        "traceback": o.traceback,
                    }
                    for o in self.failures
                ],
                indent=2,
            )
        )
        meta = {
            "backend": self.backend,
            "n_workers": self.n_workers,
            "n_runs": len(self.outcomes),
            "peak_in_flight": self.peak_in_flight,
            "dashboard": self.dashboard,
            "n_failed": len(self.failures),
            "seconds": round(self.seconds, 3),
            "runs_per_minute": round(self.runs_per_minute, 3),
            "studies": sorted(self.studies),
        }
        (out / "scan.json").write_text(json.dumps(meta, indent=2))
        for name, value in self.studies.items():
            if isinstance(value, pl.DataFrame):
                value.write_csv(out / f"study_{name}.csv")
            else:
                (out / f"study_{name}.json").write_text(json.dumps(value, indent=2, default=str))
        return out


def scan(
    data: Any,
    *,
    task: Callable[..., RunResult] = detect_task,
    task_kwargs: Mapping[str, Any] | None = None,
    loader: Callable[[RunRef], Any] | None = None,
    scheduler: Any = None,
    n_workers: int | None = None,
    memory_limit: int | str | None = None,
    max_in_flight: int | None = None,
    filters: Mapping[str, Any] | None = None,
    run_ids: Sequence[str] | None = None,
    refs: Iterable[RunRef] | None = None,
    progress: bool = True,
    studies: Sequence[str] = (),
    studies_kwargs: Mapping[str, Any] | None = None,
    echo: Callable[[str], None] | None = None,
) -> ScanResult:
    """Run ``task`` over every run of a dataset on Dask; a failing run does not stop the others.

    Parameters
    ----------
    data
        Dataset root (public layout, zipped or not) or a ``reveal_lab.io.Dataset``.
    task
        ``task(run, **task_kwargs) -> RunResult``; a module-level function (it is
        pickled to the workers). Default :func:`detect_task` (``detect_run`` + summary).
    loader
        ``loader(ref) -> Run`` run on the worker; default :func:`load_ref` (the
        dataset's ``load``, streaming the member out of its zip archive).
    scheduler
        ``None``: a ``LocalCluster`` sized to this machine; ``"tcp://HOST:PORT"``: a
        running cluster (workers need reveal-lab installed and the data at the same
        path); a ``distributed.Client``: used as is (notebooks); ``"inprocess"``: no
        Dask, the same per-run code serially here.
    max_in_flight
        Runs submitted but not yet collected (default: 2 per worker thread).
    studies
        Cross-run studies to run on the same cluster afterwards
        (see :func:`reveal_lab.scale.run_studies`).
    """
    say = echo or (lambda msg: log.info("%s", msg))
    if refs is None and data is None:
        raise ValueError("scan needs a dataset (data=) or run references (refs=)")
    ref_list = list(refs) if refs is not None else run_refs(data, filters, run_ids)
    job = (task, dict(task_kwargs or {}), loader)
    t0 = time.perf_counter()
    here = scheduler == INPROCESS
    session = (
        contextlib.nullcontext(None)
        if here
        else dask_client(scheduler, n_workers=n_workers, memory_limit=memory_limit, quiet=True)
    )
    with session as client:
        n, note = 1, None
        if client is not None:
            workers = client.scheduler_info().get("workers", {})
            threads = sum(int(w.get("nthreads", 1)) for w in workers.values()) or 1
            say(f"Dask: {len(workers)} worker(s), {threads} thread(s); {len(ref_list)} run(s)")
            n, note = len(workers), dashboard_note(client)
            say(note)
        done = each_run(
            run_task,
            ref_list,
            *job,
            client=client,
            window=max_in_flight,
            progress=progress,
            desc="scan (in-process)" if here else "scan",
            say_failures=True,
        )
        result = ScanResult(
            [outcome_of(d) for d in done.done],
            time.perf_counter() - t0,
            n,
            INPROCESS if here else "dask",
            peak_in_flight=done.peak_in_flight,
            dashboard=note,
        )
        if studies:
            result.studies = run_studies(
                data, studies, scheduler=INPROCESS if here else client, refs=ref_list,
                **dict(studies_kwargs or {}),
            )
    return result
