"""``index.html``: one page linking every executed notebook, figure and table."""

from __future__ import annotations

import datetime as dt
import html
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NotebookResult", "write_index"]


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


def _table_html(csv: Path, max_rows: int = 30) -> str:
    import polars as pl

    try:
        df = pl.read_csv(csv, infer_schema_length=0)
    except Exception as exc:  # noqa: BLE001 - the page should still render
        return f"<p class=err>could not read {html.escape(csv.name)}: {html.escape(str(exc))}</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_short(v))}</td>" for v in r) + "</tr>"
        for r in df.head(max_rows).iter_rows()
    )
    more = f"<p class=note>{df.height - max_rows} more rows in the CSV</p>" if df.height > max_rows else ""
    return f"<table><tr>{head}</tr>{rows}</table>{more}"


def _short(v: object) -> str:
    if v is None:
        return ""
    s = str(v)
    try:
        f = float(s)
        if "." in s and len(s) > 8:
            return f"{f:.4g}"
    except ValueError:
        pass
    return s if len(s) < 80 else s[:77] + "…"


def write_index(
    out: Path, results: list[NotebookResult], *, preset: str, data: str, started: dt.datetime
) -> Path:
    """Write ``out/index.html`` (relative links, so the folder can be moved or zipped)."""
    out = Path(out)
    parts = []
    for r in results:
        badge = {"ok": "ok", "failed": "FAILED", "skipped": "not run"}[r.status]
        nb_link = (
            f'<a href="{html.escape(r.executed.relative_to(out).as_posix())}">executed notebook</a>'
            if r.executed and r.executed.exists()
            else ""
        )
        block = [
            f'<section id="{html.escape(Path(r.notebook).stem)}"><h2>{html.escape(r.title)} '
            f'<span class="b {r.status}">{badge}</span></h2>'
            f"<p class=note>{html.escape(r.notebook)} · {r.seconds:.1f} s · {nb_link}</p>"
        ]
        if r.error:
            block.append(f"<pre class=err>{html.escape(r.error)}</pre>")
        for f in r.figures:
            png, pdf = out / "figures" / f"{f}.png", out / "figures" / f"{f}.pdf"
            if png.exists():
                block.append(
                    f'<figure><a href="figures/{html.escape(f)}.pdf"><img src="figures/{html.escape(f)}.png"'
                    f' alt="{html.escape(f)}"></a><figcaption>{html.escape(f)} '
                    f'(<a href="figures/{html.escape(f)}.png">PNG</a>'
                    f"{'' if not pdf.exists() else f', <a href=figures/{html.escape(f)}.pdf>PDF</a>'})"
                    "</figcaption></figure>"
                )
            else:
                block.append(f"<p class=err>figure {html.escape(f)} missing</p>")
        for t in r.tables:
            csv, md = out / "tables" / f"{t}.csv", out / "tables" / f"{t}.md"
            if csv.exists():
                block.append(
                    f'<h3>{html.escape(t)} <small>(<a href="tables/{html.escape(t)}.csv">CSV</a>, '
                    f'<a href="tables/{html.escape(t)}.md">Markdown</a>)</small></h3>' + _table_html(csv)
                )
            elif r.status == "ok" or md.exists():
                block.append(f"<p class=err>table {html.escape(t)} missing</p>")
        block.append("</section>")
        parts.append("\n".join(block))
    n_ok = sum(r.status == "ok" for r in results)
    toc = "".join(
        f'<li><a href="#{html.escape(Path(r.notebook).stem)}">{html.escape(r.title)}</a> '
        f'<span class="b {r.status}">{r.status}</span></li>'
        for r in results
    )
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>reveal-lab reproduce</title>
<style>
body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}}
img{{max-width:100%;border:1px solid #ddd}} figure{{margin:1em 0}}
table{{border-collapse:collapse;font-size:.8em}}
td,th{{border:1px solid #ccc;padding:2px 6px}} .note{{color:#666;font-size:.9em}}
.err{{color:#a00;white-space:pre-wrap}} .b{{font-size:.6em;padding:2px 6px;border-radius:4px;color:#fff}}
.ok{{background:#3a7}} .failed{{background:#c33}} .skipped{{background:#999}}
</style></head><body>
<h1>reveal-lab: reproduced studies</h1>
<p class=note>preset <b>{html.escape(preset)}</b> · data <code>{html.escape(data)}</code> ·
started {started:%Y-%m-%d %H:%M:%S} · {n_ok}/{len(results)} notebooks ok</p>
<ol>{toc}</ol>
{"".join(parts)}
</body></html>
"""
    path = out / "index.html"
    path.write_text(page)
    return path
