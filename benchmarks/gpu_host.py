#!/usr/bin/env python
"""The GPU-host set detected alone (``data/gpu-host``; issue #47): ``detect RUN``'s defaults on
each recording, and the same recording copied to 2, 16, 64 and 192 cores.

    .venv/bin/python benchmarks/gpu_host.py [--data data/gpu-host] [--out FILE] [--cores 2,16,64,192]

For each labelled episode: its windows and the share flagged, whether it was found (a flagged
window overlaps it), the subsystem most of its flagged windows name, the job's slowdown
(``labels.csv``'s magnitude) and the rank, by the job's slowdown, of the detected episode that
overlaps it (``detect --job-pace``'s ranking). Per recording: the fault-free windows flagged
(windows overlapping no label), false episodes (flagged windows less than 10 s apart merged,
overlapping no label) and the collector's start-up (the raw recording scored whole: its
seconds, and whether a window inside it was scored or flagged). The core copies
(:func:`reveal_lab.derive.with_cores`): fault-free windows flagged with the defaults and with
the per-channel rules they replace (per-core channels, the Z-score over every feature, 4 windows
in a row). Goals of issue #47 at the end. Writes ``benchmarks/results/gpu_host.json``. A
detection study, not a timing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl

from reveal_lab.config import PROJECT_ROOT
from reveal_lab.derive import with_cores
from reveal_lab.io import load_run, read_collector_run, read_job_pace
from reveal_lab.pipeline import collector_startup, detect_run, episode_pace, episodes_of
from reveal_lab.telemetry import Run

HERE = Path(__file__).resolve().parent
#: the goals of issue #47 (on data/gpu-host, detect RUN's defaults)
GOALS = {"slow_episode_window_share": 0.5, "fault_free_flagged": 0.02, "top1_accuracy": 0.8}
#: the rules the defaults replace, for the core copies
PER_CHANNEL = {"fold_cores": False, "by_subsystem": False, "min_run": 4}


def _inside(labels: pl.DataFrame) -> pl.Expr:
    hit = pl.lit(False)
    for e in labels.iter_rows(named=True):
        hit = hit | ((pl.col("end") > e["start"]) & (pl.col("start") < e["end"]))
    return hit


def _false_episodes(windows: pl.DataFrame, labels: pl.DataFrame) -> int:
    eps = episodes_of(windows)
    return int(eps.filter(~_inside(labels)).height) if eps.height else 0


def _recording(data: Path, row: dict, labels: pl.DataFrame) -> dict:
    path = data / row["source_file"].removeprefix("./")
    run = load_run(str(path))
    det = detect_run(run)
    w = det.windows
    raw = data / "raw" / run.meta.extra.get("recording", "")
    pace = read_job_pace(raw / "steps.csv") if (raw / "steps.csv").exists() else None
    ranked = episode_pace(det.episodes, pace) if pace is not None and det.episodes.height else None
    eps = []
    for e in labels.iter_rows(named=True):
        ew = w.filter((pl.col("end") > e["start"]) & (pl.col("start") < e["end"]))
        flagged = ew.filter("anomalous")
        tops = flagged["top_subsystem"].drop_nulls().value_counts(sort=True)
        rank = None
        if ranked is not None:
            hit = ranked.filter((pl.col("end") > e["start"]) & (pl.col("start") < e["end"]))
            rank = int(hit["rank"].min()) if hit.height else None
        eps.append({
            "fault_type": e["fault_type"], "expected": e["expected_subsystem"], "windows": ew.height,
            "flagged": flagged.height, "share_flagged": flagged.height / ew.height if ew.height else 0.0,
            "found": flagged.height > 0, "top_subsystem": tops["top_subsystem"][0] if tops.height else None,
            "job_slowdown": e["magnitude"], "rank_by_slowdown": rank,
        })
    calm = w.filter(~_inside(labels))
    out = {
        "run": row["run"], "windows": w.height, "fault_free_windows": calm.height,
        "fault_free_flagged": int(calm["anomalous"].sum()),
        "false_episodes": _false_episodes(w, labels), "episodes": eps,
        "scored_s": (w["end"].max() - w["start"].min()).total_seconds() if w.height else 0.0,
    }
    if raw.is_dir():  # the raw recording scored whole: the collector's start-up left out
        whole = read_collector_run(raw)
        s = collector_startup(whole.frame)
        dw = detect_run(whole).windows
        inside = dw.filter(pl.col("start") < s.end) if s.end is not None else dw.clear()
        out["startup"] = {**s.to_dict(), "windows_scored_inside": inside.height,
                          "flagged_inside": int(inside["anomalous"].sum()) if inside.height else 0}
    return out


def _cores(data: Path, row: dict, labels: pl.DataFrame, sizes: list[int]) -> list[dict]:
    run = load_run(str(data / row["source_file"].removeprefix("./")))
    rows = []
    for n in sizes:
        r = Run(run.meta, with_cores(run.frame, n), run.warnings)
        res = {"cores": n, "channels": r.frame.width - 1}
        for name, kw in (("defaults", {}), ("per_channel", PER_CHANNEL)):
            w = detect_run(r, **kw).windows
            calm = w.filter(~_inside(labels))
            res[name] = float(calm["anomalous"].mean())
        rows.append(res)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(PROJECT_ROOT / "data" / "gpu-host"))
    ap.add_argument("--out", default=str(HERE / "results" / "gpu_host.json"))
    ap.add_argument("--cores", default="2,16,64,192", help="core counts of the copies ('' to skip)")
    a = ap.parse_args(argv)
    data = Path(a.data)
    meta = pl.read_csv(data / "meta_lab.csv", infer_schema_length=0)
    labels = pl.read_csv(data / "labels.csv", try_parse_dates=True)
    sizes = [int(x) for x in a.cores.split(",") if x]
    t0 = dt.datetime.now(dt.UTC)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recs = [_recording(data, r, labels.filter(pl.col("run") == r["run"])) for r in meta.iter_rows(named=True)]
        job = next((r for r in meta.iter_rows(named=True) if r["workload_start"]), None)
        cores = _cores(data, job, labels.filter(pl.col("run") == job["run"]), sizes) if job and sizes else []
    eps = [e for r in recs for e in r["episodes"]]
    found = [e for e in eps if e["found"]]
    slow = [e for e in eps if isinstance(e["job_slowdown"], float) and e["job_slowdown"] >= 1.1]
    calm_w = sum(r["fault_free_windows"] for r in recs)
    calm_f = sum(r["fault_free_flagged"] for r in recs)
    top1 = float(np.mean([e["top_subsystem"] == e["expected"] for e in found])) if found else None
    summary = {
        "episodes": len(eps), "found": len(found),
        "fault_free_flagged": calm_f / calm_w if calm_w else None, "fault_free_windows": calm_w,
        "top1_accuracy": top1,
        "slow_episodes": [{k: e[k] for k in ("fault_type", "share_flagged", "job_slowdown", "rank_by_slowdown")}
                          for e in slow],
        "false_episodes": sum(r["false_episodes"] for r in recs),
        "startup_flagged": sum(r.get("startup", {}).get("flagged_inside", 0) for r in recs),
    }
    summary["goals"] = {
        "every_episode_found": len(found) == len(eps),
        "slow_episodes_half_flagged_and_first": all(
            e["share_flagged"] >= GOALS["slow_episode_window_share"] and e["rank_by_slowdown"] == 1 for e in slow
        ),
        "fault_free_flagged": summary["fault_free_flagged"] is not None
        and summary["fault_free_flagged"] <= GOALS["fault_free_flagged"],
        "top1_accuracy": top1 is not None and top1 >= GOALS["top1_accuracy"],
        "startup_not_flagged": summary["startup_flagged"] == 0,
        "cores_flat": bool(cores) and max(c["defaults"] for c in cores) <= GOALS["fault_free_flagged"],
    }
    result = {"data": str(data), "measured_at": t0.isoformat(timespec="seconds"), "summary": summary,
              "recordings": recs, "cores": cores, "per_channel_rules": PER_CHANNEL}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2, default=str))
    for r in recs:
        for e in r["episodes"]:
            print(f"{r['run'][:40]} {e['fault_type']:<26} {e['flagged']:>3}/{e['windows']:<3} "
                  f"{e['share_flagged']:.2f} top {e['top_subsystem']} (expected {e['expected']}) "
                  f"slowdown {e['job_slowdown']} rank {e['rank_by_slowdown']}")
        print(f"{r['run'][:40]} fault-free {r['fault_free_flagged']}/{r['fault_free_windows']}, "
              f"false episodes {r['false_episodes']}, start-up {r.get('startup')}")
    for c in cores:
        print(f"{c['cores']:>4} cores ({c['channels']} channels): fault-free flagged {c['defaults']:.3f} "
              f"(per-channel rules {c['per_channel']:.3f})")
    print(json.dumps(summary["goals"]))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
