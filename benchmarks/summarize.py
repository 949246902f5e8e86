#!/usr/bin/env python
"""Turn every ``benchmarks/results/*.json`` and ``docs/studies/*.json`` into one Markdown
summary: ``benchmarks/results/SUMMARY.md`` (the tables ``docs/RESULTS.md`` shows).

    .venv/bin/python benchmarks/summarize.py [--results DIR] [--studies DIR] [--out FILE] [--readme FILE]

It never crashes on a result it does not understand: a missing JSON, one that does not
parse, or one in another shape is listed as "not run" / "unreadable" with the reason.

What it reads (see ``benchmarks/README.md``):

* timings: every benchmark's result in the harness's one schema (``benchmarks/_harness.py``:
  ``{"schema": 2, "kind": "timing", "command", "date", "commit", "machine", "load_before",
  "load_after", "results": [rows]}``), all read the same way;
* ``labelled_servers``: the detection/attribution summary of ``reveal-lab bench labelled``;
* detection studies (``{"schema": 2, "kind": "study", "study": NAME}``, written by
  ``scripts/studies/NAME.py`` into ``docs/studies/``), each with its own table: ``lone_runs``,
  ``sentinel_counters``, ``crosshost_references``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from _harness import HERE, ROOT, number, validate_timing

#: benchmarks the tables of docs/RESULTS.md list, in order, with what each measures
EXPECTED: dict[str, str] = {
    "features_vs_tsfresh": "window features vs tsfresh (same features, same windows)",
    "dtw_vs_tslearn": "DTW distances vs tslearn (same distances)",
    "detectors": "the three detectors (fit + score)",
    "collector_overhead": "collector vs `perf stat -I 100`",
    "end_to_end": "end-to-end `detect`, 30-min 700-channel run, peak memory",
    "scale_throughput": "Dask scale-out throughput",
    "watch_latency": "live `watch` latency",
    "study_cache": "notebook 03's detection with and without the per-run cache",
    "public_scale": "`reproduce --data` on the public-layout proxy at several scales",
    "labelled_servers": "detection + attribution on labelled SMD/ASD servers",
    "host_recordings": "host recordings of this VM detected alone (`detect RUN`'s defaults, and `watch` live)",
    "collector_cores": "collector CPU per 100 ms tick on synthetic hosts of 2-192 cores and this one",
    "gpu_host": "the GPU-host set detected alone (`detect RUN`'s defaults; copies with 2-192 cores)",
    "calm_host": "false episodes per host-hour on a calm recording (offline and `watch` live)",
}

#: the detection studies of ``scripts/studies/`` (results in ``docs/studies/``), with what each measures
STUDIES: dict[str, str] = {
    "lone_runs": (
        "lab runs detected alone (no baseline): windows flagged, `--min-run 1` vs the default for a run "
        "alone (4)"
    ),
    "sentinel_counters": "lab runs: counters never non-zero in fault-free runs, as a rule alone",
    "crosshost_references": "lab DDP runs: cross-host deviation against 2, 3, 4 fault-free runs",
}


def _fmt(x: float | None, unit: str | None = None) -> str:
    if x is None:
        return "–"
    a = abs(x)
    s = f"{x:.3g}" if a < 1000 else f"{x:,.0f}"
    return f"{s} {unit}".strip() if unit else s


def speed_rows(name: str, data: dict) -> list[str]:
    """The speed table's lines of one timing result (a ValueError when it is not one)."""
    out = []
    for r in validate_timing(data):
        ours, alt, unit = r["ours"], r.get("alternative"), r["unit"]
        ratio = number(r.get("ratio"))
        notes = [str(r["note"])] if r.get("note") else []
        if number(r.get("peak_mb")) is not None:
            notes.append(f"peak {r['peak_mb']:,.0f} MB")
        out.append(
            f"| {name} | {r['case']} | {ours['name']}: {_fmt(number(ours['median']), unit)} | "
            f"{alt['name'] + ': ' + _fmt(number(alt['median']), unit) if alt else '–'} | "
            f"{_fmt(ratio) + '×' if ratio is not None else '–'} | {'; '.join(notes)} |"
        )
    return out


def when(data: dict) -> str:
    """``date, commit C, load L → L`` of a result, for its status line."""
    conv = data.get("converted") if isinstance(data.get("converted"), dict) else {}
    stored = isinstance(conv.get("notes"), dict) and "date" in conv["notes"]
    parts = [("stored " if stored else "") + str(data.get("date") or "no date")]
    if data.get("commit"):
        parts.append(f"commit {data['commit']}")
    lb, la = data.get("load_before"), data.get("load_after")
    if lb or la:
        parts.append(f"load {_load(lb)} → {_load(la)}")
    if data.get("converted"):
        parts.append("converted to schema 2, not re-measured")
    return ", ".join(parts)


def _load(x: object) -> str:
    return _fmt(number(x[0])) if isinstance(x, list) and x else "?"


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


def host_recordings_table(data: dict) -> list[str]:
    """One row per rule of ``benchmarks/host_recordings.py``: recall, fault-free windows flagged,
    subsystem top-1, and which goals it meets."""
    names = ("defaults", "min_run_1", "min_run_6", "min_run_8", "live")
    rules = [k for k in names if isinstance(data.get(k), dict)]
    if not rules:
        raise ValueError("no rule's result (defaults, min_run_N, live)")
    out = ["| rule | recall | fault-free windows flagged | top-1 | goals met |", "|---|---:|---:|---:|---|"]
    for k in rules:
        r = data[k]
        met = ", ".join(g for g, ok in r["goals_met"].items() if ok) or "none"
        out.append(
            f"| {k} | {_fmt(r['episode_recall'])} | {_fmt(r['fault_free_flagged'])} of {r['fault_free_windows']} "
            f"| {_fmt(r['top1_accuracy'])} | {met} |"
        )
    return out


def gpu_host_table(data: dict) -> list[str]:
    """One row per labelled episode of ``benchmarks/gpu_host.py``, then each recording's fault-free
    windows and the core copies."""
    recs = data["recordings"]
    out = [
        "| recording | episode | windows flagged | top subsystem (expected) | job's slowdown | rank |",
        "|---|---|---:|---|---:|---:|",
    ]
    for r in recs:
        for e in r["episodes"]:
            out.append(
                f"| {r['run'][:40]} | {e['fault_type']} | {e['flagged']} of {e['windows']} | "
                f"{e['top_subsystem'] or '–'} ({e['expected']}) | {_fmt(e['job_slowdown'])} | "
                f"{e['rank_by_slowdown'] if e['rank_by_slowdown'] is not None else '–'} |"
            )
    out += ["", "| recording | fault-free windows flagged | false episodes | start-up left out (s) |", "|---|---:|---:|---:|"]
    for r in recs:
        st = r.get("startup") or {}
        out.append(
            f"| {r['run'][:40]} | {r['fault_free_flagged']} of {r['fault_free_windows']} | {r['false_episodes']} | "
            f"{_fmt(st.get('seconds'))} |"
        )
    if data.get("cores"):
        out += ["", "| cores | channels | fault-free flagged, defaults | per-channel rules |", "|---:|---:|---:|---:|"]
        out += [f"| {c['cores']} | {c['channels']} | {_fmt(c['defaults'])} | {_fmt(c['per_channel'])} |" for c in data["cores"]]
    return out


def calm_host_table(data: dict) -> list[str]:
    """Per recording of ``benchmarks/calm_host.py``: windows flagged, false episodes outside labelled
    activity and per calm host-hour, offline and live."""
    out = [
        "| recording | how | windows flagged | false episodes | calm hours | per host-hour | during activity |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in data["runs"]:
        for how in ("offline", "live"):
            m = r[how]
            out.append(
                f"| {r['run'][:40]} | {how} | {m['flagged']} of {m['windows']} | {m['false_episodes']} | "
                f"{_fmt(m['hours'])} | {_fmt(m['false_episodes_per_hour'])} | {m.get('during_activity', 0)} |"
            )
    return out


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
            vals = " | ".join(_fmt(number(agg.get(k))) for k, _ in LABELLED_COLS)
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
        ff = " / ".join(_fmt(number(s.get(f"fault_free_share_{k}"))) for k in ("median", "mean", "max"))
        faults = []
        for fault, rows in (s.get("by_fault") or {}).items():
            for r in rows:
                faults.append(
                    f"{fault} {r.get('model')} {r.get('phase')} "
                    f"{_fmt(number(r.get('episode_share')))} ({r.get('top') or '–'})"
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
            _fmt(number(v.get("false_alarm_share"))),
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
            f"({_fmt(number(v.get('false_alarm_share')))})",
            f"{v['labels_found']}/{v['labels_judged']}: "
            + "; ".join(f"{k} {c['found']}/{c['judged']}" for k, c in v["by_fault"].items()),
        ),
    )


#: each study's table
STUDY_TABLES = {
    "lone_runs": lone_runs_table,
    "sentinel_counters": sentinel_table,
    "crosshost_references": crosshost_references_table,
}


def _read(path: Path) -> dict:
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError("top level is not an object")
    return data


def _run_log(results_dir: Path) -> dict:
    """``run_all.json``'s record per benchmark (empty when it is missing or unreadable)."""
    try:
        return {r["name"]: r for r in _read(results_dir / "run_all.json")["runs"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _studies(studies_dir: Path | None) -> tuple[list[str], list[str]]:
    """The studies' section and their status lines."""
    found = {p.stem: p for p in sorted(studies_dir.glob("*.json"))} if studies_dir else {}
    lines: list[str] = []
    status: list[str] = []
    for name in list(STUDIES) + sorted(n for n in found if n not in STUDIES):
        what, path = STUDIES.get(name, ""), found.get(name)
        if path is None:
            status.append(f"- `{name}` ({what}; a study): not run (no result JSON)")
            continue
        try:
            data = _read(path)
            if data.get("kind") != "study" or name not in STUDY_TABLES:
                raise ValueError(f"expected 'kind': 'study' and one of {sorted(STUDY_TABLES)}")
            table = STUDY_TABLES[name](data)
            host = f"host {data['host']}, " if isinstance(data.get("host"), str) else ""
            lines += [f"**{name}** ({host}{data.get('date', '?')})", "", *table, ""]
            status.append(f"- `{name}` ({what}; a study): ok, docs/studies/{path.name}")
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            status.append(f"- `{name}` ({what}; a study): not run (unreadable {path.name}: {exc})")
    return lines, status


def summarize(results_dir: Path, studies_dir: Path | None = None) -> str:
    """The summary of the results in ``results_dir`` and the studies in ``studies_dir``."""
    found = {p.stem: p for p in sorted(results_dir.glob("*.json")) if p.stem != "run_all"}
    run_log = _run_log(results_dir)
    speed = [
        "| benchmark | case | reveal-lab (median) | alternative (median) | ratio (× better) | notes |",
        "|---|---|---:|---:|---:|---|",
    ]
    status: list[str] = []
    labelled: list[str] = []
    hosts: list[str] = []
    machines: dict[str, str] = {}
    for name in list(EXPECTED) + sorted(n for n in found if n not in EXPECTED):
        path, what = found.get(name), EXPECTED.get(name, "")
        if path is None:
            why = run_log.get(name, {}).get("status", "no result JSON")
            status.append(f"- `{name}` ({what}): not run ({why})")
            continue
        try:
            data = _read(path)
            if name.startswith("labelled_"):
                labelled += [f"**{name}**", "", *labelled_table(data), ""]
                line = f"ok, {path.name}"
            elif name == "host_recordings":
                hosts += [f"**{name}** ({data.get('date', '?')})", "", *host_recordings_table(data), ""]
                line = f"ok, {path.name}"
            elif name == "calm_host":
                hosts += [f"**{name}** ({data.get('measured_at', '?')})", "", *calm_host_table(data), ""]
                line = f"ok, {path.name}"
            elif name == "gpu_host":
                hosts += [f"**{name}** ({data.get('measured_at', '?')})", "", *gpu_host_table(data), ""]
                line = f"ok, {path.name}"
            else:
                speed += speed_rows(name, data)
                line = f"ok, {path.name} ({when(data)})"
            if isinstance(data.get("machine"), dict):
                machines[name] = ", ".join(
                    f"{k}={v}" for k, v in data["machine"].items() if not isinstance(v, (dict, list))
                )
            status.append(f"- `{name}` ({what}): {line}")
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            status.append(f"- `{name}` ({what}): not run (unreadable {path.name}: {exc})")
    studies, study_status = _studies(studies_dir)
    parts = [
        "# Benchmark summary",
        "",
        "Generated by `benchmarks/summarize.py` from `benchmarks/results/*.json` and `docs/studies/*.json`; "
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
    if hosts:
        parts += [
            "## Host recordings detected alone",
            "",
            "Not timings: `benchmarks/host_recordings.py` on `data/host` (goals: recall >= 0.9, "
            "fault-free windows flagged <= 0.02, subsystem top-1 >= 0.8; docs/host_recordings.md).",
            "",
            *hosts,
        ]
    if studies:
        parts += [
            "## Detection studies",
            "",
            "Not timings: `scripts/studies/NAME.py` on `data/lab`.",
            "",
            *studies,
        ]
    parts += ["## Status", "", *status, *study_status, ""]
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
    ap.add_argument("--studies", type=Path, default=ROOT / "docs" / "studies", help="the studies' results")
    ap.add_argument("--out", type=Path, default=None, help="default: RESULTS/SUMMARY.md")
    ap.add_argument(
        "--readme",
        type=Path,
        default=None,
        help="also rewrite this file's benchmark section (between the markers), "
        "e.g. --readme docs/RESULTS.md",
    )
    a = ap.parse_args(argv)
    text = summarize(a.results, a.studies)
    out = a.out or a.results / "SUMMARY.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    if a.readme is not None and update_readme(a.readme, text):
        print(f"updated the benchmark section of {a.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
