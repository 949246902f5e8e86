#!/usr/bin/env python
"""Turn every ``benchmarks/results/*.json`` into one Markdown table:
``benchmarks/results/SUMMARY.md`` (the tables ``docs/RESULTS.md`` shows).

    .venv/bin/python benchmarks/summarize.py [--results DIR] [--out FILE]

It never crashes on a result it does not understand: a missing JSON, one that does not
parse, or one in another shape is listed as "not run" / "unreadable" with the reason.

Shapes understood (see ``benchmarks/README.md``):

* speed: ``{"benchmark", "results": [{"case", "unit", "ours": {"name", "median", ...},
  "alternative": {"name", "median", ...}, "ratio"?, "higher_is_better"?, "peak_mb"?}]}``;
  ``ours`` / ``alternative`` may also be plain numbers, and ``alternative`` may be absent.
  Flat rows ``{"case", "ours_median", "alt_median", "ours_name", "alt_name", "unit"}`` work too.
  The ratio shown is how many times better ours is (``alt/ours`` for times, ``ours/alt``
  when ``higher_is_better``), computed from the medians when the row gives none.
* ``labelled_servers``: the detection/attribution summary of ``reveal-lab bench labelled``.
* ``lone_runs``: ``{"summary": {setting: {"fault_free_share_median", ..., "by_fault": {fault:
  [{"model", "phase", "episode_share", "top"}]}}}, "min_run"}`` (``benchmarks/lone_runs.py``).
* ``sentinel_counters``: ``{"by_min_samples": {K: {"false_alarm_share", "episodes_found": {name:
  {"found", "episodes"}}}}}`` (``benchmarks/sentinel_counters.py``).
* ``crosshost_references``: ``{"by_refs": {m: {"fault_free_hosts_flagged", "fault_free_hosts_judged",
  "labels_found", "labels_judged", "by_fault": {fault: {"found", "judged"}}}}}``
  (``benchmarks/crosshost_references.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: benchmarks the tables of docs/RESULTS.md list, in order, with what each measures
EXPECTED: dict[str, str] = {
    "features_vs_tsfresh": "window features vs tsfresh (same features, same windows)",
    "dtw_vs_tslearn": "DTW distances vs tslearn (same distances)",
    "detectors": "the three detectors (fit + score)",
    "collector_overhead": "collector vs `perf stat -I 100`",
    "end_to_end": "end-to-end `detect`, 30-min 700-channel run, peak memory",
    "scale_throughput": "Dask scale-out throughput",
    "watch_latency": "live `watch` latency",
    "labelled_servers": "detection + attribution on labelled SMD/ASD servers",
    "lone_runs": (
        "lab runs detected alone (no baseline): windows flagged, `--min-run 1` vs the default for a run "
        "alone (4)"
    ),
    "sentinel_counters": "lab runs: counters never non-zero in fault-free runs, as a rule alone (a study)",
    "crosshost_references": "lab DDP runs: cross-host deviation against 2, 3, 4 fault-free runs (a study)",
}


def _num(x: object) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return float(x) if math.isfinite(float(x)) else None
    return None


def _side(row: dict, key: str) -> tuple[str | None, float | None, dict]:
    """(name, median, extra) of ``ours`` / ``alternative`` in any accepted spelling."""
    v = row.get(key)
    if isinstance(v, dict):
        med = _num(v.get("median"))
        if med is None:
            med = _num(v.get("median_s")) or _num(v.get("value"))
        return v.get("name"), med, v
    if _num(v) is not None:
        return None, _num(v), {}
    short = {"ours": "ours", "alternative": "alt"}[key]
    return row.get(f"{short}_name"), _num(row.get(f"{short}_median")), {}


def _fmt(x: float | None, unit: str | None = None) -> str:
    if x is None:
        return "–"
    a = abs(x)
    s = f"{x:.3g}" if a < 1000 else f"{x:,.0f}"
    return f"{s} {unit}".strip() if unit else s


def _collector_overhead_rows(data: dict) -> list[dict] | None:
    """``collector_overhead.json`` (its own shape): CPU % of a core per interval vs perf stat."""
    by_iv = data.get("median_by_interval_ms")
    if not isinstance(by_iv, dict):
        return None
    rows: list[dict] = []
    for iv, s in by_iv.items():
        if not isinstance(s, dict):
            continue
        perf = s.get("perf", {}) if isinstance(s.get("perf"), dict) else {}
        for k in ("paper", "procfs_slow", "procfs", "full", "loop"):
            v = s.get(k)
            if not isinstance(v, dict) or _num(v.get("schedstat_pct_of_core")) is None:
                continue
            row = {
                "case": f"`{k}` collector every {iv} ms ({v.get('channels', '?')} channels), CPU",
                "unit": "% of a core",
                "ours": {"name": k, "median": v["schedstat_pct_of_core"]},
            }
            # the compiled hot loop against the same probes in the interpreted loop, else perf stat
            interp = s.get(f"{k}_interpreted")
            if isinstance(interp, dict) and _num(interp.get("schedstat_pct_of_core")):
                row["alternative"] = {
                    "name": f"{k}, interpreted loop",
                    "median": interp["schedstat_pct_of_core"],
                }
                if _num(perf.get("schedstat_pct_of_core")):
                    row["note"] = f"perf stat -I {iv}: {perf['schedstat_pct_of_core']:.3g} %"
            elif _num(perf.get("schedstat_pct_of_core")):
                row["alternative"] = {"name": f"perf stat -I {iv}", "median": perf["schedstat_pct_of_core"]}
            rows.append(row)
    size = data.get("bytes_on_disk")
    if isinstance(size, dict) and _num(size.get("folder_bytes_per_s")) is not None:
        rows.append(
            {
                "case": f"bytes on disk, all probes at {size.get('interval_ms', '?')} ms "
                f"({size.get('channels', '?')} channels)",
                "unit": "B/s",
                "ours": {"name": "collector", "median": size["folder_bytes_per_s"]},
                "note": "paper: 14-22 kB/s filtered",
            }
        )
    return rows or None


def _detectors_rows(data: dict) -> list[dict] | None:
    """``detectors.json``: fit+score median per detector and BLAS setting (no alternative)."""
    res = data.get("results")
    if not isinstance(res, dict):
        return None
    size = f"{data.get('n_windows', '?')} windows x {data.get('n_features', '?')} features"
    rows: list[dict] = []
    for setting, r in res.items():
        if not isinstance(r, dict) or not isinstance(r.get("fit_plus_score_median_s"), dict):
            continue
        for det, v in r["fit_plus_score_median_s"].items():
            if _num(v) is not None:
                rows.append(
                    {
                        "case": f"{det} fit + score, {size} ({setting})",
                        "unit": "s",
                        "ours": {"name": det, "median": v},
                    }
                )
        if _num(r.get("total_median_s")) is not None:
            rows.append(
                {
                    "case": f"all three, {size} ({setting})",
                    "unit": "s",
                    "ours": {"name": "total", "median": r["total_median_s"]},
                    "note": f"{data.get('repeat', '?')} repeats",
                }
            )
    return rows or None


def _end_to_end_rows(data: dict) -> list[dict] | None:
    """``end_to_end.json``: wall time of ``reveal-lab detect`` and peak memory."""
    wall = _num(data.get("cli_wall_s"))
    if wall is None:
        return None
    note = []
    if _num(data.get("peak_rss_gb")) is not None:
        note.append(f"peak RSS {data['peak_rss_gb']:.2f} GB")
    t = (data.get("traced") or {}).get("timings_s") if isinstance(data.get("traced"), dict) else None
    if isinstance(t, dict):
        note.append(", ".join(f"{k} {v:.1f} s" for k, v in t.items() if _num(v) is not None))
    return [
        {
            "case": f"`reveal-lab detect`, {data.get('rows', '?')} rows x "
            f"{data.get('channels', '?')} channels",
            "unit": "s",
            "ours": {"name": "detect (CLI)", "median": wall},
            "note": "; ".join(note),
        }
    ]


def _scale_rows(data: dict) -> list[dict] | None:
    """``scale_throughput.json``: in-process per-run time and Dask throughput by workers."""
    rows: list[dict] = []
    for r in data.get("in_process") or []:
        if isinstance(r, dict) and _num(r.get("median_s")) is not None:
            rows.append(
                {
                    "case": f"one run in process, {r.get('rows', '?')} rows x {r.get('cols', '?')} channels",
                    "unit": "s",
                    "ours": {"name": "in process", "median": r["median_s"]},
                }
            )
    for r in data.get("dask") or []:
        if isinstance(r, dict) and _num(r.get("runs_per_minute")) is not None:
            rows.append(
                {
                    "case": f"Dask, {r.get('workers', '?')} worker(s), {r.get('runs', '?')} runs",
                    "unit": "runs/min",
                    "ours": {"name": "dask", "median": r["runs_per_minute"]},
                    "higher_is_better": True,
                    "note": f"peak worker RSS {r['peak_worker_rss_mb']:.0f} MB"
                    if _num(r.get("peak_worker_rss_mb")) is not None
                    else "",
                }
            )
    if rows and _num(data.get("speedup_2_vs_1")) is not None:
        rows[-1]["note"] = (rows[-1].get("note") or "") + f"; 2 vs 1 workers: {data['speedup_2_vs_1']:.2f}x"
    return rows or None


def _watch_rows(data: dict) -> list[dict] | None:
    """``watch_latency.json``: data-to-verdict latency and per-window compute vs alternatives."""

    def med(key: str, d: dict | None = None) -> float | None:
        v = (d if d is not None else data).get(key)
        return _num(v.get("median")) if isinstance(v, dict) else None

    stream = data.get("stream") if isinstance(data.get("stream"), dict) else {}
    what = f"{stream.get('channels', '?')} channels at {stream.get('interval_ms', '?')} ms"
    rows: list[dict] = []
    lat = data.get("data_to_verdict_ms_after_fit")
    if med("data_to_verdict_ms_after_fit") is not None:
        p95 = _num(lat.get("p95"))
        rows.append(
            {
                "case": f"`watch`: data to verdict after the fit, {what}",
                "unit": "ms",
                "ours": {"name": "watch", "median": med("data_to_verdict_ms_after_fit")},
                "note": (f"p95 {p95:.0f} ms; " if p95 is not None else "")
                + f"target {data.get('target_ms', '?')} ms; paper {data.get('paper_end_to_end_s', '?')} s",
            }
        )
    alt = data.get("alternatives_same_run") if isinstance(data.get("alternatives_same_run"), dict) else {}
    fast = med("engine_fast_forest_compute_ms", alt)
    if fast is not None and med("engine_sklearn_forest_compute_ms", alt) is not None:
        rows.append(
            {
                "case": f"`watch`: compute per window, {what}",
                "unit": "ms",
                "ours": {"name": "incremental engine, fast forest", "median": fast},
                "alternative": {
                    "name": "same, scikit-learn forest",
                    "median": med("engine_sklearn_forest_compute_ms", alt),
                },
            }
        )
    if fast is not None and med("naive_full_history_features_ms", alt) is not None:
        rows.append(
            {
                "case": f"`watch`: features per window, {what}",
                "unit": "ms",
                "ours": {"name": "incremental engine", "median": fast},
                "alternative": {
                    "name": "features over the full history",
                    "median": med("naive_full_history_features_ms", alt),
                },
            }
        )
    return rows or None


#: adapters for result files written in their own shape: name -> data -> standard rows
ADAPTERS = {
    "collector_overhead": _collector_overhead_rows,
    "detectors": _detectors_rows,
    "end_to_end": _end_to_end_rows,
    "scale_throughput": _scale_rows,
    "watch_latency": _watch_rows,
}


def speed_rows(name: str, data: dict) -> list[str]:
    rows = data.get("results")
    if name in ADAPTERS and not isinstance(rows, list):
        rows = ADAPTERS[name](data)
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise ValueError("no 'results' list of rows")
    out = []
    for r in rows:
        case = str(r.get("case", "?"))
        unit = r.get("unit")
        oname, omed, oextra = _side(r, "ours")
        aname, amed, _ = _side(r, "alternative")
        if omed is None:
            raise ValueError(f"row {case!r} has no median for 'ours'")
        hib = bool(r.get("higher_is_better", False))
        ratio = _num(r.get("ratio"))
        if ratio is None and amed is not None and omed and amed:
            ratio = omed / amed if hib else amed / omed
        peak = _num(r.get("peak_mb")) or _num(oextra.get("peak_mb"))
        notes = [str(r["note"])] if r.get("note") else []
        if peak is not None:
            notes.append(f"peak {peak:,.0f} MB")
        out.append(
            f"| {name} | {case} | {oname or 'reveal-lab'}: {_fmt(omed, unit)} | "
            f"{(aname or 'alternative') + ': ' + _fmt(amed, unit) if amed is not None else '–'} | "
            f"{_fmt(ratio) + '×' if ratio is not None else '–'} | {'; '.join(notes)} |"
        )
    return out


LABELLED_COLS = [
    ("best_f1", "F1 pw (best thr)"),
    ("decision_precision", "P own"),
    ("decision_recall", "R own"),
    ("decision_f1", "F1 own thr"),
    ("auc_pr", "AUC-PR"),
    ("hit@100", "Hit@100"),
    ("hit@150", "Hit@150"),
    ("ndcg@100", "NDCG@100"),
    ("ndcg@150", "NDCG@150"),
    ("random_hit@150", "random Hit@150"),
    ("detected_segment_share", "segments detected"),
    ("best_f1_pa", "F1 PA (inflated)"),
]


def labelled_table(data: dict) -> list[str]:
    res = data.get("results")
    if not isinstance(res, dict) or not res:
        raise ValueError("no 'results' by method")
    head = "| set | method | " + " | ".join(c[1] for c in LABELLED_COLS) + " |"
    lines = [head, "|---|---|" + "---:|" * len(LABELLED_COLS)]
    fams: list[str] = []
    for r in res.values():
        for f in r.get("mean") or {}:
            if f not in fams:
                fams.append(f)
    fams = [f for f in fams if f != "all"] + (["all"] if "all" in fams else [])
    for fam in fams:
        for method, r in res.items():
            agg = (r.get("mean") or {}).get(fam)
            if not isinstance(agg, dict):
                continue
            vals = " | ".join(_fmt(_num(agg.get(k))) for k, _ in LABELLED_COLS)
            lines.append(f"| {fam} ({agg.get('n_servers', '?')}) | {method} | {vals} |")
    return lines


def lone_runs_table(data: dict) -> list[str]:
    """``lone_runs.json``: one row per setting (``plain`` = every window over a threshold,
    ``--min-run 1`` without the sentinel rule; ``sustained`` = the default decision for a run
    alone, ``--min-run N`` and the sentinel rule for a run alone), the fault-free runs' flagged
    share and each fault run's episode share."""
    summ = data.get("summary")
    if not isinstance(summ, dict) or not summ:
        raise ValueError("no 'summary' by setting")
    names = {
        "plain": "`--min-run 1`",
        "sustained": f"default for a run alone: `--min-run {data.get('min_run', '?')}` + sentinel rule",
    }
    lines = [
        "| setting | fault-free runs | flagged share: median / mean / max | "
        "fault runs: share of episode windows flagged (top subsystem) |",
        "|---|---:|---|---|",
    ]
    for key, s in summ.items():
        if not isinstance(s, dict):
            raise ValueError(f"setting {key!r} is not an object")
        ff = " / ".join(_fmt(_num(s.get(f"fault_free_share_{k}"))) for k in ("median", "mean", "max"))
        faults = []
        for fault, rows in (s.get("by_fault") or {}).items():
            for r in rows:
                faults.append(
                    f"{fault} {r.get('model')} {r.get('phase')} "
                    f"{_fmt(_num(r.get('episode_share')))} ({r.get('top') or '–'})"
                )
        n_free = s.get("fault_free_runs", "?")
        lines.append(f"| {names.get(key, key)} | {n_free} | {ff} | {'; '.join(faults)} |")
    return lines


def _study_rows(data: dict, key: str, header: str, cells) -> list[str]:  # noqa: ANN001
    """A study's table: ``header`` (three columns), then ``cells(name, entry)`` (its three cells)
    for each entry of ``data[key]``; a missing or empty ``key`` is a ValueError."""
    by = data.get(key)
    if not isinstance(by, dict) or not by:
        raise ValueError(f"no {key!r}")
    return [header, "|---:|---:|---|", *("| " + " | ".join(cells(k, v)) + " |" for k, v in by.items())]


def sentinel_table(data: dict) -> list[str]:
    """``sentinel_counters.json``: one row per ``K``, false alarms and episodes found per fault."""
    return _study_rows(
        data,
        "by_min_samples",
        "| K (samples of 30) | false alarms | episodes found (fault@magnitude found/all) |",
        lambda k, v: (
            k,
            _fmt(_num(v.get("false_alarm_share"))),
            "; ".join(f"{n} {c['found']}/{c['episodes']}" for n, c in v["episodes_found"].items()),
        ),
    )


def crosshost_references_table(data: dict) -> list[str]:
    """``crosshost_references.json``: one row per number of fault-free reference runs."""
    return _study_rows(
        data,
        "by_refs",
        "| fault-free reference runs | fault-free hosts flagged | whole-run labels found (per fault) |",
        lambda m, v: (
            m,
            f"{v['fault_free_hosts_flagged']}/{v['fault_free_hosts_judged']} "
            f"({_fmt(_num(v.get('false_alarm_share')))})",
            f"{v['labels_found']}/{v['labels_judged']}: "
            + "; ".join(f"{k} {c['found']}/{c['judged']}" for k, c in v["by_fault"].items()),
        ),
    )


def summarize(results_dir: Path) -> str:
    found = {p.stem: p for p in sorted(results_dir.glob("*.json")) if p.stem != "run_all"}
    run_log: dict = {}
    if (results_dir / "run_all.json").is_file():
        try:
            run_log = {r["name"]: r for r in json.loads((results_dir / "run_all.json").read_text())["runs"]}
        except (ValueError, KeyError, TypeError):
            run_log = {}
    speed = [
        "| benchmark | case | reveal-lab (median) | alternative (median) | ratio (× better) | notes |",
        "|---|---|---:|---:|---:|---|",
    ]
    status: list[str] = []
    labelled: list[str] = []
    studies: list[str] = []
    machines: dict[str, str] = {}
    names = list(EXPECTED) + sorted(n for n in found if n not in EXPECTED)
    for name in names:
        path = found.get(name)
        what = EXPECTED.get(name, "")
        if path is None:
            why = run_log.get(name, {}).get("status", "no result JSON")
            status.append(f"- `{name}` ({what}): not run ({why})")
            continue
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise ValueError("top level is not an object")
            if name.startswith("labelled_"):
                labelled += [f"**{name}**", "", *labelled_table(data), ""]
            elif name == "sentinel_counters":
                studies += [f"**{name}** ({data.get('date', '?')})", "", *sentinel_table(data), ""]
            elif name == "crosshost_references":
                studies += [f"**{name}** ({data.get('date', '?')})", "", *crosshost_references_table(data), ""]
            elif name == "lone_runs":
                studies += [f"**{name}** (host {data.get('host', '?')}, {data.get('date', '?')})", ""]
                studies += [*lone_runs_table(data), ""]
            else:
                speed += speed_rows(name, data)
            m = data.get("machine") if isinstance(data.get("machine"), dict) else data.get("host")
            if isinstance(m, dict):
                machines[name] = ", ".join(
                    f"{k}={v}" for k, v in m.items() if not isinstance(v, (dict, list))
                )
            status.append(f"- `{name}` ({what}): ok" + (f", {path.name}" if what else ""))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            status.append(f"- `{name}` ({what}): not run (unreadable {path.name}: {exc})")
    parts = [
        "# Benchmark summary",
        "",
        "Generated by `benchmarks/summarize.py` from `benchmarks/results/*.json`; "
        "medians of repeated runs, ratios measured in the same run.",
        "",
    ]
    if len(speed) > 2:
        parts += ["## Speed", "", *speed, ""]
    if labelled:
        parts += [
            "## Detection and attribution on labelled server telemetry",
            "",
            "F1 pw (best thr): point-wise F1 at the best threshold in hindsight (no point adjustment); "
            "P / R / F1 own thr: precision, recall and F1 of the pipeline's own decisions (no labels); "
            "Hit/NDCG@P: InterFusion's attribution score over detected labelled segments; random Hit@150: "
            "a random ranking on the same segments; F1 PA: point-adjusted best F1 (inflated, for "
            "comparison with published numbers only).",
            "",
            *labelled,
        ]
    if studies:
        parts += ["## Detection studies", "", *studies]
    parts += ["## Status", "", *status, ""]
    if machines:
        parts += ["## Machines", "", *[f"- `{k}`: {v}" for k, v in machines.items()], ""]
    return "\n".join(parts)


README_BEGIN = "<!-- benchmarks:begin (written by benchmarks/summarize.py; do not edit by hand) -->"
README_END = "<!-- benchmarks:end -->"


def update_readme(readme: Path, summary: str) -> bool:
    """Replace the text between the benchmark markers of ``readme`` with ``summary``
    (headings one level deeper, the summary's title dropped). Returns whether the
    file changed; a README without both markers is left alone."""
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text:
        return False
    lines = summary.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    body = "\n".join("#" + ln if ln.startswith("#") else ln for ln in lines).strip("\n")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    new = f"{head}{README_BEGIN}\n{body}\n{README_END}{tail}"
    if new != text:
        readme.write_text(new)
        return True
    return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=HERE / "results")
    ap.add_argument("--out", type=Path, default=None, help="default: RESULTS/SUMMARY.md")
    ap.add_argument(
        "--readme",
        type=Path,
        default=None,
        help="also rewrite this file's benchmark section (between the markers), e.g. --readme docs/RESULTS.md",
    )
    a = ap.parse_args(argv)
    text = summarize(a.results)
    out = a.out or a.results / "SUMMARY.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    if a.readme is not None and update_readme(a.readme, text):
        print(f"updated the benchmark section of {a.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
