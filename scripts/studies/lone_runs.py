#!/usr/bin/env python
"""Runs detected alone (issue #17 item 3): what ``reveal-lab detect RUN`` flags with no baseline.

Every single-host run of one lab host (default ``labA`` of the bundled ``data/lab``) goes
through :func:`reveal_lab.pipeline.detect_run` with default settings (pruned on the run
itself, trimmed to the recorded workload span, ``robust`` thresholds) and ``min_run=4``
(``--min-run``; the default for a run alone since 2026-11-26). For each run:
the share of its windows flagged and, for fault runs, the share of the windows that overlap
a labelled episode flagged, and the subsystem ranked first most often on those. Each is
given twice from the same scores: ``sustained`` is the default decision (a detector's flag
counts only inside 4+ consecutive windows over its threshold,
:func:`reveal_lab.pipeline.sustained`, or the sentinel rule for a run alone fires,
:func:`reveal_lab.pipeline.lone_sentinel_windows`); ``plain`` is every window over a
detector's threshold (``min_run=1``, no sentinel rule), so the comparison needs no second
run. ``sentinel_windows`` counts the windows the sentinel rule fired on.

    .venv/bin/python scripts/studies/lone_runs.py [--data data/lab] [--host labA]   # ~20 s

Writes ``docs/studies/lone_runs.json`` (per run and summaries). A detection study,
not a timing: the machine's load does not change its numbers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import warnings
from pathlib import Path

import polars as pl

from reveal_lab.config import data_dir
from reveal_lab.io import load_run
from reveal_lab.pipeline import detect_run

ROOT = Path(__file__).resolve().parents[2]


def _episode_mask(labels: pl.DataFrame) -> pl.Expr:
    """True for a window that overlaps one of ``labels``' episodes."""
    inside = pl.lit(False)
    for lab in labels.iter_rows(named=True):
        inside = inside | ((pl.col("end") > lab["start"]) & (pl.col("start") < lab["end"]))
    return inside


def _top(w: pl.DataFrame) -> str | None:
    tops = w["top_subsystem"].drop_nulls()
    return tops.value_counts(sort=True)["top_subsystem"][0] if tops.len() else None


def measure(data: Path, host: str, min_run: int = 4) -> list[dict]:
    meta = pl.read_csv(data / "meta_lab.csv", infer_schema_length=0)
    meta = meta.filter((pl.col("host") == host) & (pl.col("world_size") == "1"))
    if meta.is_empty():
        raise SystemExit(f"{data / 'meta_lab.csv'}: no single-host run on host {host!r}")
    labels = pl.read_csv(data / "labels.csv", try_parse_dates=True).filter(pl.col("scope") == "episode")
    rows = []
    for r in meta.iter_rows(named=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            det = detect_run(load_run(str(data / r["source_file"].removeprefix("./"))), min_run=min_run)
        w = det.windows
        thr = det.thresholds[host] if host in det.thresholds else next(iter(det.thresholds.values()))
        plain = pl.any_horizontal([pl.col(f"score_{m}") > thr[m] for m in det.methods])
        w = w.with_columns(sustained=pl.col("anomalous"), plain=plain)
        w = w.with_columns(inside=_episode_mask(labels.filter(pl.col("run") == r["run"])))
        row = {
            "run": r["run"],
            "model": r["model"],
            "phase": r["phase"],
            "fault": r["fault"],
            "repeat": int(r["repeat"]),
            "windows": w.height,
            "min_run_windows": det.config.get("min_run_windows"),
            "sentinel_windows": int(w["sentinel"].sum()),
        }
        for rule in ("sustained", "plain"):
            row[f"share_{rule}"] = float(w[rule].mean())
            fault = w.filter("inside")
            if fault.height:
                row[f"episode_share_{rule}"] = float(fault[rule].mean())
                row[f"top_{rule}"] = _top(w.filter(pl.col(rule) & pl.col("inside")))
        rows.append(row)
        print(
            f"{r['fault']:40s} {r['model']:12s} {r['phase']:5s} r{r['repeat']} "
            f"flagged {row['share_sustained']:.3f} (plain {row['share_plain']:.3f})"
            + (
                f" episodes {row['episode_share_sustained']:.2f} (plain {row['episode_share_plain']:.2f}) "
                f"top {row.get('top_sustained')}"
                if "episode_share_sustained" in row
                else ""
            ),
            flush=True,
        )
    return rows


def summarize(rows: list[dict]) -> dict:
    out: dict = {}
    for rule in ("sustained", "plain"):
        ff = [r[f"share_{rule}"] for r in rows if r["fault"] == "none"]
        s = {
            "fault_free_runs": len(ff),
            "fault_free_share_median": statistics.median(ff) if ff else None,
            "fault_free_share_mean": statistics.fmean(ff) if ff else None,
            "fault_free_share_max": max(ff) if ff else None,
            "by_fault": {},
        }
        for r in rows:
            if r["fault"] == "none" or f"episode_share_{rule}" not in r:
                continue
            ft = r["fault"].split("@")[0]
            s["by_fault"].setdefault(ft, []).append(
                {
                    "model": r["model"],
                    "phase": r["phase"],
                    "episode_share": r[f"episode_share_{rule}"],
                    "run_share": r[f"share_{rule}"],
                    "top": r.get(f"top_{rule}"),
                }
            )
        out[rule] = s
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(data_dir()))
    ap.add_argument("--host", default="labA")
    ap.add_argument("--min-run", type=int, default=4)
    ap.add_argument("--out", default=str(ROOT / "docs" / "studies" / "lone_runs.json"))
    args = ap.parse_args(argv)
    rows = measure(Path(args.data), args.host, args.min_run)
    result = {
        "schema": 2,
        "kind": "study",
        "study": "lone_runs",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "data": args.data,
        "host": args.host,
        "min_run": args.min_run,
        "summary": summarize(rows),
        "runs": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(json.dumps(result["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
