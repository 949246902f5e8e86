"""One per-run map for the studies, in this process or on Dask.

A study is a map over runs and a reduce: :func:`study_refs` picks the runs from the
dataset's index without loading any (the same selection as
:func:`reveal_lab.studies.iter_study_runs`), :func:`map_runs` loads each run where it
runs (here, or on a Dask worker from its :class:`~reveal_lab.scale.RunRef`), applies a
module-level function that returns a small per-run piece, and gives the pieces back in
the order of the references. A process holds one run's frame at a time. The map and
:func:`reveal_lab.scale.scan` run through one engine, :func:`each_run`: a per-run function
over references, here or on a Dask client with a bounded window of runs in flight.

A run that cannot be loaded or fails in the function is *skipped*, not fatal: the
result lists it with its file and the error (:attr:`RunMap.skipped`), and
:func:`record_skipped` adds it to ``OUT/skipped_runs.csv``, which ``index.html`` shows.

Examples
--------
>>> from reveal_lab.scale import map_runs, study_refs
>>> refs = study_refs("synth", max_runs_per_workload=1)
>>> res = map_runs(_height, refs, progress=False)
>>> len(res.pieces), res.skipped.height
(3, 0)
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from reveal_lab.pipeline import memoize
from reveal_lab.scale._cluster import ClusterLost, completed, scheduler_name
from reveal_lab.scale._tasks import RunDone, RunRef, _file_stamp, _open_dataset, attempt, load_ref

if TYPE_CHECKING:
    from reveal_lab.pipeline import DetectionPolicy

__all__ = [
    "SKIPPED_SCHEMA",
    "RunMap",
    "study_refs",
    "load_study_run",
    "map_runs",
    "record_skipped",
    "read_skipped",
    "engine_label",
    "study_space",
    "setting_spaces",
    "space_file",
    "dataset_problems",
    "detect_runs",
    "LazyRun",
    "lazy_runs",
    "close_clients",
    "each_run",
    "RunsDone",
]

SYNTH = "synth"
SKIPPED_SCHEMA = {"run_id": pl.String, "file": pl.String, "error": pl.String}
SKIPPED_FILE = "skipped_runs.csv"


@dataclass
class RunMap:
    """What :func:`map_runs` gives back: the pieces of the runs used (in reference order),
    their run ids, and the runs skipped with their file and error."""

    pieces: list[Any]
    run_ids: list[str]
    skipped: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=SKIPPED_SCHEMA))


class _Excluded:
    """A run the selection leaves out once loaded (a labelled fault under ``fault_free``)."""


def _height(run: Any) -> int:
    return int(run.frame.height)


@functools.lru_cache(maxsize=1)
def _synthetic() -> dict[str, Any]:
    from reveal_lab.studies import synthetic_runs

    return {r.meta.run_id: r for r in synthetic_runs()}


def study_refs(
    data: str | Path | None = None,
    *,
    workloads: str | Sequence[str] | None = None,
    max_runs_per_workload: int | None = None,
    max_runs: int | None = None,
    phase: str | None = None,
    platform: str | None = None,
    fault_free: bool = False,
) -> list[RunRef]:
    """References to a study's runs, selected on the dataset's index as
    :func:`reveal_lab.studies.iter_study_runs` selects them (``platform`` ``"all"`` or
    empty: every platform). No run is loaded."""
    from reveal_lab.studies import parse_list, resolve_data, select_runs

    root = resolve_data(data)
    wl = parse_list(workloads) if not isinstance(workloads, list) else workloads
    plat = None if str(platform or "").lower() in ("", "all") else str(platform).lower()
    if root == SYNTH:
        runs = _synthetic()
        index = pl.DataFrame({"run_id": list(runs), "workload": [r.meta.workload for r in runs.values()]})
        ids = select_runs(
            index,
            workloads=wl,
            max_runs_per_workload=max_runs_per_workload or None,
            max_runs=max_runs or None,
        )
        return [RunRef(SYNTH, rid) for rid in ids]
    root_s = str(Path(root).resolve())
    index = _open_dataset(root_s).index
    if plat is not None and plat not in set(index.get_column("platform").drop_nulls().to_list()):
        have = sorted(set(index.get_column("platform").drop_nulls().to_list()))
        raise ValueError(f"platform {platform!r}: the dataset at {root_s} has runs of {have} (or give 'all')")
    ids = select_runs(
        index,
        workloads=wl,
        max_runs_per_workload=max_runs_per_workload or None,
        phase=phase or None,
        platform=plat,
        max_runs=max_runs or None,
        fault_free=fault_free,
    )
    rows = {r["run_id"]: r for r in index.unique("run_id", maintain_order=True).iter_rows(named=True)}
    return [
        RunRef(root_s, rid, str(rows[rid].get("archive") or "") or None, rows[rid].get("member"))
        for rid in ids
    ]


def load_study_run(ref: RunRef, max_seconds: float | None = None) -> Any:
    """The run ``ref`` points at, cropped to its first ``max_seconds`` (0/``None``: whole)."""
    from reveal_lab.studies import crop_run

    run = _synthetic()[ref.run_id] if ref.root == SYNTH else load_ref(ref)
    return crop_run(run, max_seconds)


def _where(ref: RunRef) -> str:
    if ref.root == SYNTH:
        return f"synth:{ref.run_id}"
    if ref.archive and ref.member:
        return f"{ref.archive}:{ref.member}"
    return str(Path(ref.root) / (ref.member or ref.run_id))


def _apply(
    ref: RunRef, fn: Callable[..., Any], args: tuple, max_seconds: float | None, fault_free: bool
) -> Any:
    """A study's per-run function: load one run and apply ``fn`` (an :class:`_Excluded` for a
    labelled fault under ``fault_free``); an error is kept with the run by the engine."""
    run = load_study_run(ref, max_seconds)
    if fault_free and str((run.meta.extra or {}).get("fault") or "none") not in ("", "none"):
        return _Excluded()
    return fn(run, *args)


_CLIENTS: dict[tuple[int, str], Any] = {}


def _client(workers: int, scheduler: str) -> Any:
    """One Dask client per (workers, scheduler) and process, closed when the process exits."""
    key = (int(workers or 0), str(scheduler or ""))
    if key in _CLIENTS and _CLIENTS[key][1].status != "running":  # its scheduler went away
        _close(key)
    if key not in _CLIENTS:
        from reveal_lab.scale._cluster import dask_client

        cm = dask_client(scheduler or None, n_workers=workers or None, quiet=True)
        _CLIENTS[key] = (cm, cm.__enter__())
        atexit.register(_close, key)
    return _CLIENTS[key][1]


def _close(key: tuple[int, str]) -> None:
    cm, _ = _CLIENTS.pop(key, (None, None))
    if cm is not None:
        with contextlib.suppress(Exception):
            cm.__exit__(None, None, None)


def close_clients() -> None:
    """Close the Dask clients :func:`map_runs` opened in this process (and the local
    clusters it started); done at exit otherwise."""
    for key in list(_CLIENTS):
        _close(key)


def engine_label(workers: int = 0, scheduler: str = "") -> str:
    """How :func:`map_runs` runs with these settings, in words.

    >>> engine_label(), engine_label(2), engine_label(0, "tcp://h:8786")
    ('in process', 'Dask, 2 local workers', 'Dask scheduler tcp://h:8786')
    """
    if scheduler:
        return f"Dask scheduler {scheduler}"
    return f"Dask, {workers} local workers" if workers else "in process"


@dataclass
class RunsDone:
    """What :func:`each_run` gives back: one :class:`RunDone` per reference, in reference
    order, and the most runs that were submitted and not yet collected at any moment."""

    done: list[RunDone]
    peak_in_flight: int = 0

    @property
    def failed(self) -> list[RunDone]:
        return [d for d in self.done if not d.ok]


def _dead(ref: RunRef, exc: BaseException) -> RunDone:
    """The record of a run whose task died on Dask (its worker killed, e.g. over its memory limit)."""
    return RunDone(ref, False, error=f"{type(exc).__name__}: {exc}")


def each_run(
    fn: Callable[..., Any],
    refs: Sequence[RunRef],
    *args: Any,
    per_run: Sequence[tuple] | None = None,
    client: Any = None,
    window: int | None = None,
    progress: bool = True,
    desc: str = "runs",
    say_failures: bool = False,
    consume: Callable[[int, RunDone], None] | None = None,
) -> RunsDone:
    """The one engine of the per-run work: ``fn(ref, *per_run[i], *args)`` for every
    reference, each under :func:`~reveal_lab.scale._tasks.attempt`, so a run that fails is
    kept with its error and the others go on.

    ``client``: ``None`` runs them one after the other in this process; a Dask client runs
    them on its workers with at most ``window`` tasks in flight (default two per worker
    thread), a new one submitted as each is collected, so no more than ``window`` runs'
    results are outstanding. ``fn`` is a module-level function (Dask sends it by reference)
    that loads its run from the reference and returns a small result. A progress bar over
    runs (``desc``) is drawn on stderr when ``progress``; ``say_failures`` writes a line for
    each failed run as it comes. Results come back in the order of ``refs`` on every engine.

    ``consume(i, done)``: each run's record handed over in the order of ``refs`` as soon as
    the runs before it are in (on Dask, results that come early wait for their turn, and the
    window counts them), and kept without its value: a study folds each run's piece into
    its accumulators and no piece outlives its turn.
    """
    from tqdm.auto import tqdm

    refs = list(refs)
    extra = list(per_run) if per_run is not None else [()] * len(refs)
    if len(extra) != len(refs):
        raise ValueError(f"per_run has {len(extra)} entries for {len(refs)} runs")
    done: list[RunDone | None] = [None] * len(refs)
    bar = tqdm(
        total=len(refs), disable=not progress, desc=desc, unit="run", file=sys.stderr, dynamic_ncols=True
    )

    waiting: dict[int, RunDone] = {}  # collected, not yet consumed (only with consume)
    turn = [0]

    def collect(i: int, d: RunDone) -> None:
        bar.update(1)
        if say_failures and not d.ok:
            bar.write(f"run {d.ref.run_id} failed: {d.error}")
        if consume is None:
            done[i] = d
            return
        waiting[i] = d
        while turn[0] in waiting:
            d = waiting.pop(turn[0])
            consume(turn[0], d)
            d.value = None
            done[turn[0]] = d
            turn[0] += 1

    peak = 1 if refs else 0
    if client is None:
        for i, ref in enumerate(refs):
            collect(i, attempt(fn, ref, (*extra[i], *args)))
    else:
        peak = _on_dask(client, fn, refs, extra, args, window, collect, backlog=lambda: len(waiting))
    bar.close()
    return RunsDone([d for d in done if d is not None], peak)


def _on_dask(client, fn, refs, extra, args, window, collect, backlog=lambda: 0) -> int:  # noqa: ANN001
    """:func:`each_run` on ``client``'s workers, at most a window of runs in flight or
    collected and waiting for their turn (``backlog()``); the most that were in flight at once."""
    from distributed import as_completed

    limit = max(1, window) if window else max(2, 2 * sum(client.nthreads().values()))
    pending = iter(range(len(refs)))
    pos: dict[str, int] = {}
    batch = uuid.uuid4().hex[:8]

    def submit() -> Any | None:
        i = next(pending, None)
        if i is None:
            return None
        ref = refs[i]
        key = f"run-{ref.run_id}-{batch}-{i}"
        f = client.submit(attempt, fn, ref, (*extra[i], *args), pure=False, key=key)
        pos[f.key] = i
        return f

    peak = 0
    ac = as_completed([f for f in (submit() for _ in range(limit)) if f is not None])
    try:
        for f in completed(client, ac):
            peak = max(peak, len(pos))
            _collect_one(f, refs, pos, collect)
            while len(pos) + backlog() < limit:
                nxt = submit()
                if nxt is None:
                    break
                ac.add(nxt)
    except ClusterLost:
        _forget(client)  # a later map connects again
        raise
    return peak


def _collect_one(
    f: Any, refs: Sequence[RunRef], pos: dict[str, int], collect: Callable[[int, RunDone], None]
) -> None:
    """Hand over the record of a completed future (a task that died: the run's error)."""
    i = pos.pop(f.key)
    try:
        d = f.result()
    except Exception as exc:  # noqa: BLE001 - the task died (its worker lost), the others go on
        if f.status == "cancelled":  # never by this engine: the client lost its scheduler
            raise ClusterLost(
                f"{scheduler_name(f.client)} stopped answering (killed, or its host unreachable) with "
                f"{len(pos) + 1} run(s) not done; start it again and rerun"
            ) from exc
        d = _dead(refs[i], exc)
    f.release()
    collect(i, d)


def _forget(client: Any) -> None:
    """Close and drop a cached client (its scheduler or workers are gone)."""
    for key, (_cm, c) in list(_CLIENTS.items()):
        if c is client:
            _close(key)


def map_runs(
    fn: Callable[..., Any],
    refs: Sequence[RunRef],
    *args: Any,
    max_seconds: float | None = None,
    fault_free: bool = False,
    workers: int = 0,
    scheduler: str = "",
    progress: bool = True,
    desc: str | None = None,
    per_run: Sequence[tuple] | None = None,
    fold: Callable[[Any], None] | None = None,
) -> RunMap:
    """``fn(run, *args)`` for every run of ``refs`` through the one engine
    (:func:`each_run`): here one after the other (default), or on Dask (``workers``: a local
    cluster of that many processes; ``scheduler``: ``tcp://HOST:PORT``), with at most two
    runs per worker in flight. ``fn`` must be a module-level function (Dask sends it by
    reference) returning a small piece.

    Pieces come back in the order of ``refs``, the same on every engine; runs that
    fail are listed in :attr:`RunMap.skipped` (run id, file, error) and the map goes on.
    ``per_run``: arguments of each run (one tuple per reference), given after ``run``
    and before ``args``. ``fold``: each piece is handed to it in the order of ``refs`` as it
    comes and not kept (:attr:`RunMap.pieces` stays empty), so a study that sums its pieces
    holds its accumulators and no more than a window of pieces.
    A progress bar over runs is drawn on stderr when ``progress``.
    """
    return _mapped(
        _apply, fn, refs, *args, max_seconds=max_seconds, fault_free=fault_free, workers=workers,
        scheduler=scheduler, progress=progress, desc=desc, per_run=per_run, fold=fold,
    )


def _mapped(
    apply: Callable[..., Any], fn: Callable[..., Any], refs: Sequence[RunRef], *args: Any,
    max_seconds: float | None, fault_free: bool, workers: int, scheduler: str, progress: bool,
    desc: str | None, per_run: Sequence[tuple] | None, fold: Callable[[Any], None] | None,
) -> RunMap:
    """:func:`map_runs` with ``apply(ref, fn, args, max_seconds, fault_free)`` as each run's task
    (:func:`_apply`: the run loaded, then ``fn``); every option named, as :func:`map_runs`
    takes it."""
    refs = list(refs)
    extra = list(per_run) if per_run is not None else [()] * len(refs)
    pieces, ids, skipped = [], [], []

    def take(_: int, d: RunDone) -> None:
        if not d.ok:
            error = f"{d.error} (at {d.at})" if d.at else str(d.error)
            skipped.append({"run_id": d.ref.run_id, "file": _where(d.ref), "error": error})
        elif not isinstance(d.value, _Excluded):
            if fold is None:
                pieces.append(d.value)
            else:
                fold(d.value)
            ids.append(d.ref.run_id)

    each_run(
        apply,
        refs,
        per_run=[(fn, (*e, *args), max_seconds, fault_free) for e in extra],
        client=_client(workers, scheduler) if workers or scheduler else None,
        progress=progress,
        desc=desc or getattr(fn, "__name__", "runs"),
        consume=take,
    )
    return RunMap(pieces, ids, pl.DataFrame(skipped, schema=SKIPPED_SCHEMA))


def study_space(
    refs: Sequence[RunRef],
    out_dir: str | Path,
    prune: bool | str | Path = True,
    *,
    threshold: float = 0.5,
    method: str = "complete",
    trim: bool | str = True,
    max_seconds: float | None = None,
    workers: int = 0,
    scheduler: str = "",
    progress: bool = True,
) -> Any:
    """The reproduction's pruned space as :func:`reveal_lab.studies.study_pruning` gives it
    (``prune``: ``False``/``""`` none; a path, or ``True`` for ``out_dir/pruning.json``: read
    when it exists), fitted here otherwise by the per-run map
    (:func:`~reveal_lab.studies.pruning_piece` folded into a :class:`~reveal_lab.studies.PruningFold`)
    on the runs of ``refs`` and saved there. ``method`` (one of
    :data:`reveal_lab.pruning.CLUSTER_METHODS`) cuts it and ``trim`` (a mode of
    :data:`~reveal_lab.pipeline.TRIM_RULES`, ``True``: ``auto``) chooses the span of each run
    it is fitted on; a space cut or fitted otherwise than notebook 02's (``complete`` on each
    run's ``auto`` span) has its own file, :func:`space_file` (the paper's:
    ``pruning-pairwise-untrimmed.json``)."""
    from reveal_lab.pipeline import load_pruning, save_pruning, trim_arguments
    from reveal_lab.studies import PruningFold, pruning_piece

    if prune is False or prune is None or prune == "":
        return None
    path = Path(out_dir) / "pruning.json"
    if not isinstance(prune, bool):
        path = Path(prune)
        if not path.is_absolute() and not path.exists():
            path = Path(out_dir) / path
    mode = trim_arguments(trim)[0]
    path = space_file(path, method, mode)
    if path.exists():
        return load_pruning(path)
    fold = PruningFold()
    map_runs(  # the fit pieces only: the runs as recorded (Fig. 4's correlations) are not needed here
        pruning_piece, refs, mode, 3, False, max_seconds=max_seconds, workers=workers, scheduler=scheduler,
        progress=progress, desc="pruned space", fold=fold,
    )
    space = fold.space(threshold, fit_method=method, trim=mode)
    save_pruning(space, path)
    return space


def space_file(path: str | Path, method: str = "complete", trim: str = "auto") -> Path:
    """Where :func:`study_space` keeps a space cut by ``method`` and fitted on each run's
    ``trim`` span: ``path`` itself for notebook 02's (``complete``, ``auto``), else its stem
    followed by what differs.

    >>> space_file("out/pruning.json").name, space_file("out/pruning.json", "pairwise", "none").name
    ('pruning.json', 'pruning-pairwise-untrimmed.json')
    """
    path = Path(path)
    parts = [method] if method != "complete" else []
    if trim != "auto":
        parts.append("untrimmed" if trim == "none" else trim)
    return path.with_name(f"{path.stem}-{'-'.join(parts)}{path.suffix}") if parts else path


def setting_spaces(
    refs: Sequence[RunRef],
    out_dir: str | Path,
    prune: bool | str | Path,
    settings: Mapping[str, DetectionPolicy],
    **engine: Any,
) -> dict[str, Any]:
    """Each setting's pruned space (name → :func:`study_space` cut by its policy's
    ``prune_method`` and fitted on the span its ``trim`` scores: the paper's pairwise, on the
    whole recordings), one fit per distinct (method, span). ``engine``: ``max_seconds``,
    ``workers``, ``scheduler``, ``progress``."""
    from reveal_lab.pipeline import trim_arguments

    fitted: dict[tuple[str, str], Any] = {}
    out = {}
    for name, policy in settings.items():
        key = (policy.prune_method, trim_arguments(policy.trim)[0])
        if key not in fitted:
            fitted[key] = study_space(refs, out_dir, prune, method=key[0], trim=key[1], **engine)
        out[name] = fitted[key]
    return out


def _detect_piece(
    run: Any,
    candidates: Sequence[RunRef],
    settings: Mapping[str, DetectionPolicy],
    preset: str,
    window_s: float | None,
    stride_s: float | None,
    pruning: Any,
    max_seconds: float | None,
) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """One run detected under every setting (name → policy; ``pruning``: one space, or a
    dict of them by setting), its baseline runs (its workload's other fault-free runs, never
    the run itself) loaded here when a setting needs them and its detection is not in the
    cache (:func:`_detected`: a notebook detecting a run as an earlier one did reads it back
    without loading the baseline runs again)."""
    from reveal_lab.studies import detect_one, detection_setup, needs_baseline

    @functools.cache
    def baseline() -> list[Any]:  # loaded at most once, and only when a setting computes
        return [load_study_run(ref, max_seconds) for ref in candidates]

    stamped = _stamped(candidates)
    out = {}
    for name, asked in settings.items():
        pr, policy = detection_setup(preset, window_s, stride_s, asked)
        space = pruning.get(name) if isinstance(pruning, dict) else pruning
        if not needs_baseline(policy):
            out[name] = _detected(run, (), max_seconds or None, pr, policy, space, list)
        elif stamped is None:  # a baseline run without a file to key it by: detected as it is
            out[name] = detect_one(run, baseline(), pr, policy, None, space)
        else:
            out[name] = _detected(run, stamped, max_seconds or None, pr, policy, space, baseline)
    return out


def _stamp(ref: RunRef) -> tuple[str, int, int] | None:
    """The size and modification time of the file ``ref`` is read from, as kind ``run`` keys
    it; ``None`` for a synthetic run or one without a file to stat."""
    return None if ref.root == SYNTH else _file_stamp(ref)


def _stamped(refs: Sequence[RunRef]) -> tuple[tuple[RunRef, tuple[str, int, int]], ...] | None:
    """Each reference with the size and modification time of its file (as kind ``run`` keys
    it), or ``None`` when one has no file to stat (a synthetic run)."""
    out = []
    for ref in refs:
        stamp = _stamp(ref)
        if stamp is None:
            return None
        out.append((ref, stamp))
    return tuple(out)


@memoize("detection", ignore=("baseline",))
def _detected(
    run: Any,
    candidates: tuple[tuple[RunRef, tuple[str, int, int]], ...],
    max_seconds: float | None,
    preset: Any,
    policy: DetectionPolicy,
    space: Any,
    baseline: Callable[[], list[Any]],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`~reveal_lab.studies.detect_one` of ``run`` under ``policy`` in ``space``, its
    baseline runs ``baseline()`` (called only when computed): cached by the run's contents,
    its baseline runs' references and files (``candidates``, cropped to ``max_seconds``), the
    preset and the whole policy."""
    from reveal_lab.studies import detect_one

    return detect_one(run, baseline() if candidates else [], preset, policy, None, space)


def detect_runs(
    refs: Sequence[RunRef],
    settings: Mapping[str, DetectionPolicy],
    *,
    preset: str = "paper",
    window_s: float | None = None,
    stride_s: float | None = None,
    pruning: Any = None,
    max_seconds: float | None = None,
    workers: int = 0,
    scheduler: str = "",
    progress: bool = True,
) -> tuple[dict[str, tuple[pl.DataFrame, pl.DataFrame]], RunMap]:
    """:func:`reveal_lab.studies.run_detection` under each of ``settings`` (name → its
    :class:`~reveal_lab.pipeline.DetectionPolicy`, e.g. :func:`reveal_lab.studies.setting_policies`)
    by the per-run map: a first pass reads what chooses each run's baseline
    (:func:`~reveal_lab.studies.run_facts`), the second detects each run where it is
    loaded, with its baseline runs loaded beside it (one workload's runs at most): the other
    fault-free runs of its workload, phase and hosts, for every setting that fits on baseline
    runs (the paper's per-workload fit among them). ``pruning``: the metric space, or a dict of
    spaces by setting (the paper's cut pairwise).
    Returns ``{setting: (windows, evidence)}`` and the map: the detected runs' facts as its
    pieces, the runs skipped in either pass."""
    from reveal_lab.studies import concat_detections

    engine = {"max_seconds": max_seconds, "workers": workers, "scheduler": scheduler, "progress": progress}
    facts, used, per_run = _with_baselines(refs, engine)
    mapped = map_runs(
        _detect_piece, used, settings, preset, window_s, stride_s, pruning, max_seconds,
        per_run=per_run, desc="detection", **engine,
    )
    skipped = pl.concat([facts.skipped, mapped.skipped])
    result = {name: concat_detections([p[name] for p in mapped.pieces]) for name in settings}
    kept = set(mapped.run_ids)
    return result, RunMap([f for f in facts.pieces if f["run_id"] in kept], mapped.run_ids, skipped)


def _granularity_piece(
    run: Any, candidates: Sequence[RunRef], max_seconds: float | None, granularities: Any,
    settings: Mapping[str, DetectionPolicy], *rest: Any,
) -> dict[str, pl.DataFrame]:
    """One run's intervals at every granularity (:func:`~reveal_lab.studies.granularity_piece`
    of ``granularities``, ``settings`` and ``rest``), its baseline runs loaded here when a
    setting fits per workload (the paper's)."""
    from reveal_lab.studies import granularity_piece

    per_workload = any(p.thresholds == "workload" for p in settings.values())
    base = [load_study_run(ref, max_seconds) for ref in candidates] if per_workload else []
    return granularity_piece(run, granularities, settings, *rest, baseline=base)


def _with_baselines(
    refs: Sequence[RunRef], engine: dict[str, Any]
) -> tuple[RunMap, list[RunRef], list[tuple]]:
    """The first pass of a map whose runs need their baseline runs: each run's facts
    (:func:`~reveal_lab.studies.run_facts`), the runs it could read and, per run, the
    references of its workload's other fault-free runs (:func:`~reveal_lab.studies.baseline_ids`)."""
    from reveal_lab.studies import baseline_ids, run_facts

    facts = _mapped(
        _apply_facts, run_facts, refs, fault_free=False, desc="baselines", per_run=None, fold=None, **engine
    )
    cand = baseline_ids(facts.pieces)
    by_id = {r.run_id: r for r in refs}
    used = [by_id[i] for i in facts.run_ids]
    return facts, used, [([by_id[i] for i in cand[r.run_id]],) for r in used]


def _apply_facts(
    ref: RunRef, fn: Callable[..., Any], args: tuple, max_seconds: float | None, fault_free: bool
) -> Any:
    """:func:`_apply` of :func:`~reveal_lab.studies.run_facts`, read back from the per-run cache
    (kind ``facts``, keyed as kind ``run`` is: the reference, its file's size and modification
    time) without loading the run when an earlier map step of the reproduction took its facts."""
    stamp = None if fault_free else _stamp(ref)
    if stamp is None:
        return _apply(ref, fn, args, max_seconds, fault_free)
    return _facts_of(ref, stamp, max_seconds or None)  # 0 and None: the whole run, one key


@memoize("facts")
def _facts_of(ref: RunRef, stamp: tuple[str, int, int], max_seconds: float | None) -> dict[str, Any]:
    """:func:`~reveal_lab.studies.run_facts` of the run ``ref`` points at (its file ``stamp``),
    cropped to ``max_seconds``."""
    from reveal_lab.studies import run_facts

    return run_facts(load_study_run(ref, max_seconds))


def granularity_runs(
    refs: Sequence[RunRef],
    *args: Any,
    max_seconds: float | None = None,
    workers: int = 0,
    scheduler: str = "",
    progress: bool = True,
    desc: str = "granularity",
) -> RunMap:
    """:func:`~reveal_lab.studies.granularity_piece` of every run (``args``: its arguments
    after the run, from ``granularities`` and ``settings`` on) by the per-run map, each run
    given its baseline runs as :func:`detect_runs` gives them (a first pass reads what chooses
    them): a setting fitted per workload (the paper's) is fitted on the run's workload's other
    fault-free runs, the others detect the run alone. Pieces: ``{setting: intervals}``."""
    engine = {"max_seconds": max_seconds, "workers": workers, "scheduler": scheduler, "progress": progress}
    facts, used, per_run = _with_baselines(refs, engine)
    mapped = map_runs(_granularity_piece, used, max_seconds, *args, per_run=per_run, desc=desc, **engine)
    return RunMap(mapped.pieces, mapped.run_ids, pl.concat([facts.skipped, mapped.skipped]))


class LazyRun:
    """A run known by its reference and facts (:func:`reveal_lab.studies.run_facts`), loaded
    each time its frame or hosts are asked for and not kept: a list of them costs no memory,
    and a study that walks it holds one run at a time."""

    def __init__(self, ref: RunRef, facts: dict[str, Any], max_seconds: float | None = None) -> None:
        from types import SimpleNamespace

        self.ref, self.max_seconds = ref, max_seconds
        self.meta = SimpleNamespace(
            run_id=facts["run_id"], workload=facts["workload"], phase=facts["phase"],
            hosts=tuple(facts["hosts"]), extra={"fault": facts.get("fault")},
        )

    @property
    def run_id(self) -> str:
        return self.meta.run_id

    def load(self) -> Any:
        """The run itself."""
        return load_study_run(self.ref, self.max_seconds)

    @property
    def frame(self) -> pl.DataFrame:
        return self.load().frame

    def split_hosts(self) -> dict[str, Any]:
        return self.load().split_hosts()


def lazy_runs(
    refs: Sequence[RunRef], facts: Sequence[dict[str, Any]], max_seconds: float | None = None
) -> list[LazyRun]:
    """:class:`LazyRun` of the runs ``facts`` describes (e.g. :func:`detect_runs`' pieces)."""
    by_id = {r.run_id: r for r in refs}
    return [LazyRun(by_id[f["run_id"]], f, max_seconds) for f in facts]


def dataset_problems(data: str | Path | None = None) -> pl.DataFrame:
    """What of a dataset no study can use, as skipped rows (``run_id, file, error``): files
    its index left out, and runs its ``meta_*.csv`` names without a file (with the meta
    file and line). Empty for synthetic runs and for a dataset without such problems."""
    from reveal_lab.studies import resolve_data

    root = resolve_data(data)
    if root == SYNTH:
        return pl.DataFrame(schema=SKIPPED_SCHEMA)
    ds = _open_dataset(str(Path(root).resolve()))
    rows = [{"run_id": None, "file": str(f), "error": "left out of the dataset's index"} for f in ds.skipped]
    if ds.meta_tables:
        missing = ds.reconcile().missing_files
        for r in missing.iter_rows(named=True):
            meta = ds.meta_files.get(r["platform"], f"meta_{r['platform']}.csv")
            rows.append(
                {
                    "run_id": r["run_id"],
                    "file": str(r["source_file"]),
                    "error": f"{meta}, line {r['meta_line']}, names this file; it is not in the dataset",
                }
            )
    return pl.DataFrame(rows, schema=SKIPPED_SCHEMA)


def record_skipped(out_dir: str | Path, notebook: str, skipped: pl.DataFrame) -> Path:
    """Add ``skipped`` (run id, file, error) to ``out_dir/skipped_runs.csv`` under
    ``notebook``'s name, replacing that notebook's earlier rows (a rerun writes them again)."""
    path = Path(out_dir) / SKIPPED_FILE
    rows = skipped.select(pl.lit(notebook).alias("notebook"), *SKIPPED_SCHEMA)
    old = read_skipped(out_dir)
    out = pl.concat([old.filter(pl.col("notebook") != notebook), rows]).unique(maintain_order=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    out.write_csv(path)
    return path


def read_skipped(out_dir: str | Path) -> pl.DataFrame:
    """``out_dir/skipped_runs.csv`` (``notebook, run_id, file, error``), empty when absent."""
    path = Path(out_dir) / SKIPPED_FILE
    schema = {"notebook": pl.String, **SKIPPED_SCHEMA}
    if not path.exists():
        return pl.DataFrame(schema=schema)
    return pl.read_csv(path, schema=schema)
