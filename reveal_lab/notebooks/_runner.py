"""Run the manifest's notebooks with papermill, in order, stopping at the first error.

Executed copies go to ``OUT/notebooks/``; the notebooks write figures to
``OUT/figures/`` (PNG and PDF) and tables to ``OUT/tables/`` (CSV and Markdown);
``OUT/index.html`` links everything, including what failed.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reveal_lab.notebooks._index import NotebookResult, figure_files, write_index
from reveal_lab.notebooks._kernel import ensure_kernel
from reveal_lab.notebooks._manifest import Manifest, NotebookEntry, load_manifest
from reveal_lab.notebooks._lock import output_lock
from reveal_lab.notebooks._overrides import notebook_overrides, read_status, resume_from, write_status
from reveal_lab.notebooks._provenance import code_identity, data_identity, describe_change, input_keys

__all__ = ["ClaimsFailed", "NotebookFailed", "run_notebook", "run_manifest", "expected_outputs"]


class NotebookFailed(RuntimeError):
    """A notebook stopped at a failing cell (or did not write what the manifest lists)."""

    def __init__(
        self,
        notebook: str,
        message: str,
        *,
        cell_index: int | None = None,
        source: str | None = None,
        ename: str | None = None,
        evalue: str | None = None,
        executed: Path | None = None,
    ) -> None:
        self.notebook, self.cell_index, self.source = notebook, cell_index, source
        self.ename, self.evalue, self.executed = ename, evalue, executed
        super().__init__(message)


class ClaimsFailed(RuntimeError):
    """The notebooks ran but the paper-vs-reproduced table could not be written."""


def expected_outputs(entry: NotebookEntry, out: Path) -> list[Path]:
    """The files the manifest says ``entry`` writes into ``out`` (a figure: its one file or
    its platform sections' files)."""
    files = [p for f in entry.figures for ext in ("png", "pdf") for p in figure_files(out, f, ext)]
    files += [out / "tables" / f"{t}.{ext}" for t in entry.tables for ext in ("csv", "md")]
    return files


#: the kernel's own log: only critical lines. At shutdown ipykernel may log "[IPKernelApp] ERROR |
#: KeyboardInterrupt caught in kernel." (once in the 11 notebooks of a full reproduce, after
#: notebook 10 had run to the end); a failing cell reaches the user through papermill instead.
KERNEL_ARGUMENTS = ("--IPKernelApp.log_level=CRITICAL",)


def _ipc_config(folder: Path) -> object:
    """Kernel channels over UNIX sockets in ``folder`` (a private temporary folder) instead
    of TCP on localhost: the kernel is local, and over TCP without CurveZMQ keys ipykernel
    prints "Kernel is running over TCP without encryption" for every notebook. The kernel
    starts with :data:`KERNEL_ARGUMENTS`."""
    from traitlets.config import Config

    return Config(
        {
            "KernelManager": {"transport": "ipc", "ip": str(folder / "kernel")},
            "NotebookClient": {"extra_arguments": list(KERNEL_ARGUMENTS)},
        }
    )


def _describe_failure(nb: str, exc: Exception, executed: Path) -> NotebookFailed:
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        src = exc.source if len(exc.source) < 3000 else exc.source[:3000] + "\n…"
        msg = (
            f"{nb}: cell {exc.cell_index} (execution count {exc.exec_count}) failed\n"
            f"--- cell source ---\n{src}\n--- error ---\n{exc.ename}: {exc.evalue}\n"
            f"(executed notebook with the full traceback: {executed})"
        )
        return NotebookFailed(
            nb,
            msg,
            cell_index=exc.cell_index,
            source=exc.source,
            ename=exc.ename,
            evalue=exc.evalue,
            executed=executed,
        )
    return NotebookFailed(
        nb, f"{nb}: {type(exc).__name__}: {exc}", ename=type(exc).__name__, evalue=str(exc), executed=executed
    )


def run_notebook(
    manifest: Manifest,
    entry: NotebookEntry,
    *,
    preset: str,
    data: str,
    out: Path,
    kernel: str | None = None,
    progress_bar: bool = False,
    overrides: Mapping[str, object] | None = None,
) -> Path:
    """Execute one notebook; return the executed copy. Raises :class:`NotebookFailed`.

    ``overrides``: parameters over the manifest's (see :func:`notebook_overrides`)."""
    import papermill as pm

    ensure_kernel(kernel or manifest.kernel)
    params = manifest.parameters(entry, preset)
    params.update(overrides or {})
    params.update({"data": data, "out_dir": str(out), "smoke": preset == "smoke"})
    executed = out / "notebooks" / entry.notebook
    executed.parent.mkdir(parents=True, exist_ok=True)
    sockets = tempfile.TemporaryDirectory(prefix="reveal-lab-kernel-ipc-")
    try:
        pm.execute_notebook(
            str(manifest.root / entry.notebook),
            str(executed),
            parameters=params,
            kernel_name=kernel or manifest.kernel,
            # the kernel starts in the manifest's folder (nbclient's resources path); papermill's
            # own cwd= changes this process's working folder for the whole run, which threads
            # running notebooks side by side (--jobs) restore in the wrong order
            resources={"metadata": {"path": str(manifest.root)}},
            progress_bar=progress_bar,
            log_output=False,
            report_mode=False,
            config=_ipc_config(Path(sockets.name)),
        )
    except Exception as exc:  # noqa: BLE001 - reported with the failing cell
        raise _describe_failure(entry.notebook, exc, executed) from exc
    finally:
        sockets.cleanup()
    missing = [p for p in expected_outputs(entry, out) if not p.exists()]
    if missing:
        raise NotebookFailed(
            entry.notebook,
            f"{entry.notebook} ran but did not write "
            f"{[p.relative_to(out).as_posix() for p in missing]} (listed in the manifest)",
            executed=executed,
        )
    return executed


def run_concurrently(
    entries: Sequence[NotebookEntry], todo: Iterable[int], execute: Callable[[int], None], jobs: int
) -> None:
    """Call ``execute(i)`` for each index of ``todo`` on up to ``jobs`` threads (each a
    notebook's kernel process): an entry starts once every entry of ``todo`` named in its
    ``after`` has ended, in manifest order among those ready; an ``alone`` entry starts when
    nothing runs and nothing starts beside it. At the first failure no further entry starts;
    the running ones end, then the failure is raised."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    pending = list(todo)
    stems = {entries[i].stem: i for i in pending}
    done: set[int] = set()
    running: dict[Any, int] = {}
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="notebook") as pool:
        while pending or running:
            if failure is None:
                alone_running = any(entries[i].alone for i in running.values())
                for i in list(pending):
                    if len(running) >= jobs or alone_running:
                        break
                    e = entries[i]
                    if any(stems[a] not in done for a in e.after if a in stems):
                        continue
                    if e.alone and running:
                        continue
                    pending.remove(i)
                    running[pool.submit(execute, i)] = i
                    alone_running = e.alone
            elif not running:
                break
            if not running:  # nothing can start: an 'after' outside the run's order
                raise RuntimeError(f"notebooks {[entries[i].notebook for i in pending]} cannot start")
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for f in finished:
                done.add(running.pop(f))
                if f.exception() is not None and failure is None:
                    failure = f.exception()
    if failure is not None:
        raise failure


def run_manifest(
    *,
    preset: str = "smoke",
    data: str | Path | None = None,
    out: str | Path = "out/reproduce",
    only: Sequence[str] | None = None,
    manifest: Manifest | str | Path | None = None,
    log: Callable[[str], None] | None = None,
    params: Mapping[str, object] | None = None,
    resume: bool = False,
    cache: str | Path | bool = True,
    jobs: int = 1,
    flags: Mapping[str, str] | None = None,
) -> list[NotebookResult]:
    """Run every notebook of the manifest (or ``only`` those) in order.

    ``data``: a dataset folder (a path that exists is always a folder, even one named
    ``synth``; :func:`dataset_argument`), ``"synth"``, or ``None`` for the bundled dataset.
    ``only``: these notebooks, in the manifest's order (:meth:`Manifest.select`); one that
    starts after a notebook left out refuses that notebook's outputs in ``out`` when they
    were made from other inputs (:func:`check_upstream`).
    ``params``: notebook parameters over the manifest's, each given to the notebooks that
    declare it (:func:`notebook_overrides`: a name none declares is a ``ValueError``, a
    value outside its range too); ``flags`` names those given by a flag of their own
    (``{"workers": "--workers"}``), for the errors.
    ``resume``: keep the notebooks of an earlier run into ``out`` up to the first one
    whose outputs were not made from the same inputs: data (by content), preset,
    parameters, code and the notebooks it starts after (:func:`resume_from`,
    :mod:`reveal_lab.notebooks._provenance`), and run from there.
    Only one reproduction writes into ``out`` at a time: a second one raises
    :class:`~reveal_lab.notebooks._lock.ReproductionRunning` (a ``RuntimeError``) naming the first.
    ``cache``: the per-run cache folder the notebooks share (``True``: ``out/cache``;
    ``False``: none; see :mod:`reveal_lab.pipeline._cache`).
    ``jobs``: notebooks run at once (:func:`run_concurrently`: each after the notebooks
    its manifest entry names in ``after``, one marked ``alone`` with nothing beside it).
    Returns the per-notebook results; raises :class:`NotebookFailed` at the first
    failure, after writing ``index.html`` (with the failure) either way.
    """
    if jobs < 1:
        raise ValueError(f"jobs={jobs}: give 1 or more")
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    logging.getLogger("papermill").setLevel(logging.WARNING)  # our own progress lines instead
    m = manifest if isinstance(manifest, Manifest) else load_manifest(manifest)
    if preset not in m.presets:
        raise ValueError(f"unknown preset {preset!r}; expected one of {sorted(m.presets)}")
    data_s = dataset_argument(data)
    out = Path(out).resolve()
    entries = m.select(only)
    overrides = notebook_overrides(m, entries, params or {}, flags)
    out.mkdir(parents=True, exist_ok=True)
    cache_folder = (out / "cache") if cache is True else (Path(cache) if cache else None)
    try:  # the inputs of the notebooks outside the run too: those this run starts after
        every = notebook_overrides(m, m.notebooks, params or {}, flags)
    except ValueError:
        every = overrides
    with output_lock(out):
        keys = input_keys(
            m, preset=preset, overrides=every, code=code_identity(),
            data=data_identity(data_s, exclude=[p for p in (out, cache_folder) if p is not None]),
        )
        check_upstream(m, entries, keys, out)
        return _run_entries(
            m, entries, keys, overrides, preset=preset, data_s=data_s, out=out, log=log, resume=resume,
            cache_folder=cache_folder, jobs=jobs,
        )


def dataset_argument(data: str | Path | None) -> str:
    """What the notebooks get as ``data``: the absolute path of a folder that exists (also
    one named ``synth``: a path that exists is the user's data), ``"synth"`` for the seeded
    synthetic runs, the bundled dataset's path for ``None``; a missing folder is an error."""
    from reveal_lab.studies import resolve_data

    if data is not None and str(data) != "" and Path(data).expanduser().exists():
        return str(Path(data).expanduser().resolve())
    root = resolve_data(data)
    return "synth" if isinstance(root, str) and root == "synth" else str(Path(root).resolve())


def check_upstream(m: Manifest, entries: Sequence[NotebookEntry], keys: Mapping[str, Any], out: Path) -> None:
    """Refuse (``ValueError``) to run a notebook after one that is not in this run when that
    one's outputs in ``out`` were made from other inputs (other data, preset, parameters or
    code) or without a record of them: the notebook would read them as if they were this
    run's (03-detection scores in 02-pruning's ``pruning.json``)."""
    status = read_status(out)
    running = {e.stem for e in entries}
    by_stem = {e.stem: e for e in m.notebooks}
    for e in entries:
        for a in e.after:
            up = by_stem.get(a)
            if up is None or a in running:
                continue
            present = [p for p in expected_outputs(up, out) if p.exists()]
            recorded = (status.get(up.notebook) or {}).get("inputs")
            if not present or (recorded or {}).get("key") == keys[up.notebook]["key"]:
                continue
            raise ValueError(
                f"{e.stem} starts after {a}, whose outputs in {out} ({present[0].relative_to(out).as_posix()}, ...) "
                f"do not match this run: {describe_change(recorded, keys[up.notebook])}; add --only {a} to "
                "make them again, or give another --out"
            )


def _run_entries(  # noqa: PLR0913 - the run's settings, resolved once by run_manifest
    m: Manifest,
    entries: list[NotebookEntry],
    keys: Mapping[str, Mapping[str, Any]],
    overrides: Mapping[str, Mapping[str, Any]],
    *,
    preset: str,
    data_s: str,
    out: Path,
    log: Callable[[str], None],
    resume: bool,
    cache_folder: Path | None,
    jobs: int,
) -> list[NotebookResult]:
    """Run ``entries`` (those complete in ``out`` kept with ``resume``), then write the claims
    and ``index.html``; see :func:`run_manifest`."""
    import polars as pl

    # the pipeline here, not at the top: it imports scikit-learn (~2 s), which a refused
    # reproduce (an unknown --only, a bad --param) need not wait for
    from reveal_lab.pipeline import NOTEBOOK_ENV, using_cache
    from reveal_lab.studies import counts_line, write_paper_vs_reproduced

    status_lock = threading.Lock()
    start = resume_from(out, entries, keys, lambda e: expected_outputs(e, out)) if resume else 0
    ensure_kernel(m.kernel)
    started = dt.datetime.now()
    results = [
        NotebookResult(e.notebook, e.title, "skipped", figures=e.figures, tables=e.tables) for e in entries
    ]
    t_all = time.perf_counter()
    log(f"reproduce: preset {preset}, data {data_s}, {len(entries)} notebooks -> {out}")
    status = read_status(out) if start else {}
    if start:
        log(f"resume: {start} notebook(s) complete in {out}, running from {entries[start].notebook}"
            if start < len(entries) else f"resume: every notebook is complete in {out}")
    elif resume:
        log(f"resume: nothing in {out} was made from these inputs; running every notebook")
    n = len(entries)

    def record(e: NotebookEntry, state: str, seconds: float) -> None:
        rec = {"status": state, "seconds": round(seconds, 3), "parameters": overrides[e.notebook]}
        if state == "ok":  # what the outputs were made from: --resume and later --only runs compare it
            rec["inputs"] = keys[e.notebook]
        with status_lock:
            write_status(out, e.notebook, rec)

    mark = _lookup_mark(cache_folder)

    def execute(i: int) -> None:
        e, r = entries[i], results[i]
        log(f"[{i + 1}/{n}] {e.notebook} ({e.title}) ...")
        _count_lookups_as(e.notebook, jobs)
        record(e, "running", 0.0)  # a notebook stopped part way leaves no record saying "ok"
        t0 = time.perf_counter()
        try:
            r.executed = run_notebook(
                m, e, preset=preset, data=data_s, out=out, progress_bar=jobs == 1 and sys.stderr.isatty(),
                overrides=overrides[e.notebook],
            )
            r.status = "ok"
        except NotebookFailed as exc:
            r.status, r.error, r.executed = "failed", str(exc), exc.executed
            raise
        finally:
            r.seconds = time.perf_counter() - t0
            record(e, r.status if r.status != "skipped" else "stopped", r.seconds)
            total = time.perf_counter() - t_all
            log(f"[{i + 1}/{n}] {e.notebook}: {r.status} in {r.seconds:.1f} s (total {total:.1f} s)")

    for i in range(min(start, n)):
        e, r = entries[i], results[i]
        r.status, r.executed = "ok", out / "notebooks" / e.notebook
        r.seconds = float(status[e.notebook].get("seconds") or 0.0)
        log(f"[{i + 1}/{n}] {e.notebook}: complete, kept ({r.seconds:.1f} s when it ran)")
    try:
        with using_cache(cache_folder):
            if jobs == 1:
                for i in range(start, n):
                    execute(i)
            else:
                run_concurrently(entries, range(start, n), execute, jobs)
    finally:
        os.environ.pop(NOTEBOOK_ENV, None)
        wall_s = time.perf_counter() - t_all
        claims, claims_error, reliability = None, None, None
        try:
            claims_csv, claims = write_paper_vs_reproduced(out, data=data_s)
            log(f"paper vs reproduced: {claims_csv}")
            for line in counts_line(claims, data_s):
                log(f"  {line}")
            reliability_csv = write_reliability_vs_paper(out)
            if reliability_csv is not None:
                reliability = pl.read_csv(reliability_csv, infer_schema_length=10_000)
                log(f"reliability paper vs ours: {reliability_csv}")
        except Exception as exc:  # noqa: BLE001 - raised again once the index is written
            claims_error = exc
        index = write_index(
            out, results, preset=preset, data=data_s, started=started, claims=claims,
            claims_error=None if claims_error is None else f"{type(claims_error).__name__}: {claims_error}",
            reliability=reliability, wall_s=wall_s, jobs=jobs,
            cache=mark,
        )
        log(f"index: {index}")
        if claims_error is not None and sys.exc_info()[0] is not None:
            log(f"the claims could not be written either: {type(claims_error).__name__}: {claims_error}")
        elif claims_error is not None:
            raise ClaimsFailed(f"the claims could not be written: {type(claims_error).__name__}: "
                               f"{claims_error}") from claims_error
    return results


def _lookup_mark(cache_folder: Path | None) -> tuple[Path, int] | None:
    """The cache folder and the size of its lookup log now: the lookups after it are this
    reproduction's (``index.html`` counts them); ``None`` without a cache."""
    if cache_folder is None:
        return None
    from reveal_lab.pipeline import LOOKUPS

    log = cache_folder / LOOKUPS
    return cache_folder, log.stat().st_size if log.exists() else 0


def _count_lookups_as(notebook: str, jobs: int) -> None:
    """Count the cache lookups of the kernel started next under ``notebook`` (it inherits the
    variable); with several notebooks at once they are counted in all only."""
    if jobs == 1:
        from reveal_lab.pipeline import NOTEBOOK_ENV

        os.environ[NOTEBOOK_ENV] = Path(notebook).stem


def write_reliability_vs_paper(out: Path) -> Path | None:
    """Copy notebook 10's table of the reliability paper's numbers (Kokolis et al.) to
    ``out/reliability_vs_paper.csv``, its own table beside Reveal's; ``None`` when that
    notebook did not run."""
    table = Path(out) / "tables" / "reliability_paper_vs_ours.csv"
    if not table.exists():
        return None
    path = Path(out) / "reliability_vs_paper.csv"
    path.write_bytes(table.read_bytes())
    return path
