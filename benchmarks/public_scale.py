#!/usr/bin/env python
"""``reveal-lab reproduce --data`` on the public-layout proxy at several scales: wall time and
the peak memory of the whole process tree (kernels and Dask workers included).

    .venv/bin/python benchmarks/public_scale.py [--scales 1,2,4] [--engines inprocess,2]
        [--preset full] [--runs-per-workload 10] [--seconds 240] [--only NOTEBOOK ...]
        [--work DIR] [--out benchmarks/results/public_scale.json]
    .venv/bin/python benchmarks/public_scale.py --quick     # a tiny run that only shows it works

For each scale K the proxy is written once (``reveal-lab synth public DIR --scale K``: 2K
workloads per platform, ``--runs-per-workload`` runs of ``--seconds`` each, with its bad
inputs), then reproduced once per engine (``inprocess``: the notebooks' own process;
``N``: ``--workers N``, a local Dask cluster). A sampler adds up the resident memory of the
``reveal-lab`` process and all its descendants every 0.25 s and keeps the largest sum.

The result (``details.measured``) holds, per run: scale, runs, zip bytes, engine, exit status, wall seconds,
peak tree RSS, each notebook's seconds (``OUT/notebooks/status.json``) and the peak tree RSS
while it ran (from the executed notebooks' papermill start and end times), and the runs the
reproduction skipped; then the load average before and after, the machine, the commit,
the ratios issue 29 asks for (K=max against K=min: RSS ≤ 1.1x and ≤ 3 GB, time ≤ 1.1 x K),
and a projection of the real dataset (4,522 files) from the measured per-run cost:
``fixed + per_run x 4522`` on one machine and ``fixed + per_run x 4522 / N`` on N workers
(per-run cost from the difference between the largest and smallest scale).

Beside them (``_run_budget.py``): ``map_steps`` per reproduction, each study's map step as it
ran (per notebook and task: seconds per run, share, the seconds spent reading runs; from the
reproduction's ``OUT/cache/tasks.tsv``); ``stage_budget``, the detection stages one by one
(read, derive, window, features, each detector, attribution) on ``--budget-runs`` runs of the
smallest proxy, in the pruned spaces its reproduction fitted (as the studies score them), wall
and CPU seconds per run and share; ``dtw_sample``, notebook 05's study on the largest
proxy with each run compared with K other workloads' medians (``--dtw-samples``) against every
other workload: the labels and ranks that change. ``worker_model`` (``_worker_model.py``): the
scheduler's measured cost per empty task on 1, 2 and 4 single-threaded workers, each
reproduction measured with workers beside what the model makes of the in-process run's task
times, and the real dataset's 4,522 files projected to 1-32 workers from the two in-process
scales, with its assumptions. ``--merge RESULT``: an earlier result's reproductions (same
``--work``) join this run's, so that scales and engines measured in two sittings make one result.

Measure on a quiet machine; every figure in the docs names this command and the date.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from _harness import ROOT, Session, parser, row, side
from _run_budget import dtw_sample_effect, map_step_budget, stage_budget
from _worker_model import (
    dispatch_overhead,
    mean_member_bytes,
    model_wall,
    projection,
    serial_seconds,
    steps_of,
)

REAL_FILES = 4522
#: the real dataset's run files unzipped: ~24 GB of GPU and ~74 GB of CPU files
#: (../shared/reveal-dataset-format.md), their mean size against the proxy's scales its task times
REAL_MEAN_BYTES = (24e9 + 74e9) / REAL_FILES
#: the worker counts the model projects the real dataset to (0: in process)
MODEL_WORKERS = (0, 1, 2, 4, 8, 32)
CLI = [str(Path(sys.executable).parent / "reveal-lab")]


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        p = psutil.Process(pid)
        procs = [p, *p.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for q in procs:
        try:
            total += q.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


def run_measured(cmd: list[str], log: Path) -> dict:
    """Run ``cmd``; its wall time, exit status, the peak RSS of its process tree and the
    samples behind it (``samples``: ``(unix seconds, tree RSS bytes)`` every 0.25 s)."""
    peak, samples = [0], []
    t0 = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                rss = _tree_rss(proc.pid)
                samples.append((time.time(), rss))
                peak[0] = max(peak[0], rss)
                done.wait(0.25)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        rc = proc.wait()
        done.set()
        th.join()
    wall = round(time.perf_counter() - t0, 2)
    return {"exit": rc, "wall_s": wall, "peak_tree_rss_mb": round(peak[0] / 1e6, 1), "samples": samples}


def notebook_peaks(samples: list[tuple[float, int]], notebooks: Path) -> dict[str, float]:
    """The peak tree RSS (MB) while each notebook ran, from the executed notebooks' papermill
    ``start_time``/``end_time`` and the sampler's ``(unix seconds, bytes)``; ``between``:
    the peak outside every notebook (the runner alone)."""
    from datetime import datetime

    spans = {}
    for nb in sorted(notebooks.glob("*.ipynb")):
        try:
            meta = json.loads(nb.read_text())["metadata"]["papermill"]
            start = datetime.fromisoformat(meta["start_time"]).timestamp()
            end = datetime.fromisoformat(meta["end_time"]).timestamp() if meta.get("end_time") else float("inf")
        except (KeyError, TypeError, ValueError, json.JSONDecodeError):
            continue
        spans[nb.stem] = (start, end)
    peaks: dict[str, int] = {}  # only notebooks with a sample inside (an old output's times have none)
    between = 0
    for t, rss in samples:
        inside = [name for name, (a, b) in spans.items() if a <= t <= b]
        for name in inside:
            peaks[name] = max(peaks.get(name, 0), rss)
        if not inside:
            between = max(between, rss)
    return {**{k: round(v / 1e6, 1) for k, v in peaks.items()}, "between": round(between / 1e6, 1)}


def _projection(rows: list[dict]) -> dict:
    ok = [r for r in rows if r["exit"] == 0 and r["engine"] == "inprocess"]
    if len(ok) < 2:
        return {}
    lo, hi = min(ok, key=lambda r: r["runs"]), max(ok, key=lambda r: r["runs"])
    if hi["runs"] == lo["runs"]:
        return {}
    per_run = (hi["wall_s"] - lo["wall_s"]) / (hi["runs"] - lo["runs"])
    fixed = max(lo["wall_s"] - per_run * lo["runs"], 0.0)
    return {
        "per_run_s": round(per_run, 3),
        "fixed_s": round(fixed, 1),
        "real_files": REAL_FILES,
        "one_machine_h": round((fixed + per_run * REAL_FILES) / 3600, 2),
        "workers_h": {n: round((fixed + per_run * REAL_FILES / n) / 3600, 2) for n in (2, 8, 32, 128)},
        "note": "ideal division of the per-run cost over N workers; the same per-run cost as measured here",
    }


def _ratios(rows: list[dict]) -> dict:
    out = {}
    for engine in sorted({r["engine"] for r in rows}):
        ok = sorted((r for r in rows if r["engine"] == engine and r["exit"] == 0), key=lambda r: r["scale"])
        if len(ok) < 2:
            continue
        lo, hi = ok[0], ok[-1]
        k = hi["scale"] / lo["scale"]
        rss, wall = hi["peak_tree_rss_mb"] / lo["peak_tree_rss_mb"], hi["wall_s"] / lo["wall_s"]
        out[engine] = {
            "scales": [lo["scale"], hi["scale"]],
            "rss_ratio": round(rss, 3),
            "rss_ok": rss <= 1.1 and hi["peak_tree_rss_mb"] <= 3000,
            "wall_ratio": round(wall, 3),
            "wall_ok": wall <= 1.1 * k,
        }
    return out


def _dtw_comparisons(k: int) -> int:
    """Notebook 05's comparisons per run on the proxy at scale ``k``: its own workload's median
    and every other workload's of its platform (``2k`` workloads), at most 32 others."""
    return 1 + min(2 * k - 1, 32)


def worker_model(rows: list[dict], work: Path) -> dict:
    """The reproduction on N workers modelled from the in-process runs' task times
    (``_worker_model``): the scheduler's measured cost per task, the model beside each
    reproduction measured with workers, and the real dataset projected from the two
    in-process scales."""
    import os

    from reveal_lab.scale import task_times

    inproc = {r["scale"]: r for r in rows if r["engine"] == "inprocess" and r["exit"] == 0}
    tasks = {k: task_times(work / f"out-K{k}-inprocess" / "cache") for k in inproc}  # each log read once
    counts = sorted({int(r["engine"]) for r in rows if r["engine"] != "inprocess"} | {1, 2, 4})
    dispatch = {n: dispatch_overhead(n) for n in counts}
    cores = os.cpu_count() or 1
    steps, serial = {}, {}  # per scale: the in-process run's map steps and its notebooks' own seconds
    for k, base in inproc.items():
        steps[k] = steps_of(tasks[k])
        serial[k] = serial_seconds(base["notebook_seconds"], steps[k])
        serial[k]["runner"] = max(base["wall_s"] - sum(v or 0 for v in base["notebook_seconds"].values()), 0.0)
    checks = []
    for r in rows:
        base = inproc.get(r["scale"])
        if r["engine"] == "inprocess" or base is None or r["exit"] != 0:
            continue
        n = int(r["engine"])
        model = model_wall(steps[r["scale"]], serial[r["scale"]], n, dispatch[n]["dispatch_s"], cores=cores)
        checks.append({"scale": r["scale"], "workers": n, "measured_s": r["wall_s"], "model_s": round(model, 1),
                       "in_process_s": base["wall_s"], "measured_speedup": round(base["wall_s"] / r["wall_s"], 3),
                       "model_speedup": round(base["wall_s"] / model, 3)})
    out: dict = {"cores": cores, "dispatch": list(dispatch.values()), "checks": checks}
    if len(inproc) >= 2:
        lo, hi = inproc[min(inproc)], inproc[max(inproc)]
        proxy_bytes = mean_member_bytes(work / f"proxy-K{hi['scale']}")
        factor = REAL_MEAN_BYTES / proxy_bytes if proxy_bytes else 1.0
        out["projection"] = projection(
            lo, hi, tasks[hi["scale"]], REAL_FILES, MODEL_WORKERS,
            dispatch[max(counts)]["dispatch_s"], bytes_factor=factor,
            dtw_comparisons=(_dtw_comparisons(lo["scale"]), _dtw_comparisons(hi["scale"])),
        )
        out["projection"]["proxy_mean_member_mb"] = round(proxy_bytes / 1e6, 2)
        out["projection"]["real_mean_member_mb"] = round(REAL_MEAN_BYTES / 1e6, 2)
        out["projection"]["assumptions"] = (
            "one core per worker; each map step's tasks as long as measured in process at the larger scale, "
            "times the real files' mean size over the proxy's, cycled to 4,522 runs; every step waits for its "
            "last task; a notebook's own work (kernel, reduce, figures) a line through the two scales in runs "
            "(05's in comparisons: 33 a run at the real scale, at most 32 other workloads), not parallel; "
            "the scheduler hands out one task per dispatch_s"
        )
    return out


def rows(measured: list[dict], preset: str) -> list[dict]:
    """One result row per scale and engine: wall seconds, the peak RSS of the process tree."""
    return [
        row(
            f"`reproduce --preset {preset}` on the proxy, K={r['scale']} ({r['runs']} runs), {r['engine']}",
            "s",
            side("reveal-lab reproduce", r["wall_s"]),
            peak_mb=r["peak_tree_rss_mb"],
            note="" if r["exit"] == 0 else f"exit {r['exit']}",
        )
        for r in measured
    ]


def measure_scale(k: int, args, work: Path) -> Iterator[dict]:  # noqa: ANN001 - the parsed arguments
    """Write the proxy at scale ``k`` (once) and reproduce it with each engine, yielding each
    engine's row as soon as it is measured."""
    data = work / f"proxy-K{k}"
    if not (data / "Reveal_CPU.zip").exists():
        synth = [*CLI, "synth", "public", str(data), "--scale", str(k)]
        synth += ["--runs-per-workload", str(args.runs_per_workload), "--seconds", str(args.seconds)]
        subprocess.run(synth, check=True, cwd=ROOT)
    zip_bytes = sum(p.stat().st_size for p in data.glob("Reveal_*.zip"))
    for engine in args.engines.split(","):
        out = work / f"out-K{k}-{engine}"
        if out.exists():  # an earlier run's output and cache: every reproduction here starts cold
            shutil.rmtree(out)
        cmd = [*CLI, "reproduce", "--preset", args.preset, "--data", str(data), "--out", str(out)]
        cmd += [a for nb in args.only for a in ("--only", nb)]
        if engine != "inprocess":
            cmd += ["--workers", engine]
        print(f"K={k} engine={engine}: {' '.join(cmd[1:])}", flush=True)
        m = run_measured(cmd, work / f"log-K{k}-{engine}.txt")
        samples = m.pop("samples")
        status = {}
        status_file = out / "notebooks" / "status.json"
        if status_file.exists():
            status = {nb: r.get("seconds") for nb, r in json.loads(status_file.read_text()).items()}
        skipped = out / "skipped_runs.csv"
        runs_csv = out / "tables" / "dataset_runs.csv"
        n_runs = sum(1 for _ in open(runs_csv)) - 1 if runs_csv.exists() else None
        measured = {
            "scale": k,
            "runs": n_runs,
            "zip_bytes": zip_bytes,
            "engine": engine,
            **m,
            "notebook_seconds": status,
            "notebook_peak_tree_rss_mb": notebook_peaks(samples, out / "notebooks"),
            "skipped_runs": (sum(1 for _ in open(skipped)) - 1) if skipped.exists() else 0,
            "map_steps": map_step_budget(out / "cache", n_runs or 0),
        }
        print(f"  exit {m['exit']}, {m['wall_s']} s, peak tree RSS {m['peak_tree_rss_mb']} MB", flush=True)
        yield measured


def _merged(path: str | None, scales: list[int], engines: list[str]) -> tuple[list[dict], dict]:
    """The reproductions an earlier result measured that this run does not measure again, and
    its stage budget and DTW sample."""
    if not path:
        return [], {}
    prior = json.loads(Path(path).read_text())
    again = {(k, e) for k in scales for e in engines}
    kept = [r for r in prior["measured"] if (r["scale"], r["engine"]) not in again]
    return kept, {k: prior[k] for k in ("stage_budget", "dtw_sample") if k in prior}


def main(argv: list[str] | None = None) -> int:
    ap = parser("public_scale", __doc__, quick="a tiny run (K=1,2; 2 runs of 10 s; notebook 01)")
    ap.add_argument("--check", dest="quick", action="store_true", help="the same as --quick")
    ap.add_argument("--scales", default="1,2,4")
    ap.add_argument("--engines", default="inprocess,2", help="inprocess and/or worker counts, a list")
    ap.add_argument("--preset", default="full", choices=("smoke", "full"))
    ap.add_argument("--runs-per-workload", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=240.0)
    ap.add_argument("--only", action="append", default=[], help="reproduce only this notebook (repeatable)")
    ap.add_argument("--work", default=None, help="folder for the proxies and outputs (default: temporary)")
    ap.add_argument("--budget-runs", type=int, default=8,
                    help="runs of the smallest proxy the detection stages are timed on (0: none)")
    ap.add_argument("--dtw-samples", default="1,2,3",
                    help="sample sizes of other workloads notebook 05 is measured with against all (empty: none)")
    ap.add_argument("--merge", default=None,
                    help="an earlier result of this benchmark with the same --work folder: its measured "
                    "reproductions join this run's (one measured again here replaces it)")
    ap.add_argument("--no-model", dest="model", action="store_false",
                    help="leave out the worker model (the scheduler's cost per task, the projection on N workers)")
    args = ap.parse_args(argv)
    if args.quick:
        args.scales, args.engines, args.preset = "1,2", "inprocess", "smoke"
        args.budget_runs, args.dtw_samples = 2, "1"
        args.runs_per_workload, args.seconds, args.only = 2, 10.0, args.only or ["01-dataset-overview"]
    session = Session("public_scale", argv, versions=("dask", "distributed", "psutil"))
    import tempfile

    work = Path(args.work or tempfile.mkdtemp(prefix="public-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    scales = [int(s) for s in args.scales.split(",")]
    planned = [f"K={k} {engine}" for k in scales for engine in args.engines.split(",")]
    settings = {name: v for name, v in vars(args).items() if name not in ("out", "work")}
    measured, extra = _merged(args.merge, scales, args.engines.split(","))
    planned = [f"K={r['scale']} {r['engine']}" for r in measured] + planned
    for k in scales:
        for one in measure_scale(k, args, work):
            measured.append(one)
            # written after every measurement: a benchmark stopped part way keeps what it measured
            details = {
                "settings": settings,
                "planned": planned,
                "complete": len(measured) == len(planned),
                "measured": measured,
                "issue29_ratios": _ratios(measured),
                "projection": _projection(measured),
                **extra,
            }
            session.write(Path(args.out), rows(measured, args.preset), details)
    smallest = work / f"proxy-K{min(scales)}"
    if args.budget_runs and smallest.exists():
        print(f"detection stages on {args.budget_runs} runs of {smallest}", flush=True)
        spaces = work / f"out-K{min(scales)}-{args.engines.split(',')[0]}"  # its reproduction's pruned spaces
        extra["stage_budget"] = stage_budget(smallest, args.budget_runs, spaces=spaces if spaces.exists() else None)
    largest = work / f"proxy-K{max(scales)}"  # the most workloads: where a sample leaves most out
    if args.dtw_samples and largest.exists():
        print(f"notebook 05 with samples of {args.dtw_samples} other workloads on {largest}", flush=True)
        extra["dtw_sample"] = dtw_sample_effect(largest, tuple(int(x) for x in args.dtw_samples.split(",")))
    if args.model and not args.quick:
        print("worker model: the scheduler's cost per task, the projection", flush=True)
        extra["worker_model"] = worker_model(measured, work)
    if extra:
        session.write(Path(args.out), rows(measured, args.preset), {**details, **extra})
    print("| K | runs | engine | wall s | peak tree RSS MB |\n|---:|---:|---|---:|---:|")
    for r in measured:
        print(f"| {r['scale']} | {r['runs']} | {r['engine']} | {r['wall_s']} | {r['peak_tree_rss_mb']} |")
    return 0 if all(r["exit"] == 0 for r in measured) else 1


if __name__ == "__main__":
    sys.exit(main())
