"""``index.html``: the paper's claims beside ours first, then one section per executed
notebook with its figures and tables (rendered from ``reveal_lab/render/templates``)."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from reveal_lab.render import render, table_cells

__all__ = ["NotebookResult", "cache_section", "figure_files", "write_index"]


@dataclass
class NotebookResult:
    notebook: str
    title: str
    status: str  # "ok" | "failed" | "skipped"
    seconds: float = 0.0
    executed: Path | None = None
    figures: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    error: str | None = None


_BADGE = {"ok": "ok", "failed": "FAILED", "skipped": "not run"}


def _table(out: Path, name: str, status: str, max_rows: int) -> dict[str, object]:
    csv, md = out / "tables" / f"{name}.csv", out / "tables" / f"{name}.md"
    if not csv.exists():
        missing = status == "ok" or md.exists()
        return {"name": name, "cells": None, "error": f"table {name} missing" if missing else None}
    try:
        df = pl.read_csv(csv, infer_schema_length=10_000)
    except Exception as exc:  # noqa: BLE001 - the page should still render
        return {"name": name, "cells": None, "error": f"could not read {csv.name}: {exc}"}
    return {"name": name, "cells": table_cells(df, max_rows=max_rows, max_len=80), "error": None}


def figure_files(out: Path, name: str, ext: str) -> list[Path]:
    """The files of figure ``name`` in ``out/figures``: ``name.EXT``, or, for a study written
    in platform sections, its sections' ``name--PLATFORM.EXT``
    (:func:`reveal_lab.studies.section_figure`)."""
    from reveal_lab.studies import SECTION_SEP

    whole = out / "figures" / f"{name}.{ext}"
    parts = sorted((out / "figures").glob(f"{name}{SECTION_SEP}*.{ext}")) if not whole.exists() else []
    return parts or [whole]


def _figure(out: Path, name: str) -> dict[str, object]:
    return {"name": name, "png": (out / "figures" / f"{name}.png").exists(),
            "pdf": (out / "figures" / f"{name}.pdf").exists()}


#: the claims' columns the page shows, in order (every column of the CSV but the rule)
CLAIM_PAGE_COLUMNS = (
    "claim_id", "section", "kind", "quote", "paper_value", "unit", "ours_paper_method", "status_paper_method",
    "ours_default", "status_default", "data", "machine", "note",
)


def _claims_section(
    claims: pl.DataFrame | None, data: str, error: str | None, reliability: pl.DataFrame | None
) -> dict[str, object] | None:
    """The page's first section: one line per setting with the counts, the claims, the
    reliability paper's rows apart; or why the claims could not be written."""
    from reveal_lab.studies import claims_page, counts_line

    if error is not None:
        return {"error": error, "lines": [], "table": None, "page": None, "reliability": None}
    if claims is None or claims.height == 0:
        return None
    shown = claims.select([c for c in CLAIM_PAGE_COLUMNS if c in claims.columns])
    rel = None
    if reliability is not None and reliability.height:
        counts = reliability.group_by("status").len().sort("status").rows()
        rel = {
            "line": f"{reliability.height} numbers of Kokolis et al. (arXiv 2410.21680): "
            + ", ".join(f"{n} {s}" for s, n in counts),
            "table": table_cells(reliability, max_len=200),
        }
    return {"error": None, "lines": counts_line(claims, data), "table": table_cells(shown, max_len=200),
            "page": claims_page(claims), "reliability": rel}


def _skipped_runs(out: Path) -> dict[str, list[dict[str, str]]]:
    """``out/skipped_runs.csv`` (the runs a study could not use, with file and error) by notebook."""
    path = out / "skipped_runs.csv"
    if not path.exists():
        return {}
    rows: dict[str, list[dict[str, str]]] = {}
    for r in pl.read_csv(path, infer_schema_length=0).iter_rows(named=True):
        rows.setdefault(str(r["notebook"]), []).append(r)
    return rows


def cache_section(folder: Path, since: int = 0) -> dict[str, object]:
    """What ``index.html`` shows of the per-run cache: the lookups from byte ``since`` of its
    log on, hits and misses per kind (``run``: a run read from its file, ``view``: derived, ...)
    in all and per kind and notebook, and a line saying how many runs were read and how often
    they were read back."""
    from reveal_lab.pipeline import lookup_counts

    counts = lookup_counts(folder, since)
    kinds = counts.group_by("kind", maintain_order=True).agg(pl.col("hits").sum(), pl.col("misses").sum())
    per_kind = {k: (h, m) for k, h, m in kinds.iter_rows()}
    reread, reads = per_kind.get("run", (0, 0))  # hits: read back; misses: read from the file
    line = (
        f"{int(kinds['misses'].sum()) if kinds.height else 0} results computed, "
        f"{int(kinds['hits'].sum()) if kinds.height else 0} read back; "
        f"{reads} run file(s) read, {reread} later use(s) of them read back from the cache"
    )
    per_nb = counts.filter(pl.col("notebook") != "").sort("notebook", "kind", maintain_order=True)
    return {
        "folder": str(folder),
        "line": line,
        "kinds": table_cells(kinds.sort("kind")) if kinds.height else None,
        "notebooks": table_cells(per_nb) if per_nb.height else None,
    }


def write_index(
    out: Path,
    results: list[NotebookResult],
    *,
    preset: str,
    data: str,
    started: dt.datetime,
    claims: pl.DataFrame | None = None,
    claims_error: str | None = None,
    reliability: pl.DataFrame | None = None,
    max_rows: int = 30,
    wall_s: float | None = None,
    jobs: int = 1,
    cache: tuple[Path, int] | None = None,
) -> Path:
    """Write ``out/index.html`` (relative links, so the folder can be moved or zipped).

    ``claims``: the paper-vs-reproduced table (:func:`reveal_lab.studies.paper_vs_reproduced`),
    shown first, opening with one line per setting: "N of M claims of the paper reproduced
    on DATA, K differ, J cannot be checked here". ``claims_error``: why the claims could not
    be written (shown in their place). ``reliability``: the reliability paper's rows
    (``reliability_vs_paper.csv``), in a section of their own. ``wall_s``: the notebooks'
    time from the first start to the last end; ``jobs``: how many ran at once at most.
    ``cache``: the per-run cache folder and the size of its lookup log when the reproduction
    began: the reproduction's hits and misses per kind and notebook (:func:`cache_section`).
    """
    out = Path(out)
    skipped = _skipped_runs(out)
    sections = []
    for r in results:
        sections.append(
            {
                "anchor": Path(r.notebook).stem,
                "title": r.title,
                "status": r.status,
                "badge": _BADGE[r.status],
                "notebook": r.notebook,
                "seconds": r.seconds,
                "link": r.executed.relative_to(out).as_posix() if r.executed and r.executed.exists() else None,
                "error": r.error,
                "skipped": skipped.get(Path(r.notebook).stem, []),
                "figures": [_figure(out, part.stem) for f in r.figures for part in figure_files(out, f, "png")],
                "tables": [_table(out, t, r.status, max_rows) for t in r.tables],
            }
        )
    page = render(
        "index.html.j2",
        preset=preset,
        data=data,
        started=f"{started:%Y-%m-%d %H:%M:%S}",
        n_ok=sum(r.status == "ok" for r in results),
        wall_s=wall_s,
        jobs=jobs,
        results=sections,
        claims=_claims_section(claims, data, claims_error, reliability),
        cache=cache_section(*cache) if cache is not None else None,
    )
    path = out / "index.html"
    tmp = path.with_name(f".index.html.{os.getpid()}.tmp")  # a stopped write leaves the old page whole
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
