#!/usr/bin/env python
"""False alarms as an operator counts them: episodes per host-hour on a calm recording (a steady
job, nothing injected; ``scripts/record_calm_host.py``, default ``data/calm-host``), detected
alone with ``detect RUN``'s defaults, offline and through ``watch``'s live engine.

    .venv/bin/python benchmarks/calm_host.py [--data data/calm-host] [--out FILE]

Offline: ``detect_run`` on the job's steady span; live: the rows of that span pushed through
:class:`reveal_lab.live.LiveDetector` in the collector's flush batches (1 s), fitted on their
first ``--live-warmup`` seconds (a stream watched while the job runs). For each: windows scored, windows flagged, false episodes (flagged
windows less than 10 s apart merged: every one is false, nothing was injected) and false
episodes per host-hour of scored windows; the goal of issue #47 is at most 1 per host-hour.
Writes ``benchmarks/results/calm_host.json``. A detection study, not a timing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import warnings
from pathlib import Path

import polars as pl

from reveal_lab.config import PROJECT_ROOT, get_preset
from reveal_lab.io import load_run
from reveal_lab.pipeline import detect_run, episodes_of

HERE = Path(__file__).resolve().parent
GOAL_PER_HOUR = 1.0
LIVE_BATCH_ROWS = 10


def _measure(windows: pl.DataFrame) -> dict:
    eps = episodes_of(windows)
    hours = (windows["end"].max() - windows["start"].min()).total_seconds() / 3600 if windows.height else 0.0
    return {
        "windows": windows.height,
        "flagged": int(windows["anomalous"].sum()),
        "flagged_share": float(windows["anomalous"].mean()) if windows.height else None,
        "false_episodes": eps.height,
        "hours": hours,
        "false_episodes_per_hour": eps.height / hours if hours else None,
        "episodes": [
            {"start": str(e["start"]), "seconds": (e["end"] - e["start"]).total_seconds(), "subsystem": e["subsystem"]}
            for e in eps.iter_rows(named=True)
        ],
    }


def _live(frame: pl.DataFrame, warmup_s: float) -> pl.DataFrame:
    from reveal_lab.live import LiveDetector

    p = get_preset("paper")
    det = LiveDetector(p.window, p.detect, warmup_s=warmup_s)
    verdicts = []
    for k in range(0, frame.height, LIVE_BATCH_ROWS):
        verdicts += det.push(frame.slice(k, LIVE_BATCH_ROWS))
    rows = [
        {"host": v.host or "", "start": v.start, "end": v.end, "anomalous": v.anomalous,
         "top_subsystem": v.subsystem}
        for v in verdicts if v.phase == "scored"
    ]
    schema = {"host": pl.String, "start": pl.Datetime("ms"), "end": pl.Datetime("ms"), "anomalous": pl.Boolean,
              "top_subsystem": pl.String}
    return pl.DataFrame(rows, schema=schema)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(PROJECT_ROOT / "data" / "calm-host"))
    ap.add_argument("--out", default=str(HERE / "results" / "calm_host.json"))
    ap.add_argument("--live-warmup", type=float, default=30.0, metavar="S", help="live: fit on the first S s")
    a = ap.parse_args(argv)
    data = Path(a.data)
    meta = pl.read_csv(data / "meta_lab.csv", infer_schema_length=0)
    out = {"data": str(data), "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "runs": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in meta.iter_rows(named=True):
            run = load_run(str(data / r["source_file"].removeprefix("./")))
            off = _measure(detect_run(run).windows)
            span = run.frame
            if r["workload_start"] and r["workload_end"]:  # the job's steady span, as offline
                lo, hi = (dt.datetime.fromisoformat(r[k]) for k in ("workload_start", "workload_end"))
                span = span.filter((pl.col("timestamp") >= lo) & (pl.col("timestamp") < hi))
            live = _measure(_live(span, a.live_warmup))
            out["runs"].append({"run": r["run"], "offline": off, "live": live})
            for name, m in (("offline", off), ("live", live)):
                print(f"{r['run']} {name}: {m['flagged']}/{m['windows']} windows flagged, {m['false_episodes']} "
                      f"false episodes in {m['hours']:.2f} h = {m['false_episodes_per_hour']} per host-hour")
    for name in ("offline", "live"):
        eps = sum(x[name]["false_episodes"] for x in out["runs"])
        hours = sum(x[name]["hours"] for x in out["runs"])
        out[name] = {"false_episodes": eps, "hours": hours, "per_hour": eps / hours if hours else None,
                     "goal_met": hours > 0 and eps / hours <= GOAL_PER_HOUR}
    print(json.dumps({k: out[k] for k in ("offline", "live")}))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2, default=str))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
