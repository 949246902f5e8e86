"""Run the manifest's notebooks with papermill, in order, stopping at the first error.

Executed copies go to ``OUT/notebooks/``; the notebooks write figures to
``OUT/figures/`` (PNG and PDF) and tables to ``OUT/tables/`` (CSV and Markdown);
``OUT/index.html`` links everything, including what failed.
"""

from __future__ import annotations

import datetime as dt
import logging
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
from reveal_lab.notebooks._overrides import notebook_overrides, read_status, resume_from, write_status
from reveal_lab.pipeline import using_cache

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
            cwd=str(manifest.root),
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
) -> list[NotebookResult]:
    """Run every notebook of the manifest (or ``only`` those) in order.

    ``data``: a dataset folder, ``"synth"``, or ``None`` for the bundled dataset.
    ``params``: notebook parameters over the manifest's, each given to the notebooks that
    declare it (:func:`notebook_overrides`: a name none declares is a ``ValueError``).
    ``resume``: keep the notebooks of an earlier run into ``out`` up to the first one
    without a complete output (:func:`resume_from`) and run from there.
    ``cache``: the per-run cache folder the notebooks share (``True``: ``out/cache``;
    ``False``: none; see :mod:`reveal_lab.pipeline._cache`).
    ``jobs``: notebooks run at once (:func:`run_concurrently`: each after the notebooks
    its manifest entry names in ``after``, one marked ``alone`` with nothing beside it).
    Returns the per-notebook results; raises :class:`NotebookFailed` at the first
    failure, after writing ``index.html`` (with the failure) either way.
    """
    import polars as pl

    from reveal_lab.studies import counts_line, resolve_data, write_paper_vs_reproduced

    if jobs < 1:
        raise ValueError(f"jobs={jobs}: give 1 or more")
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    status_lock = threading.Lock()
    logging.getLogger("papermill").setLevel(logging.WARNING)  # our own progress lines instead
    m = manifest if isinstance(manifest, Manifest) else load_manifest(manifest)
    if preset not in m.presets:
        raise ValueError(f"unknown preset {preset!r}; expected one of {sorted(m.presets)}")
    data_s = str(Path(resolve_data(data)).resolve()) if str(resolve_data(data)) != "synth" else "synth"
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    entries = [m.entry(n) for n in only] if only else list(m.notebooks)
    overrides = notebook_overrides(m, entries, params or {})
    start = resume_from(out, entries, overrides, lambda e: expected_outputs(e, out)) if resume else 0
    cache_folder = (out / "cache") if cache is True else (Path(cache) if cache else None)
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
    n = len(entries)

    def execute(i: int) -> None:
        e, r = entries[i], results[i]
        log(f"[{i + 1}/{n}] {e.notebook} ({e.title}) ...")
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
            with status_lock:
                write_status(
                    out, e.notebook,
                    {"status": r.status, "seconds": round(r.seconds, 3), "parameters": overrides[e.notebook]},
                )
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
        )
        log(f"index: {index}")
        if claims_error is not None and sys.exc_info()[0] is not None:
            log(f"the claims could not be written either: {type(claims_error).__name__}: {claims_error}")
        elif claims_error is not None:
            raise ClaimsFailed(f"the claims could not be written: {type(claims_error).__name__}: "
                               f"{claims_error}") from claims_error
    return results


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
