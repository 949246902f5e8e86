#!/usr/bin/env python
"""Sentinel counters (the study behind the pipeline's sentinel rule, issue #11's packet loss).

``reveal-lab evaluate``'s evidence (``episode_evidence.csv``) shows every packet-loss episode
of the lab recording in counters that never move in any fault-free run (the lossy host's
``TcpExtTCPOFOQueue``, its sender's ``TcpExtTCPFastRetrans``), and the detectors miss them:
pruning leaves out metrics constant in every fault-free run, and a feature constant in the
fit data is seen by the Z-score alone. This study measures the plainest rule that would use
them, on its own, without any detector (the pipeline's rule, ``DetectionPolicy.sentinel_samples``,
is this one at K = 5, with the baseline of ``detect_run``):

* for each host run, its *sentinels* are the counters (``_diff`` metrics) that are exactly 0 in
  every sample of every other fault-free run of the same workload, phase and host (leave one
  out, as ``evaluate --mode calibrated``), each run cut to its recorded workload span;
* a 3 s window (stride 1 s, the paper's windows) fires when one sentinel is non-zero in at
  least ``K`` of its samples (``--min-samples``, several values in one run).

For each ``K``: the share of fault-free windows that fire (false alarms) and, per fault type
and magnitude, the episodes with a firing window on their labelled host.

With ``--windows`` (the ``windows_calibrated.parquet`` of ``reveal-lab evaluate`` on the same
data), the rule is also set beside the detectors on their own windows: ``detectors`` (two
agreeing, the evaluation's flags), ``or_sentinel`` (two agreeing, or a sentinel firing) and
``sentinel_votes`` (a firing sentinel counts as one more detector in the agreement of two):
false alarms and episodes found for each.

    .venv/bin/python scripts/studies/sentinel_counters.py [--data data/lab] [--min-samples 1,3,5,10]
        [--windows out/eval/windows_calibrated.parquet]

Writes ``docs/studies/sentinel_counters.json`` (or ``--out``). A detection study, not a
timing: the machine's load does not change its numbers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from reveal_lab.config import data_dir
from reveal_lab.evaluation import fault_free_refs
from reveal_lab.io import load_run, read_labels, read_meta
from reveal_lab.pipeline import silent_columns, silent_counters, trim_run
from reveal_lab.telemetry import TIMESTAMP, Run

ROOT = Path(__file__).resolve().parents[2]
WINDOW, STRIDE = 30, 10  # samples at 100 ms: 3 s windows every 1 s


def host_runs(root: Path, meta: pl.DataFrame) -> Iterator[tuple[dict, pl.DataFrame, np.ndarray]]:
    """Per host run of ``meta``: its row, its frame (cut to the workload span) and, per sample,
    which sentinel counters are non-zero (samples x counters), the sentinels being the product's
    (:func:`reveal_lab.pipeline.silent_counters` over the other fault-free runs of the same
    workload, phase and host, cut alike; leave one out). Host runs without such runs are skipped;
    every file is read once."""
    cache: dict[str, Run] = {}

    def run(row: dict) -> Run:
        sf = row["source_file"]
        if sf not in cache:
            r = load_run(root / sf.removeprefix("./"))
            if row.get("workload_start") and row.get("workload_end"):
                a, b = (dt.datetime.fromisoformat(str(row[k])) for k in ("workload_start", "workload_end"))
                r, _ = trim_run(r, span=(a, b))
            cache[sf] = r
        return cache[sf]

    silent: dict[str, set[str]] = {}

    def quiet(row: dict) -> set[str]:
        """The run's own silent counters: those of several runs are what each run's share."""
        sf = row["source_file"]
        if sf not in silent:
            silent[sf] = silent_counters([run(row)])
        return silent[sf]

    for row in meta.iter_rows(named=True):
        refs = fault_free_refs(meta, row)
        if refs.is_empty():
            continue
        f = run(row).frame
        cols = silent_columns(f, set.intersection(*(quiet(r) for r in refs.iter_rows(named=True))))
        moved = (
            np.column_stack([np.nan_to_num(f[c].cast(pl.Float64).to_numpy()) != 0 for c in cols])
            if cols
            else np.zeros((f.height, 0), dtype=bool)
        )
        yield row, f, moved


def beside_detectors(hosts: list, labels: pl.DataFrame, windows: pl.DataFrame, ks: list[int]) -> dict:
    """The rule on the evaluation's own windows, alone and combined with its detectors' flags
    (``hosts``: :func:`host_runs`' items; ``labels``: the episode labels)."""
    need = {"run", "host", "start", "end", "agreement", "baseline"}
    if not need <= set(windows.columns):
        raise SystemExit(f"--windows: expected the columns {sorted(need)} (windows_calibrated.parquet)")
    parts = []
    for row, f, moved in hosts:
        w = windows.filter((pl.col("run") == row["run"]) & (pl.col("host") == row["host"]))
        if w.is_empty():
            continue
        ts = f[TIMESTAMP]
        most = [
            int(moved[((ts >= a) & (ts < b)).to_numpy()].sum(axis=0).max(initial=0))
            for a, b in zip(w["start"], w["end"], strict=True)
        ]
        parts.append(w.with_columns(sentinel_samples=pl.Series(most, dtype=pl.Int64)))
    allw = pl.concat(parts, how="diagonal_relaxed")
    out = {}
    for k in ks:
        fire = pl.col("sentinel_samples") >= k
        rules = {
            "detectors": pl.col("agreement") >= 2,
            "or_sentinel": (pl.col("agreement") >= 2) | fire,
            "sentinel_votes": (pl.col("agreement") + fire.cast(pl.Int64)) >= 2,
        }
        res = {}
        for name, rule in rules.items():
            a = allw.with_columns(f=rule)
            base = a.filter(pl.col("baseline"))
            found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for lab in labels.iter_rows(named=True):
                hit = a.filter(
                    (pl.col("run") == lab["run"]) & (pl.col("host") == lab["host"])
                    & (pl.col("end") > lab["start"]) & (pl.col("start") < lab["end"]) & pl.col("f")
                ).height > 0  # fmt: skip
                cell = found[f"{lab['fault_type']}@{lab['magnitude']:g}"]
                cell[0] += hit
                cell[1] += 1
            res[name] = {
                "false_alarm_share": float(base["f"].mean()) if base.height else None,
                "false_alarm_windows": int(base["f"].sum()),
                "episodes_found": sum(v[0] for v in found.values()),
                "episodes": sum(v[1] for v in found.values()),
                "by_fault": {n: {"found": v[0], "episodes": v[1]} for n, v in sorted(found.items())},
            }
        out[str(k)] = res
    return out


def measure(hosts: list, labels: pl.DataFrame, ks: list[int]) -> dict:
    """The rule alone on 3 s windows every 1 s of each host run (``hosts``: :func:`host_runs`'
    items; ``labels``: the episode labels)."""
    ff_windows = 0
    ff_fired = dict.fromkeys(ks, 0)
    by_run: dict[int, list] = defaultdict(list)
    found: dict[int, dict] = {k: defaultdict(lambda: [0, 0]) for k in ks}
    for row, f, moved in hosts:
        if f.height < WINDOW:
            continue
        ts = f[TIMESTAMP].to_numpy()
        starts = np.arange(0, f.height - WINDOW + 1, STRIDE)
        counts = np.array([moved[s : s + WINDOW].sum(axis=0).max(initial=0) for s in starts])
        w0, w1 = ts[starts], ts[starts + WINDOW - 1]
        labs = labels.filter((pl.col("run") == row["run"]) & (pl.col("host") == row["host"]))
        for k in ks:
            fire = counts >= k
            if row["fault"] == "none":
                ff_fired[k] += int(fire.sum())
                if fire.any():
                    by_run[k].append({"run": row["run"], "host": row["host"], "windows": int(fire.sum())})
            for lab in labs.iter_rows(named=True):
                a, b = np.datetime64(lab["start"]), np.datetime64(lab["end"])
                hit = bool((fire & (w1 > a) & (w0 < b)).any())
                cell = found[k][f"{lab['fault_type']}@{lab['magnitude']:g}"]
                cell[0] += hit
                cell[1] += 1
        if row["fault"] == "none":
            ff_windows += len(starts)
    return {
        "fault_free_windows": ff_windows,
        "by_min_samples": {
            str(k): {
                "false_alarm_share": ff_fired[k] / ff_windows if ff_windows else None,
                "false_alarm_windows": ff_fired[k],
                "fault_free_runs_firing": by_run[k],
                "episodes_found": {
                    name: {"found": v[0], "episodes": v[1]} for name, v in sorted(found[k].items())
                },
            }
            for k in ks
        },
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None, help="lab dataset folder (default: the bundled data/lab)")
    p.add_argument("--min-samples", default="1,3,5,10", help="values of K, comma-separated")
    p.add_argument("--out", default=str(ROOT / "docs" / "studies" / "sentinel_counters.json"))
    p.add_argument(
        "--windows",
        default=None,
        help="windows_calibrated.parquet of `reveal-lab evaluate` on the same data: the rule beside "
        "the detectors",
    )
    args = p.parse_args(argv)
    root = Path(args.data) if args.data else data_dir()
    try:
        ks = sorted({int(x) for x in args.min_samples.split(",") if x.strip()})
    except ValueError:
        p.error(f"--min-samples: expected whole numbers like 1,3,5,10, got {args.min_samples!r}")
    if not ks or min(ks) < 1:
        p.error("--min-samples: every K must be >= 1")
    if args.windows and not Path(args.windows).is_file():
        p.error(f"--windows {args.windows}: no such file (expected windows_calibrated.parquet)")
    labels = read_labels(root / "labels.csv").filter(pl.col("scope") == "episode")
    hosts = list(host_runs(root, read_meta(root / "meta_lab.csv")))  # each file read once
    res = {
        "schema": 2,
        "kind": "study",
        "study": "sentinel_counters",
        "data": str(root),
        "window_samples": WINDOW,
    }
    res.update(measure(hosts, labels, ks))
    if args.windows:
        res["beside_detectors"] = beside_detectors(hosts, labels, pl.read_parquet(args.windows), ks)
        res["windows"] = str(args.windows)
    res["date"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1))
    for k, v in res["by_min_samples"].items():
        loss = {n: f"{c['found']}/{c['episodes']}" for n, c in v["episodes_found"].items() if "packet" in n}
        share, n = v["false_alarm_share"], v["false_alarm_windows"]
        print(f"K={k}: false alarms {share:.4f} ({n}), packet loss {loss}")
    for k, rules in res.get("beside_detectors", {}).items():
        for name, v in rules.items():
            print(
                f"K={k} {name}: false alarms {v['false_alarm_share']:.4f} ({v['false_alarm_windows']}), "
                f"episodes {v['episodes_found']}/{v['episodes']}"
            )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
