#!/usr/bin/env python
"""Host recordings detected alone (issue #34): ``evaluate --mode alone`` on the labelled host
set (``scripts/record_host_set.py``, default ``data/host``) with ``detect RUN``'s defaults,
the same with ``--min-run 1`` (every window over a detector's threshold counts), and
``watch``'s live engine replaying each recording (``--no-live`` leaves it out).

    .venv/bin/python benchmarks/host_recordings.py [--data data/host] [--out FILE] [--also-min-run N ...]

Live: each recording's rows are pushed into :class:`reveal_lab.live.LiveDetector` (what
``reveal-lab watch`` runs, with its defaults) in the collector's flush batches (1 s of
samples), the detectors fitted on the recording's first ``--live-warmup`` seconds (the set
has at least 15 s calm before its first job); its verdicts are scored with the same labels
and measures (warm-up and gap windows are not scored).

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
from reveal_lab.evaluation import evaluate_dataset, score_episodes
from reveal_lab.pipeline import POLICIES

HERE = Path(__file__).resolve().parent
#: the goals of issue #34
GOALS = {"episode_recall": 0.9, "fault_free_flagged": 0.02, "top1_accuracy": 0.8}
#: rows per push in the live replay: the collector's flush period (1 s) at 100 ms
LIVE_BATCH_ROWS = 10


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
        ev = evaluate_dataset(data, mode="alone", policy=POLICIES["default"].with_(min_agreement=1, min_run=min_run))
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
    res["goals_met"] = _goals_met(res)
    return res


def _goals_met(res: dict) -> dict[str, bool]:
    return {
        "episode_recall": (res["episode_recall"] or 0) >= GOALS["episode_recall"],
        "fault_free_flagged": res["fault_free_flagged"] is not None
        and res["fault_free_flagged"] <= GOALS["fault_free_flagged"],
        "top1_accuracy": (res["top1_accuracy"] or 0) >= GOALS["top1_accuracy"],
    }


def _verdict_rows(verdicts: list, run: str, host: str, fault: str) -> list[dict]:
    """The scored verdicts of one replay as the scorer's windows: a flagged window's
    subsystems with their shares of its attribution (``Verdict.shares``, as ``detect``'s
    ``share_*`` columns that the offline measure ranks by; ``top_subsystem``: the first named)."""
    from reveal_lab.telemetry import SUBSYSTEMS

    rows = []
    for v in verdicts:
        if v.phase != "scored":
            continue
        joint = [s for s in (v.subsystems or "").split("+") if s] if v.anomalous else []
        shares = (v.shares or {s: 1.0 / len(joint) for s in joint}) if joint else {}
        rows.append(
            {
                "run": run,
                "host": host,
                "fault": fault,
                "window_id": v.window_id,
                "start": v.start,
                "end": v.end,
                "flagged": v.anomalous,
                "sentinel": v.sentinel,
                "top_subsystem": joint[0] if joint else None,
                **{f"share_{s}": shares.get(s, 0.0) if shares else None for s in SUBSYSTEMS},
            }
        )
    return rows


def replay(path: Path, warmup_s: float) -> tuple[list, object]:
    """One recording pushed through ``watch``'s live engine in collector-sized batches:
    its verdicts and the detector."""
    from reveal_lab.config import get_preset
    from reveal_lab.io import load_run
    from reveal_lab.live import LiveDetector

    p = get_preset("paper")
    frame = load_run(path).frame
    det = LiveDetector(p.window, p.detect, warmup_s=warmup_s, prune_threshold=p.prune.threshold)
    verdicts = []
    for k in range(0, frame.height, LIVE_BATCH_ROWS):
        verdicts += det.push(frame.slice(k, LIVE_BATCH_ROWS))
    return verdicts, det


def measure_live(data: Path, warmup_s: float) -> dict:
    """The three measures of :func:`measure` for ``watch``'s live engine (:func:`replay`)."""
    from reveal_lab.io import read_labels, read_meta

    meta = read_meta(data / "meta_lab.csv")
    labels = read_labels(data / "labels.csv").filter(pl.col("scope") == "episode")
    rows, failures, warm = [], [], 0
    for r in meta.iter_rows(named=True):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                verdicts, _det = replay(data / r["source_file"].removeprefix("./"), warmup_s)
        except Exception as exc:  # noqa: BLE001 - a replay that fails is reported, not fatal
            failures.append(f"{r['source_file']}: {type(exc).__name__}: {exc}")
            continue
        warm += sum(v.phase == "warmup" for v in verdicts)
        rows += _verdict_rows(verdicts, r["run"], r["host"], r["fault"])
    windows = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        pl.col("start", "end").cast(pl.Datetime("ms"))
    )
    episodes = score_episodes(windows, labels)
    ff = windows.filter(pl.col("fault") == "none")
    found = episodes.filter("detected")
    flagged, n = _outside_episodes(windows, episodes)
    res = {
        "warmup_s": warmup_s,
        "batch_rows": LIVE_BATCH_ROWS,
        "episodes": episodes.height,
        "episode_recall": found.height / episodes.height if episodes.height else None,
        "fault_free_windows": ff.height,
        "fault_free_flagged": float(ff["flagged"].mean()) if ff.height else None,
        "outside_jobs_windows": n,
        "outside_jobs_flagged": flagged / n if n else None,
        "top1_accuracy": float(found["top1"].mean()) if found.height else None,
        "warmup_windows": warm,
        "sentinel_windows": int(windows["sentinel"].is_not_null().sum()),
        "by_job": {
            k: {
                "episodes": g.height,
                "detected": int(g["detected"].sum()),
                "episode_recall": float(g["detected"].mean()),
                "top1_accuracy": float(g.filter("detected")["top1"].mean()) if g["detected"].any() else None,
            }
            for (k,), g in episodes.group_by("fault_type", maintain_order=True)
        },
        "failures": failures,
    }
    res["goals_met"] = _goals_met(res)
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
    ap.add_argument(
        "--live-warmup",
        type=float,
        default=12.0,
        metavar="S",
        help="live replay: fit on the first S seconds of each recording (default 12; the set has "
        ">= 15 s calm before its first job)",
    )
    ap.add_argument("--no-live", action="store_true", help="leave out the live replay")
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
        "command": "evaluate --mode alone (detect RUN's defaults), and with --min-run 1; live: "
        "watch's engine replaying each recording",
        "goals": GOALS,
        "defaults": measure(data, None),
        "min_run_1": measure(data, 1),
        **{f"min_run_{k}": measure(data, k) for k in args.also_min_run},
    }
    if not args.no_live:
        result["live"] = measure_live(data, args.live_warmup)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    for key in [k for k in result if k in ("defaults", "live") or k.startswith("min_run_")]:
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
