"""What a worker does with one run: load it itself, run the per-run work, return a small result.

Only *references* travel from the client to the workers (:class:`RunRef`: dataset
root, run id, archive and member); each worker opens the dataset once (cached per
process) and streams the member out of its zip archive. Only small results travel
back: a summary dict and the evidence rows of the anomalous windows.
"""

from __future__ import annotations

import functools
import os
import resource
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from reveal_lab.pipeline import NOTEBOOK_ENV, DetectionPolicy, append_line, cache_dir, memoize, read_lines

__all__ = [
    "INPROCESS",
    "run_refs",
    "RunRef",
    "RunOutcome",
    "RunResult",
    "RunDone",
    "attempt",
    "run_task",
    "outcome_of",
    "detect_task",
    "execute",
    "load_ref",
    "summarize_detection",
    "TASKS",
    "task_times",
]

#: the file in the cache folder each per-run task is appended to, wherever it ran:
#: ``notebook, task, run_id, ok, seconds, reads, read_seconds`` (tab-separated)
TASKS = "tasks.tsv"

_READS = [0, 0.0]  # runs loaded by this process so far, and the seconds it took


@dataclass(frozen=True)
class RunRef:
    """Where a worker finds one run: the dataset root and the run's (archive, member)."""

    root: str
    run_id: str
    archive: str | None = None
    member: str | None = None


@dataclass
class RunResult:
    """What a per-run task function returns: a JSON-able summary and an evidence frame."""

    summary: dict[str, Any]
    evidence: pl.DataFrame


@dataclass
class RunOutcome:
    """One run's outcome as the client sees it (success or the error that stopped it)."""

    run_id: str
    ok: bool
    summary: dict[str, Any] = field(default_factory=dict)
    evidence: pl.DataFrame | None = None
    error: str | None = None
    traceback: str | None = None
    seconds: float = 0.0
    worker: str | None = None
    peak_rss_mb: float | None = None
    archive: str | None = None
    member: str | None = None


#: ``loader(ref) -> Run``: how a worker loads the run a reference points at
Loader = Callable[[RunRef], Any]

#: ``scheduler=INPROCESS`` runs the same per-run function serially in this process
INPROCESS = "inprocess"


@functools.lru_cache(maxsize=8)
def _open_dataset(root: str) -> Any:
    from reveal_lab.io import open_dataset

    return open_dataset(root)


def load_ref(ref: RunRef) -> Any:
    """Load the run ``ref`` points at (on the worker), streaming it out of its archive; with
    the per-run cache on, read once per cache folder (kind ``run``, keyed by the reference and
    the size and modification time of the file it is read from) and read back after."""
    t0 = time.perf_counter()
    try:
        stamp = _file_stamp(ref)
        if stamp is None:
            return _open_dataset(ref.root).load(ref.run_id)
        return _load_cached(ref, stamp)
    finally:
        _READS[0] += 1
        _READS[1] += time.perf_counter() - t0


def _file_stamp(ref: RunRef) -> tuple[str, int, int] | None:
    """``(path, size, mtime_ns)`` of the file ``ref`` is read from (its archive, else its
    member), or ``None`` when there is none to stat."""
    name = ref.archive or ref.member
    if not name:
        return None
    path = Path(ref.root) / name
    try:
        st = path.stat()
    except OSError:
        return None
    return str(path), st.st_size, st.st_mtime_ns


@memoize("run")
def _load_cached(ref: RunRef, stamp: tuple[str, int, int]) -> Any:
    return _open_dataset(ref.root).load(ref.run_id)


def run_refs(
    data: Any, filters: Mapping[str, Any] | None = None, run_ids: Sequence[str] | None = None
) -> list[RunRef]:
    """References to the runs of ``data`` (a dataset root or a ``Dataset``), optionally filtered."""
    from reveal_lab.io import open_dataset

    if isinstance(data, (str, Path)):
        root = str(Path(data).resolve())
        ds = open_dataset(root)
    else:
        ds = data
        root = str(Path(ds.root).resolve())
    if filters:
        ds = ds.filter(**dict(filters))
    index = ds.index
    cols = set(index.columns)
    refs = []
    for row in index.iter_rows(named=True):
        refs.append(
            RunRef(
                root,
                row["run_id"],
                str(row["archive"]) if "archive" in cols and row["archive"] else None,
                row["member"] if "member" in cols else None,
            )
        )
    if run_ids is not None:
        wanted = set(run_ids)
        missing = wanted - {r.run_id for r in refs}
        if missing:
            raise ValueError(f"run ids not in the dataset at {root}: {sorted(missing)[:5]}")
        refs = [r for r in refs if r.run_id in wanted]
    return refs


def _peak_rss_mb() -> float:
    # ru_maxrss is in kB on Linux: the worker process's high-water mark so far.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@dataclass
class RunDone:
    """One run through the engine (:func:`reveal_lab.scale._engine.each_run`): the value of
    its per-run function, or the error that stopped it, and what it took where it ran."""

    ref: RunRef
    ok: bool
    value: Any = None
    #: ``Type: message`` of the exception (or of the task's death on Dask)
    error: str | None = None
    #: ``file:line`` of the error's innermost frame
    at: str | None = None
    traceback: str | None = None
    seconds: float = 0.0
    worker: str | None = None
    peak_rss_mb: float | None = None


def attempt(fn: Callable[..., Any], ref: RunRef, args: tuple = ()) -> RunDone:
    """``fn(ref, *args)`` as one guarded run: any exception becomes a failed :class:`RunDone`
    with the run, the error and its traceback. The engine runs exactly this, in this process
    or on a Dask worker."""
    t0 = time.perf_counter()
    reads = tuple(_READS)
    where = f"{os.uname().nodename}:{os.getpid()}"
    name = getattr(args[0], "__name__", fn.__name__) if args and callable(args[0]) else fn.__name__
    try:
        value = fn(ref, *args)
    except Exception as exc:  # noqa: BLE001 - kept with its run, the others go on
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        _log_task(name, ref, False, time.perf_counter() - t0, reads)
        return RunDone(
            ref,
            False,
            error=f"{type(exc).__name__}: {exc}",
            at=f"{last[0].filename}:{last[0].lineno}" if last else None,
            traceback=traceback.format_exc(),
            seconds=time.perf_counter() - t0,
            worker=where,
            peak_rss_mb=_peak_rss_mb(),
        )
    seconds = time.perf_counter() - t0
    _log_task(name, ref, True, seconds, reads)
    return RunDone(ref, True, value, seconds=seconds, worker=where, peak_rss_mb=_peak_rss_mb())


def _log_task(name: str, ref: RunRef, ok: bool, seconds: float, reads_before: tuple[int, float]) -> None:
    """Append one per-run task to ``TASKS`` in the cache folder (one ``O_APPEND`` write), with
    the runs it loaded and the seconds that took; nothing without a cache folder."""
    root = cache_dir()
    if root is None:
        return
    n, read_s = _READS[0] - reads_before[0], _READS[1] - reads_before[1]
    append_line(root, TASKS, f"{os.environ.get(NOTEBOOK_ENV, '')}\t{name}\t{ref.run_id}\t{int(ok)}"
                f"\t{seconds:.4f}\t{n}\t{read_s:.4f}\n")


def task_times(folder: str | Path, since: int = 0) -> pl.DataFrame:
    """The per-run tasks logged in the cache ``folder`` from byte ``since`` of its log on: one
    row per task (``notebook, task, run_id, ok, seconds, reads, read_seconds``), in all
    processes that shared the folder (the notebooks' kernels, Dask workers)."""
    schema = {"notebook": pl.String, "task": pl.String, "run_id": pl.String, "ok": pl.Boolean,
              "seconds": pl.Float64, "reads": pl.Int64, "read_seconds": pl.Float64}
    rows = [
        (p[0], p[1], p[2], p[3] == "1", float(p[4]), int(p[5]), float(p[6]))
        for p in read_lines(Path(folder), TASKS, since, 7)
    ]
    return pl.DataFrame(rows, schema=schema, orient="row")


def run_task(
    ref: RunRef, task: Callable[..., RunResult], task_kwargs: dict[str, Any] | None, loader: Loader | None
) -> RunResult:
    """Scan's per-run function: load ``ref`` (with ``loader``, default :func:`load_ref`) and
    apply ``task``; the evidence rows carry the run id."""
    res = task((loader or load_ref)(ref), **(task_kwargs or {}))
    ev = res.evidence
    if ev is not None and "run_id" not in ev.columns:
        ev = ev.select(pl.lit(ref.run_id).alias("run_id"), pl.all())
    return RunResult(res.summary, ev)


def outcome_of(done: RunDone) -> RunOutcome:
    """A scan's :class:`RunOutcome` of one run of :func:`run_task` through the engine."""
    res = done.value if done.ok else None
    return RunOutcome(
        done.ref.run_id,
        done.ok,
        summary=res.summary if res is not None else {},
        evidence=res.evidence if res is not None else None,
        error=done.error,
        traceback=done.traceback,
        seconds=done.seconds,
        worker=done.worker,
        peak_rss_mb=done.peak_rss_mb,
        archive=done.ref.archive,
        member=done.ref.member,
    )


def execute(
    ref: RunRef,
    task: Callable[..., RunResult],
    task_kwargs: dict[str, Any] | None = None,
    loader: Callable[[RunRef], Any] | None = None,
) -> RunOutcome:
    """One run of scan's per-run work here: :func:`run_task` under the engine's guard
    (:func:`attempt`), so any exception becomes a failed :class:`RunOutcome`. ``scan`` runs
    the same two functions per run, in this process or on a Dask worker."""
    return outcome_of(attempt(run_task, ref, (task, task_kwargs, loader)))


def summarize_detection(run: Any, det: Any) -> RunResult:
    """The per-run summary and evidence of a :class:`reveal_lab.pipeline.Detection`."""
    evidence = det.evidence
    if not isinstance(evidence, pl.DataFrame):
        evidence = pl.DataFrame(evidence)
    windows = det.windows
    n_windows = int(windows.height if isinstance(windows, pl.DataFrame) else len(windows))
    s = getattr(det, "summary", None) or {}
    anomalous = s.get("anomalous", evidence.select("window_id", "host").n_unique() if evidence.height else 0)
    top = (
        evidence.group_by("subsystem").len().sort(["len", "subsystem"], descending=[True, False])
        if evidence.height
        else None
    )
    summary: dict[str, Any] = {
        "run_id": run.meta.run_id,
        "hosts": ",".join(run.meta.hosts),
        "workload": run.meta.workload,
        "platform": run.meta.platform,
        "phase": run.meta.phase,
        "n_rows": int(run.frame.height),
        "n_cols": int(run.frame.width - 1),
        "n_windows": n_windows,
        "n_anomalous_windows": int(anomalous),
        "n_evidence_rows": int(evidence.height),
        "top_subsystem": top.get_column("subsystem")[0] if top is not None else None,
        "n_warnings": len(run.warnings),
    }
    return RunResult(summary, evidence)


def detect_task(run: Any, preset: str = "paper", policy: DetectionPolicy | None = None) -> RunResult:
    """The default per-run work: :func:`reveal_lab.pipeline.detect_run` of the run alone
    under ``policy`` (a :class:`~reveal_lab.pipeline.DetectionPolicy`, default
    ``POLICIES["default"]``; derive, trimmed to the
    workload's span, windows, features in the pruned space, the three detectors fitted on the
    run with robust thresholds, attribution) then a summary. The policy's ``prune``:
    ``True`` (the run's own pruned space), a :class:`~reveal_lab.pipeline.Pruning` (one space
    for every run, e.g. from ``pruning.json``) or ``False`` (every metric)."""
    from reveal_lab.config import get_preset
    from reveal_lab.pipeline import detect_run

    det = detect_run(run, preset=get_preset(preset), policy=policy)
    return summarize_detection(run, det)
