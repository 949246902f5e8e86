"""The anomaly report: ``anomalies.csv``, ``summary.json``, ``report.md``, ``report.html``."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from reveal_lab.attribution._attribute import EVIDENCE_SCHEMA
from reveal_lab.pipeline._detect import ANOMALIES_COLUMNS, Detection

__all__ = ["write_report", "ANOMALIES_COLUMNS", "REPORT_FILES"]

REPORT_FILES: tuple[str, ...] = ("anomalies.csv", "summary.json", "report.md", "report.html")


def _json_default(o: Any) -> Any:  # noqa: ANN401
    if hasattr(o, "isoformat"):
        return o.isoformat()
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def _clean(o: Any) -> Any:  # noqa: ANN401 - NaN/inf are not JSON
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def _table4(det: Detection, max_rows: int) -> pl.DataFrame:
    """One row per anomalous window (best evidence first): Table-4 style."""
    ev = det.evidence
    if ev.height == 0:
        return pl.DataFrame()
    top = ev.filter(pl.col("rank") == 1).sort(["agreement", "combined"], descending=True).head(max_rows)
    w = det.windows.select("window_id", "host", "subsystems")
    return top.join(w, on=["window_id", "host"], how="left").select(
        "window_id",
        "start",
        "end",
        "host",
        "methods",
        "agreement",
        "subsystems",
        "metric",
        "feature",
        "claim",
    )


def _md_table(df: pl.DataFrame) -> str:
    if df.height == 0:
        return ""
    cols = df.columns
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.iter_rows():
        out.append("| " + " | ".join(_cell(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(out)


def _cell(v: Any) -> str:  # noqa: ANN401
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3g}"
    if hasattr(v, "isoformat"):
        return v.isoformat(sep=" ", timespec="milliseconds") if hasattr(v, "hour") else v.isoformat()
    return str(v)


def _html_table(df: pl.DataFrame) -> str:
    if df.height == 0:
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>" for row in df.iter_rows()
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _subsystem_table(s: dict[str, Any]) -> pl.DataFrame:
    rows = [
        {"subsystem": k, "windows": v["windows"], "share of windows": v["share"], "top-ranked in": v["top"]}
        for k, v in sorted(s["per_subsystem"].items(), key=lambda kv: -kv[1]["windows"])
    ]
    return pl.DataFrame(rows) if rows else pl.DataFrame()


def _detector_table(s: dict[str, Any], thresholds: dict[str, dict[str, float]]) -> pl.DataFrame:
    rows = []
    for m, v in s["per_detector"].items():
        thr = {h: t[m] for h, t in thresholds.items() if m in t}
        rows.append(
            {
                "detector": m,
                "flagged windows": v["flagged"],
                "share": v["share"],
                **(
                    {"threshold": next(iter(thr.values()))}
                    if len(thr) == 1
                    else {"threshold per host": ", ".join(f"{h} {x:.3g}" for h, x in thr.items())}
                ),
            }
        )
    return pl.DataFrame(rows)


def _sections(det: Detection, max_rows: int) -> list[tuple[str, str, pl.DataFrame | None]]:
    """(heading, paragraph, table) per section of one run."""
    s = det.summary
    hosts = ", ".join(s["hosts"])
    fit = {
        "self": "fit on the run itself (the paper's setting: each detector flags about the top "
        f"{100 * (1 - det.config.get('zscore_quantile', 0.99)):.0f} % of windows)",
        "robust": "fit on the run itself, thresholds at median + k·MAD of the run's own scores "
        f"(false-alarm budget {det.config.get('false_alarm_rate')})",
        "calibrated": "fit on baseline runs, thresholds from their out-of-sample scores "
        f"(false-alarm budget {det.config.get('false_alarm_rate')})",
    }.get(det.fit_mode, "fit on baseline runs (thresholds from the baseline's scores)")
    trim = det.config.get("trim", {}).get("run")
    prune = det.config.get("pruning", {})
    intro = (
        f"{s['windows']} windows of {det.config['window_s']:g} s every {det.config['stride_s']:g} s "
        f"on {hosts}; detectors {', '.join(det.methods)}, {fit}. "
        f"A window counts as anomalous when at least {det.min_agreement} detector(s) flag it."
        + (
            f" Trimmed: {trim['cut_start_s']:g} s at the start, {trim['cut_end_s']:g} s at the end "
            f"({trim['how']})."
            if trim
            else ""
        )
        + (
            f" Metric space: {prune['n_selected']} pruned metrics ({prune.get('source', '')})."
            if prune.get("applied")
            else " Metric space: every metric."
        )
    )
    out: list[tuple[str, str, pl.DataFrame | None]] = [(f"Run {det.run_id}", intro, None)]
    if s["no_anomaly"]:
        out.append(
            (
                "Result",
                f"**No anomaly found**: no window reaches the agreement threshold ({det.min_agreement}).",
                None,
            )
        )
    else:
        out.append(
            (
                "Result",
                f"**{s['anomalous']} anomalous window(s)** ({100 * s['anomalous_share']:.1f} % of windows).",
                None,
            )
        )
        out.append(
            (
                "Anomalous windows (strongest evidence first)",
                "One row per window: its detectors, agreement, (joint) subsystems and the strongest "
                "metric–feature evidence. All evidence rows are in `anomalies.csv`.",
                _table4(det, max_rows),
            )
        )
        out.append(
            (
                "Per-subsystem breakdown",
                "Windows naming each subsystem (joint attribution counts a window once per subsystem named).",
                _subsystem_table(s),
            )
        )
    out.append(("Detectors", "", _detector_table(s, det.thresholds)))
    if s.get("per_host"):
        rows = [
            {
                "host": h,
                "windows": v["windows"],
                "anomalous": v["anomalous"],
                "top subsystems": ", ".join(
                    k for k, _ in sorted(v["per_subsystem"].items(), key=lambda kv: -kv[1]["windows"])[:3]
                ),
            }
            for h, v in s["per_host"].items()
        ]
        out.append(("Per host", "", pl.DataFrame(rows)))
    if det.warnings:
        out.append(("Notes", "\n".join(f"- {w}" for w in det.warnings[:50]), None))
    return out


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:80em}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .5em;
font-size:.9em;vertical-align:top}th{background:#f3f3f3}.none{color:#2a7a2a;font-weight:bold}"""


def write_report(
    detections: Detection | Sequence[Detection],
    out_dir: str | Path,
    *,
    max_rows: int = 50,
    crosshost: pl.DataFrame | None = None,
) -> dict[str, Path]:
    """Write the report of one or several detections into ``out_dir``.

    Files: ``anomalies.csv`` (exactly :data:`ANOMALIES_COLUMNS`, one row per window ×
    metric–feature evidence; a header only when nothing is anomalous), ``summary.json``
    (per run: windows, anomalous share per detector, per subsystem and per host),
    ``report.md`` and ``report.html`` (Table-4-style table, per-subsystem breakdown).

    Cross-host deviation (a detection's own, for runs with three or more hosts, or
    ``crosshost`` computed over several runs, see :func:`reveal_lab.crosshost.deviation`)
    goes to ``crosshost.csv`` and a section listing the persistent deviations.

    Returns the paths written, by file name.
    """
    dets = [detections] if isinstance(detections, Detection) else list(detections)
    if not dets:
        raise ValueError("write_report needs at least one detection")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frames = [d.anomalies() for d in dets]
    csv = (
        pl.concat(frames, how="vertical")
        if frames
        else pl.DataFrame(schema={c: EVIDENCE_SCHEMA[c] for c in ANOMALIES_COLUMNS})
    )
    csv = csv.select(ANOMALIES_COLUMNS)
    paths = {name: out / name for name in REPORT_FILES}
    csv.write_csv(paths["anomalies.csv"], datetime_format="%Y-%m-%d %H:%M:%S%.3f", float_precision=6)

    summaries = [d.summary or d.make_summary() for d in dets]
    total_w = sum(s["windows"] for s in summaries)
    total_a = sum(s["anomalous"] for s in summaries)
    summary = {
        "runs": summaries,
        "n_runs": len(dets),
        "windows": total_w,
        "anomalous": total_a,
        "anomalous_share": total_a / total_w if total_w else 0.0,
        "no_anomaly": total_a == 0,
        "evidence_rows": csv.height,
        "files": list(REPORT_FILES),
    }
    paths["summary.json"].write_text(json.dumps(_clean(summary), indent=2, default=_json_default) + "\n")

    title = "reveal-lab anomaly report"
    headline = (
        "No anomaly found in any run."
        if total_a == 0
        else f"{total_a} anomalous window(s) out of {total_w} in {len(dets)} run(s)."
    )
    md = [f"# {title}", "", headline, ""]
    body = [f"<h1>{title}</h1>", f"<p class='{'none' if total_a == 0 else ''}'>{html.escape(headline)}</p>"]
    for d in dets:
        for i, (head, para, table) in enumerate(_sections(d, max_rows)):
            md += [f"{'##' if i == 0 else '###'} {head}", ""]
            body.append(f"<h{2 if i == 0 else 3}>{html.escape(head)}</h{2 if i == 0 else 3}>")
            if para:
                md += [para, ""]
                cls = " class='none'" if "No anomaly" in para else ""
                body.append(f"<p{cls}>" + html.escape(para).replace("**", "").replace("\n", "<br>") + "</p>")
            if table is not None and table.height:
                md += [_md_table(table), ""]
                body.append(_html_table(table))
    md += [
        "",
        "Columns of `anomalies.csv`: " + ", ".join(f"`{c}`" for c in ANOMALIES_COLUMNS) + ". `score` is "
        "the pair's share of the window's attribution, averaged over the detectors that flag the window.",
        "",
    ]
    xh = [d.crosshost for d in dets if d.crosshost is not None]
    if crosshost is not None:
        xh.append(crosshost)
    if xh:
        allx = pl.concat(xh, how="vertical")
        paths["crosshost.csv"] = out / "crosshost.csv"
        allx.write_csv(paths["crosshost.csv"], float_precision=6)
        flagged = allx.filter(pl.col("persistent")).select(
            "host", "subsystem", "kind", "key", "z", "deviating_share", "claim"
        )
        head = "Cross-host deviation"
        para = (
            f"{flagged.height} persistent deviation(s) of a host from the cluster median "
            "(static metrics compared as values). All comparisons are in `crosshost.csv`."
            if flagged.height
            else "No host deviates persistently from the cluster median."
        )
        md += [f"## {head}", "", para, ""]
        body.append(f"<h2>{head}</h2><p>{html.escape(para)}</p>")
        if flagged.height:
            md += [_md_table(flagged.head(max_rows)), ""]
            body.append(_html_table(flagged.head(max_rows)))
        summary["crosshost_persistent"] = flagged.height
        paths["summary.json"].write_text(json.dumps(_clean(summary), indent=2, default=_json_default) + "\n")
    paths["report.md"].write_text("\n".join(md))
    paths["report.html"].write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title><style>{_CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )
    return paths
