#!/usr/bin/env python
"""Host recordings detected alone (issue #34): ``evaluate --mode alone`` on the labelled host
set (``scripts/record_host_set.py``, default ``data/host``) with ``detect RUN``'s defaults,
and the same with ``--min-run 1`` (every window over a detector's threshold counts).

    .venv/bin/python benchmarks/host_recordings.py [--data data/host] [--out FILE]

For each rule: episode recall, the share of fault-free windows flagged (windows of the
recordings without a job; and, separately, the windows of job recordings that overlap no
job), subsystem top-1 on the episodes found, per job kind, and whether the goals are met
(recall >= 0.9, fault-free windows flagged <= 2 %, top-1 >= 0.8). Writes
``benchmarks/results/host_recordings.json``. A detection study, not a timing; the load
average while the set was recorded is in the set's README.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import warnings
from pathlib import Path

import polars as pl

from reveal_lab.config import PROJECT_ROOT
from reveal_lab.evaluation import evaluate_dataset

HERE = Path(__file__).resolve().parent
#: the goals of issue #34
GOALS = {"episode_recall": 0.9, "fault_free_flagged": 0.02, "top1_accuracy": 0.8}


def _outside_episodes(windows: pl.DataFrame, episodes: pl.DataFrame) -> tuple[int, int]:
    """(flagged, all) windows of job recordings that overlap no labelled job."""
    w = windows.filter(pl.col("fault") != "none")
    if w.is_empty():
        return 0, 0
    inside = pl.lit(False)
    for e in episodes.iter_rows(named=True):
        inside = inside | (
            (pl.col("run") == e["run"]) & (pl.col("end") > e["start"]) & (pl.col("start") < e["end"])
        )
    out = w.filter(~inside)
    return int(out["flagged"].sum()), out.height


def measure(data: Path, min_run: int | None) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = evaluate_dataset(data, mode="alone", min_agreement=1, min_run=min_run)
    t = {r["fault_type"]: r for r in ev.table.iter_rows(named=True)}
    overall = t["overall"]
    flagged, n = _outside_episodes(ev.windows, ev.episodes)
    res = {
        "min_run": min_run,
        "episodes": overall["episodes"],
        "episode_recall": overall["episode_recall"],
        "fault_free_windows": overall["baseline_windows"],
        "fault_free_flagged": overall["false_alarm_share"],
        "outside_jobs_windows": n,
        "outside_jobs_flagged": flagged / n if n else None,
        "top1_accuracy": overall["top1_accuracy"],
        "by_job": {
            k: {c: v[c] for c in ("episodes", "detected", "episode_recall", "top1_accuracy")}
            for k, v in t.items()
            if not k.startswith("overall")
        },
        "sentinel_windows": ev.config.get("sentinel_windows"),
        "failures": ev.failures,
    }
    res["goals_met"] = {
        "episode_recall": (res["episode_recall"] or 0) >= GOALS["episode_recall"],
        "fault_free_flagged": res["fault_free_flagged"] is not None
        and res["fault_free_flagged"] <= GOALS["fault_free_flagged"],
        "top1_accuracy": (res["top1_accuracy"] or 0) >= GOALS["top1_accuracy"],
    }
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(PROJECT_ROOT / "data" / "host"))
    ap.add_argument("--out", default=str(HERE / "results" / "host_recordings.json"))
    ap.add_argument(
        "--also-min-run",
        type=int,
        nargs="*",
        default=[],
        metavar="N",
        help="also measure these --min-run values (e.g. 6 8: on the lab runs detected alone they "
        "trade fault-free windows flagged for episodes, see docs/host_recordings.md)",
    )
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "meta_lab.csv").is_file():
        print(
            f"{data}: no host set (meta_lab.csv); record it with scripts/record_host_set.py", file=sys.stderr
        )
        return 2
    result = {
        "benchmark": "host_recordings",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "data": str(data),
        "command": "evaluate --mode alone (detect RUN's defaults), and with --min-run 1",
        "goals": GOALS,
        "defaults": measure(data, None),
        "min_run_1": measure(data, 1),
        **{f"min_run_{k}": measure(data, k) for k in args.also_min_run},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    for key in [k for k in result if k == "defaults" or k.startswith("min_run_")]:
        r = result[key]
        print(
            f"{key}: recall {r['episode_recall']:.3f} ({r['episodes']} jobs), fault-free windows flagged "
            f"{r['fault_free_flagged']:.3f} of {r['fault_free_windows']}, outside jobs "
            f"{r['outside_jobs_flagged'] or 0:.3f}, top-1 {r['top1_accuracy'] or 0:.3f}; goals {r['goals_met']}"
        )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
