"""``CLAIMS.md``: the paper-vs-reproduced table of one reproduction as a document, written
from its ``paper_vs_reproduced.csv`` alone, so its counts, values and reasons are the run's.

``reveal-lab reproduce`` writes ``OUT/CLAIMS.md`` beside the CSV
(:func:`~reveal_lab.studies._claims.write_paper_vs_reproduced`); ``docs/CLAIMS.md`` is that
file from the full preset's run (``python scripts/claims_doc.py OUT``), never edited by hand.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from pathlib import Path

import polars as pl

from reveal_lab.studies._claim_model import APPROX, CLAIM_STATUSES, SETTING_COLUMNS
from reveal_lab.studies._claim_readers import NO_CHANGE_MARGIN
from reveal_lab.studies._measure import LEVEL

__all__ = ["CLAIMS_DOC", "claims_markdown", "claims_page", "doc_counts", "write_claims_doc"]

#: the file name, in OUT and in docs/
CLAIMS_DOC = "CLAIMS.md"
REPRODUCED, DIFFERS, CANNOT = CLAIM_STATUSES
#: each status's mark in the document's tables
MARKS = {REPRODUCED: "✓", DIFFERS: "✗", CANNOT: "n/a"}
#: the columns counted, with how the document names them
COUNTED = (
    *((status, {"paper": "the paper's method", "default": "reveal-lab's default"}[s]) for s, _, status in
      SETTING_COLUMNS),
    ("status_public_dataset", "the public dataset's documented facts"),
)

_HOW = """\
Every row is one statement of the Reveal paper (arXiv 2510.26008), quoted exactly with its section
(`tests/studies/test_claims.py` finds each quote's fragments in the paper's text, in order, and its
number in the quote), the paper's value, and ours, read from the tables the notebooks wrote.

* **Two settings.** A detection claim is computed with the paper's method (`paper` policy) and with
  reveal-lab's default policy; a claim that does not depend on detection shows one value in both. A
  row computed in one setting only says so in the other (the §6 IRQ rows: notebook 11 scores with the
  default policy).
* **Findings and settings.** `finding`: what the paper observed; `setting`: a choice of its method
  (the 1 % budget, the windows, |r| = 0.5), counted apart.
* **Rules** (`studies._claim_model.claim_status`): `close`, `range`, `at_least` / `at_most`, `above` /
  `below` (strict), `factor` (run times on other hardware), `qualitative` (the reader tests the
  statement's shape and the note says how the words were read). Each tolerance is 0, ±{approx:.0%} of the
  paper's value (its "approximately", or two digits without an interval), or justified in the row's
  `tolerance` column; `tests/studies/test_claim_rules.py` feeds every rule a value it must reject.
* **Intervals.** A live measurement (notebook 08: repeated after a quiet gate, the collector's
  start-up outside the window) carries its {level:.0%} interval: the row reproduces when the rule holds over
  the whole interval, differs when it fails over the whole interval, and is not decided (cannot be
  checked here, with these repeats) when the interval crosses the rule's bound.
* **"No change" rows** are equivalence tests: the bootstrap interval of the relative change must lie
  within ±{margin:.1%}, the smallest change §6 itself calls an improvement.
* **The public dataset's column** judges the paper's statements against what the public dataset's
  documented format says (`reveal-dataset-format.md`); no number there: not decided by it.
* **Cannot be checked here** says why in the note: a missing table, a fault or platform DATA lacks,
  the paper's own dataset, an interval across the bound, or a rule chosen on the data it would judge.
"""


def _cell(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def doc_counts(claims: pl.DataFrame, kind: str = "finding") -> dict[str, dict[str, int]]:
    """Per counted column (:data:`COUNTED`), the number of ``kind`` rows with each status.

    >>> df = pl.DataFrame({"kind": ["finding", "finding"], "status_paper_method": ["reproduced", "differs"],
    ...                    "status_default": ["differs", "differs"],
    ...                    "status_public_dataset": ["cannot be checked here"] * 2})
    >>> doc_counts(df)["status_default"]
    {'reproduced': 0, 'differs': 2, 'cannot be checked here': 0}
    """
    sel = claims.filter(pl.col("kind") == kind)
    return {col: {s: int((sel[col] == s).sum()) if col in sel.columns else 0 for s in CLAIM_STATUSES}
            for col, _ in COUNTED}


def _ours(r: dict, setting: str) -> str:
    ours, status = {s: (o, st) for s, o, st in SETTING_COLUMNS}[setting]
    v = r.get(ours)
    return f"{_cell(v) if v is not None else '—'} ({MARKS.get(r.get(status), '?')})"


def _group(section: str) -> str:
    """The document's group of a section: its first part, figure and table left on.

    >>> _group("§5.3 Fig. 5"), _group("§3.1, §4.1"), _group("§6 packet loss")
    ('§5.3 Fig. 5', '§3.1', '§6 packet loss')
    """
    return section.split(",")[0].strip()


def _paper_order(group: str) -> tuple[int, tuple[int, ...], str]:
    """Groups in the paper's order: the abstract, the numbered sections, the appendix.

    >>> sorted(["App. G.1", "§5.3 Fig. 5", "§10", "Abstract", "§5.3"], key=_paper_order)
    ['Abstract', '§5.3', '§5.3 Fig. 5', '§10', 'App. G.1']
    """
    if group.startswith("§"):
        head = group[1:].split(" ", 1)[0]
        return 1, tuple(int(p) for p in head.split(".") if p.isdigit()), group
    return (0 if group.startswith("Abstract") else 2), (), group


def _grouped(rows: pl.DataFrame) -> dict[str, list[dict]]:
    """The rows by :func:`_group`, groups in the paper's order, rows in the catalogue's."""
    groups: dict[str, list[dict]] = {}
    for r in rows.iter_rows(named=True):
        groups.setdefault(_group(str(r["section"])), []).append(r)
    return {g: groups[g] for g in sorted(groups, key=_paper_order)}


def claims_markdown(claims: pl.DataFrame, *, source: str = "", when: str = "") -> str:
    """The document: where it comes from, the counts per setting, how to read it, then every
    finding grouped by section (with each group's counts) and the settings apart, each row's
    values, statuses, tolerance and reason as the CSV has them."""
    counts = doc_counts(claims)
    lines = ["# The paper beside us: Reveal's claims against this reproduction", ""]
    lines += [
        f"<!-- written by reveal_lab.studies.write_claims_doc from {source or 'paper_vs_reproduced.csv'}; "
        "regenerate, do not edit (python scripts/claims_doc.py OUT) -->",
        "",
    ]
    data = sorted(set(claims["data"].drop_nulls())) if "data" in claims.columns else []
    machines = sorted(set(claims["machine"].drop_nulls())) if "machine" in claims.columns else []
    lines += [
        f"Written {when or dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')} from the "
        f"{source or 'paper_vs_reproduced.csv'}.",
        "",
        "What the rows were computed on (the `data` column): " + ("; ".join(data) or "not named") + ".",
        "",
        "The machines behind them (the `machine` column; a live measurement names its load average before → "
        "after): " + ("; ".join(machines) or "not named") + ".",
        "",
    ]
    n = claims.filter(pl.col("kind") == "finding").height
    lines += [
        "## Counts",
        "",
        f"| {n} findings | reproduced | differ | cannot be checked here |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {label} | {c[REPRODUCED]} | {c[DIFFERS]} | {c[CANNOT]} |"
        for (col, label), c in zip(COUNTED, counts.values(), strict=True)
    ]
    s = doc_counts(claims, "setting")["status_paper_method"]
    lines += [
        "",
        f"Settings of the paper's method, listed apart: {sum(s.values())} ({s[REPRODUCED]} as the paper "
        f"states them, {s[DIFFERS]} not, {s[CANNOT]} cannot be checked here).",
        "",
    ]
    lines += ["## How to read it", "", _HOW.format(approx=APPROX, level=LEVEL, margin=NO_CHANGE_MARGIN)]
    head = (
        "| claim | paper | ours, paper's method | ours, default | public dataset | tolerance | reason |\n"
        "|---|---|---|---|---|---|---|"
    )
    for kind, title in (("finding", "Findings by section"), ("setting", "Settings of the paper's method")):
        lines += [f"## {title}", ""]
        for g, rs in _grouped(claims.filter(pl.col("kind") == kind)).items():
            tally = ", ".join(
                f"{label}: {sum(r[col] == REPRODUCED for r in rs)} ✓ {sum(r[col] == DIFFERS for r in rs)} ✗ "
                f"{sum(r[col] == CANNOT for r in rs)} n/a"
                for col, label in COUNTED[:2]
            )
            lines += [f"### {g} ({len(rs)}; {tally})", "", head]
            for r in rs:
                pub = (
                    f"{_cell(r.get('public_dataset'))} ({MARKS.get(r.get('status_public_dataset'), '?')})"
                    if r.get("public_dataset")
                    else ""
                )
                lines.append(
                    f"| `{r['claim_id']}` ({_cell(r['section'])}): {_cell(r['quote'])} | "
                    f"{_cell(r['paper_value'])} {_cell(r['unit'])} | {_ours(r, 'paper')} | "
                    f"{_ours(r, 'default')} | {pub} | {_cell(r.get('tolerance'))} | {_cell(r['note'])} |"
                )
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


#: a quote or note longer than this is folded on the page (its first words shown)
FOLD_AT = 90
#: the page's CSS class of each status
STATUS_CLASS = {REPRODUCED: "reproduced", DIFFERS: "differs", CANNOT: "cannot"}


def _fold(text: object) -> dict[str, str]:
    """``{"full", "short"}``: ``short`` empty when the text fits unfolded.

    >>> _fold("a b"), _fold("word " * 30)["short"][-1]
    ({'full': 'a b', 'short': ''}, '…')
    """
    full = "" if text is None else str(text)
    if len(full) <= FOLD_AT:
        return {"full": full, "short": ""}
    return {"full": full, "short": full[:FOLD_AT].rsplit(" ", 1)[0] + " …"}


def _page_cell(r: dict, ours: str | None, status: str) -> dict[str, str]:
    v = r.get(ours) if ours else None
    st = r.get(status) or CANNOT
    return {
        "value": "—" if v is None else f"{float(v):.4g}",
        "status": st,
        "cls": STATUS_CLASS.get(st, "cannot"),
    }


def claims_page(claims: pl.DataFrame) -> dict[str, object]:
    """What ``index.html`` shows of the claims: the findings' counts per counted column
    (:data:`COUNTED`), then the findings grouped by section (each group with its counts per
    setting) and the settings apart; each row's quote and note folded past :data:`FOLD_AT`
    characters, each status with its CSS class.

    >>> df = pl.DataFrame({"claim_id": ["a"], "section": ["§5.3 Fig. 5"], "kind": ["finding"], "quote": ["q"],
    ...                    "paper_value": ["1"], "unit": ["%"], "tolerance": ["none"],
    ...                    "ours_paper_method": [0.5],
    ...                    "status_paper_method": ["differs"], "ours_default": [None],
    ...                    "status_default": ["cannot be checked here"], "public_dataset": [""],
    ...                    "status_public_dataset": ["cannot be checked here"], "note": ["n"]})
    >>> page = claims_page(df)
    >>> first = page["groups"][0]
    >>> page["counts"][0]["counts"], first["title"], first["rows"][0]["cells"][0]["cls"]
    ([0, 1, 0], '§5.3 Fig. 5', 'differs')
    """
    counts = doc_counts(claims)
    out: dict[str, object] = {
        "statuses": [{"name": s, "cls": STATUS_CLASS[s]} for s in CLAIM_STATUSES],
        "counts": [
            {"label": label, "counts": [counts[col][s] for s in CLAIM_STATUSES]} for col, label in COUNTED
        ],
        "settings": [label for _, label in COUNTED[:2]],
    }
    for kind, key in (("finding", "groups"), ("setting", "setting_groups")):
        groups = _grouped(claims.filter(pl.col("kind") == kind))
        out[key] = [
            {
                "title": g,
                "n": len(rs),
                "tally": [
                    [sum(r.get(col) == s for r in rs) for s in CLAIM_STATUSES] for col, _ in COUNTED[:2]
                ],
                "rows": [
                    {
                        "id": r["claim_id"],
                        "section": r["section"],
                        "quote": _fold(r["quote"]),
                        "paper": str(r["paper_value"]) if r.get("rule") == "qualitative"
                        else f"{r['paper_value']} {r.get('unit') or ''}".strip(),
                        "tolerance": r.get("tolerance") or "",
                        "cells": [_page_cell(r, o, st) for _, o, st in SETTING_COLUMNS],
                        "public": {
                            **_page_cell(r, None, "status_public_dataset"),
                            **_fold(r.get("public_dataset") or ""),
                        },
                        "note": _fold(r.get("note") or ""),
                        "where": f"data: {r.get('data') or ''}; machine: {r.get('machine') or ''}",
                    }
                    for r in rs
                ],
            }
            for g, rs in groups.items()
        ]
    return out


def _preset(out: Path) -> str:
    """The preset the notebooks in ``out/notebooks`` ran with (their papermill parameters)."""
    for nb in sorted((out / "notebooks").glob("*.ipynb")):
        try:
            params = json.loads(nb.read_text()).get("metadata", {}).get("papermill", {}).get("parameters", {})
        except (OSError, ValueError):
            continue
        if "smoke" in params:
            return "smoke" if params["smoke"] else "full"
    return "unknown"


def _commit() -> str:
    from reveal_lab.config import PROJECT_ROOT

    try:
        out = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out or "unknown"


def _commit_of(doc: Path) -> str | None:
    """The commit a document written in a reproduction names (``code at commit X``), if any.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "CLAIMS.md"
    >>> _ = p.write_text("<!-- ... (preset full, code at commit abc1234); ... -->")
    >>> _commit_of(p), _commit_of(p.with_name("none.md"))
    ('abc1234', None)
    """
    if not doc.exists():
        return None
    m = re.search(r"code at commit ([0-9a-f]{4,40}|unknown)\)", doc.read_text()[:2000])
    return m.group(1) if m else None


def write_claims_doc(out_dir: str | Path, dest: str | Path | None = None) -> Path:
    """Write ``dest`` (default ``out_dir/CLAIMS.md``) from ``out_dir/paper_vs_reproduced.csv``,
    naming the preset the notebooks ran with, the commit of the code that wrote the CSV (the
    current one when writing ``out_dir/CLAIMS.md`` itself; for another ``dest``, the one that
    file names) and when the CSV was written."""
    out = Path(out_dir)
    csv = out / "paper_vs_reproduced.csv"
    claims = pl.read_csv(csv, infer_schema_length=0).with_columns(
        pl.col(c).cast(pl.Float64) for _, c, _ in SETTING_COLUMNS
    )
    path = Path(dest) if dest else out / CLAIMS_DOC
    commit = (None if path == out / CLAIMS_DOC else _commit_of(out / CLAIMS_DOC)) or _commit()
    when = dt.datetime.fromtimestamp(csv.stat().st_mtime, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    source = f"{csv.name} of a reproduction (preset {_preset(out)}, code at commit {commit})"
    path.write_text(claims_markdown(claims, source=source, when=when))
    return path
