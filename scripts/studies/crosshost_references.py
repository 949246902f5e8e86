#!/usr/bin/env python
"""How many fault-free runs of a job cross-host deviation needs (a study behind issue #11's
whole-run labels).

:func:`reveal_lab.crosshost.baseline_deviation` judges each host of a multi-host run against
the cluster and against itself in fault-free runs of the same job, with a bar calibrated on
those runs alone. ``reveal-lab evaluate`` gives it every other fault-free run of the job (4 on
the bundled v3 data). Here it gets fewer: for ``m`` reference runs (``--refs``, several in one
run), every ``m``-subset of the fault-free DDP runs is used in turn, and

* each fault-free run is judged against every ``m``-subset of the *other* fault-free runs:
  the share of its hosts flagged (false alarms);
* each whole-run label (``scope="run"``) is judged against every ``m``-subset of the fault-free
  runs: the share of (label, subset) pairs where its host is flagged (found).

Runs are cut to their recorded workload span and each host's own core and cgroup are renamed
(:func:`reveal_lab.studies.own_core_view`), as in ``evaluate``.

    .venv/bin/python scripts/studies/crosshost_references.py [--data data/lab] [--refs 2,3,4]

Writes ``docs/studies/crosshost_references.json`` (or ``--out``). A detection study, not a
timing: the machine's load does not change its numbers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import itertools
import json
import platform
from pathlib import Path

import polars as pl

from reveal_lab.config import data_dir
from reveal_lab.crosshost import deviation, judge_deviation
from reveal_lab.io import load_run, read_labels, read_meta
from reveal_lab.pipeline import trim_run
from reveal_lab.studies import own_core_view

ROOT = Path(__file__).resolve().parents[2]


def measure(root: Path, refs_sizes: list[int]) -> dict:
    """False alarms and labels found for each number of reference runs (see the module doc)."""
    meta, labels = read_meta(root / "meta_lab.csv"), read_labels(root / "labels.csv")
    multi = meta.filter(pl.col("world_size").cast(pl.Int64, strict=False) > 1)
    cache: dict[str, pl.DataFrame] = {}
    n_hosts = multi.group_by("run").len()

    def dev_of(run: str) -> pl.DataFrame:  # each run's hosts against each other, once
        if run not in cache:
            out = {}
            for r in multi.filter(pl.col("run") == run).iter_rows(named=True):
                span = tuple(dt.datetime.fromisoformat(str(r[k])) for k in ("workload_start", "workload_end"))
                frame, _ = trim_run(load_run(root / r["source_file"].removeprefix("./")), span=span)
                out[r["host"]] = own_core_view(frame.frame, r["host"], r["core"])
            cache[run] = deviation(out, align="time")
        return cache[run]

    @functools.cache  # the labels of one run are judged against the same reference sets
    def flagged(run: str, refs: tuple[str, ...]) -> frozenset[str]:
        dev = judge_deviation(dev_of(run), [dev_of(r) for r in refs])
        return frozenset(dev.filter(pl.col("persistent"))["host"].to_list())

    free = multi.filter(pl.col("fault") == "none")["run"].unique(maintain_order=True).to_list()
    run_labels = labels.filter(pl.col("scope") == "run")
    by_refs = {}
    for m in refs_sizes:
        if m < 2 or m > len(free) - 1:
            raise ValueError(f"--refs {m}: between 2 and {len(free) - 1} (the fault-free runs less one)")
        fa = n_fa = 0
        for run in free:
            for refs in itertools.combinations([r for r in free if r != run], m):
                fa += len(flagged(run, refs))
                n_fa += int(n_hosts.filter(pl.col("run") == run)["len"].item())
        found: dict[str, list[int]] = {}
        for lab in run_labels.iter_rows(named=True):
            for refs in itertools.combinations(free, m):
                c = found.setdefault(lab["fault_type"], [0, 0])
                c[0] += lab["host"] in flagged(lab["run"], refs)
                c[1] += 1
        hit, total = sum(v[0] for v in found.values()), sum(v[1] for v in found.values())
        by_refs[str(m)] = {
            "fault_free_hosts_judged": n_fa,
            "fault_free_hosts_flagged": fa,
            "false_alarm_share": fa / n_fa if n_fa else None,
            "labels_judged": total,
            "labels_found": hit,
            "found_share": hit / total if total else None,
            "by_fault": {k: {"found": v[0], "judged": v[1]} for k, v in found.items()},
        }
    return {"fault_free_runs": len(free), "labels": run_labels.height, "by_refs": by_refs}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None, help="lab dataset folder (default: the bundled data/lab)")
    p.add_argument("--refs", default="2,3,4", help="numbers of fault-free reference runs, comma-separated")
    p.add_argument("--out", default=str(ROOT / "docs" / "studies" / "crosshost_references.json"))
    args = p.parse_args()
    root = Path(args.data) if args.data else data_dir()
    try:
        sizes = [int(x) for x in args.refs.split(",") if x.strip()]
    except ValueError:
        p.error(f"--refs: whole numbers separated by commas, got {args.refs!r}")
    try:
        res = {
            "schema": 2,
            "kind": "study",
            "study": "crosshost_references",
            "data": str(root),
            **measure(root, sizes),
        }
    except ValueError as exc:
        p.error(str(exc))
    res |= {
        "host": {"node": platform.node(), "python": platform.python_version()},
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(
        "\n".join(
            f"{m} reference runs: fault-free hosts flagged {v['fault_free_hosts_flagged']}/"
            f"{v['fault_free_hosts_judged']}, labels found {v['labels_found']}/{v['labels_judged']}"
            for m, v in res["by_refs"].items()
        )
        + f"\nwrote {out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
