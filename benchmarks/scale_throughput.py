#!/usr/bin/env python
"""Throughput of ``reveal-lab scan`` on Dask: runs per minute with 1 and 2 workers, per-run cost.

    .venv/bin/python benchmarks/scale_throughput.py [--runs 8] [--seconds 120] [--channels 790]
                                                    [--cost-seconds 120,480] [--data DIR] [--quick]

Data: by default seeded synthetic runs (:func:`reveal_lab.synth.make_run`, CPU-host-like
790 channels at 100 ms) written in the public layout (``Reveal_CPU.zip`` holding
``train_separated/*.txt`` tab-separated files, via :func:`reveal_lab.io.export_tsv`), so
workers parse text members streamed out of a zip exactly as on the public dataset.
``--data DIR`` scans an existing dataset instead (e.g. ``data/fixtures/reveal_sample``).

Measured, all in this one run:

* in-process (no Dask) per-run cost at two run lengths (``--cost-seconds``), after a
  warm-up run (numba compilation excluded), to fit ``cost = a + b * rows``;
* ``scan`` on a ``LocalCluster`` with 1 and 2 worker processes (1 thread each):
  wall time, runs/minute, median per-run time inside the workers, peak worker RSS,
  cluster start-up time (reported apart);
* the 2-worker / 1-worker speed-up.

Writes ``benchmarks/results/scale_throughput.json``; docs/SCALE_PLAN.md extrapolates it.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import warnings
import zipfile
from pathlib import Path

from _harness import Session, parser, row, side


def write_public_layout(root: Path, n_runs: int, seconds: float, channels: int, seed0: int = 0) -> Path:
    """``n_runs`` synthetic CPU-host runs as ``Reveal_CPU.zip`` (+ nothing else) under ``root``."""
    import datetime as dt

    from reveal_lab.io import export_tsv
    from reveal_lab.synth import Anomaly, make_run

    root.mkdir(parents=True, exist_ok=True)
    txt = root / "_txt"
    paths = []
    for i in range(n_runs):
        start = dt.datetime(2025, 6, 1, 8, 0, 0) + dt.timedelta(hours=i)
        anomalies = [Anomaly(("cpu", "memory", "network", "storage")[i % 4], seconds * 0.6, seconds * 0.7)]
        run, _ = make_run(
            seconds,
            n_channels=channels,
            hosts=("nserver07",),
            seed=seed0 + i,
            profile_seed=7,
            start=start,
            anomalies=anomalies,
        )
        paths += export_tsv(
            run, txt, prefix="train", model="Resnet50", task="ImageClassification", dataset="CIFAR10"
        )
    with zipfile.ZipFile(root / "Reveal_CPU.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for p in paths:
            z.write(p, f"train_separated/{p.name}")
    for p in paths:
        p.unlink()
    txt.rmdir()
    return root


def in_process_cost(root: Path, preset: str, warm: bool = True) -> dict:
    """Per-run seconds in this process (load from the zip + detect), after one warm-up run."""
    from reveal_lab.scale import detect_task, execute, run_refs

    refs = run_refs(root)
    if warm:
        execute(refs[0], detect_task, {"preset": preset})  # compiles the numba kernels
        refs = refs[1:]
    secs, rows, cols = [], [], []
    for ref in refs:
        o = execute(ref, detect_task, {"preset": preset})
        if not o.ok:
            raise RuntimeError(f"{ref.run_id}: {o.error}")
        secs.append(o.seconds)
        rows.append(o.summary["n_rows"])
        cols.append(o.summary["n_cols"])
    return {
        "runs": len(secs),
        "rows": int(statistics.median(rows)),
        "cols": int(statistics.median(cols)),
        "median_s": statistics.median(secs),
        "min_s": min(secs),
        "max_s": max(secs),
    }


def dask_scan(root: Path, n_workers: int, preset: str, memory_limit: str) -> dict:
    from reveal_lab.scale import dask_client, scan

    t0 = time.perf_counter()
    with dask_client(n_workers=n_workers, memory_limit=memory_limit, quiet=True) as client:
        client.wait_for_workers(n_workers, timeout=120)
        startup = time.perf_counter() - t0
        # warm each worker (numba compilation happens once per worker process)
        from reveal_lab.scale import run_refs

        refs = run_refs(root)
        warm = scan(
            root,
            refs=refs[:n_workers],
            scheduler=client,
            task_kwargs={"preset": preset},
            progress=False,
            echo=lambda _m: None,
        )
        res = scan(
            root,
            refs=refs,
            scheduler=client,
            task_kwargs={"preset": preset},
            progress=False,
            echo=lambda _m: None,
        )
    if res.failures:
        raise RuntimeError(f"failed runs: {[(f.run_id, f.error) for f in res.failures]}")
    per_run = [o.seconds for o in res.outcomes]
    return {
        "workers": n_workers,
        "runs": len(res.outcomes),
        "wall_s": res.seconds,
        "runs_per_minute": res.runs_per_minute,
        "per_run_median_s": statistics.median(per_run),
        "peak_worker_rss_mb": max(o.peak_rss_mb or 0 for o in res.outcomes),
        "cluster_startup_s": startup,
        "warmup_wall_s": warm.seconds,
        "peak_in_flight": res.peak_in_flight,
    }


def rows(details: dict) -> list[dict]:
    """The result rows: one run in process per size, and Dask's runs per minute per worker count
    (no alternative: the two are set side by side)."""
    out = [
        row(
            f"one run in process, {r['rows']} rows x {r['cols']} channels",
            "s",
            side("in process", r["median_s"]),
        )
        for r in details.get("in_process") or []
    ]
    for r in details.get("dask") or []:
        out.append(
            row(
                f"Dask, {r['workers']} worker(s), {r['runs']} runs",
                "runs/min",
                side("dask", r["runs_per_minute"]),
                higher_is_better=True,
                peak_mb=r.get("peak_worker_rss_mb"),
            )
        )
    if details.get("dask") and details.get("speedup_2_vs_1") is not None:
        out[-1]["note"] = f"2 vs 1 workers: {details['speedup_2_vs_1']:.2f}x"
    return out


def cost_model(tmp: Path, args) -> dict:  # noqa: ANN001 - the parsed arguments
    """In-process per-run cost at the ``--cost-seconds`` lengths, the linear fit through the
    first and last and, with ``--check-seconds``, one longer run against it and a quadratic fit."""
    out: dict = {}
    cost = []
    for secs in [float(s) for s in args.cost_seconds.split(",") if s]:
        root = write_public_layout(tmp / f"cost{int(secs)}", 4, secs, args.channels, seed0=100)
        c = {**in_process_cost(root, args.preset), "seconds": secs}
        cost.append(c)
        print(
            f"in-process: {c['rows']} rows x {c['cols']} cols: {c['median_s']:.2f} s/run "
            f"(median of {c['runs']})",
            flush=True,
        )
    out["in_process"] = cost
    if len(cost) < 2:
        return out
    (r1, s1), (r2, s2) = (cost[0]["rows"], cost[0]["median_s"]), (cost[-1]["rows"], cost[-1]["median_s"])
    b = (s2 - s1) / (r2 - r1)
    out["cost_model"] = {
        "fixed_s": s1 - b * r1,
        "per_1000_rows_s": 1000 * b,
        "channels": args.channels,
        "fit": "cost = fixed + per_row * rows, from the two in-process sizes",
    }
    if not args.check_seconds:
        return out
    root = write_public_layout(tmp / "check", 1, args.check_seconds, args.channels, seed0=200)
    c = in_process_cost(root, args.preset, warm=False)  # kernels already compiled above
    m = out["cost_model"]
    predicted = m["fixed_s"] + m["per_1000_rows_s"] * c["rows"] / 1000
    out["check"] = {
        **c,
        "seconds": args.check_seconds,
        "predicted_s": predicted,
        "measured_over_predicted": c["median_s"] / predicted,
    }
    print(f"check: {c['rows']} rows: measured {c['median_s']:.1f} s, model {predicted:.1f} s", flush=True)
    pts = [(x["rows"] / 1000, x["median_s"]) for x in cost] + [(c["rows"] / 1000, c["median_s"])]
    if len(pts) == 3:  # three sizes: a quadratic term (the PCA's Gram matrix grows with windows squared)
        import numpy as np

        xs, ys = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
        a0, a1, a2 = np.linalg.solve(np.vstack([np.ones_like(xs), xs, xs**2]).T, ys)
        out["cost_model_quadratic"] = {
            "fixed_s": float(a0),
            "per_1000_rows_s": float(a1),
            "per_1000_rows_squared_s": float(a2),
            "fit": "cost = a0 + a1 * k + a2 * k^2, k = rows / 1000, through the three sizes",
            "extrapolated_s": {str(k): float(a0 + a1 * k + a2 * k * k) for k in (3.6, 18.0, 36.0, 54.0)},
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = parser("scale_throughput", __doc__, quick="2 runs of 20 s, 60 channels, cost at 20 and 40 s")
    ap.add_argument("--runs", type=int, default=8, help="runs in the throughput dataset")
    ap.add_argument("--seconds", type=float, default=120.0, help="length of each throughput run")
    ap.add_argument("--channels", type=int, default=790, help="channels per run (CPU hosts: ~790)")
    ap.add_argument("--cost-seconds", default="120,480", help="two run lengths for the per-run cost model")
    ap.add_argument("--preset", default="paper")
    ap.add_argument("--memory-limit", default="3GB", help="per worker")
    ap.add_argument("--data", type=Path, help="scan this dataset instead of synthetic runs")
    ap.add_argument(
        "--check-seconds",
        type=float,
        default=0.0,
        help="also time one run this long in-process and compare it with the cost model",
    )
    ap.add_argument("--skip-dask", action="store_true", help="only the in-process cost model (and check)")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.seconds, args.channels, args.cost_seconds = 2, 20.0, 60, "20,40"
    session = Session("scale_throughput", argv, versions=("dask", "distributed"))
    warnings.simplefilter(
        "ignore"
    )  # the loader's per-file notes (all-NaN columns ...) are not the point here
    details: dict = {"preset": args.preset}
    with tempfile.TemporaryDirectory(prefix="reveal-scale-") as tmp:
        tmp_path = Path(tmp)
        if args.data:
            data = args.data
            details["data"] = {"kind": "existing dataset", "root": str(args.data)}
        else:
            t = time.perf_counter()
            data = write_public_layout(tmp_path / "throughput", args.runs, args.seconds, args.channels)
            details["data"] = {
                "kind": "synthetic runs in the public layout (Reveal_CPU.zip, TSV members)",
                "runs": args.runs,
                "seconds": args.seconds,
                "channels": args.channels,
                "zip_bytes": (data / "Reveal_CPU.zip").stat().st_size,
                "write_s": time.perf_counter() - t,
            }
        details.update(cost_model(tmp_path, args))
        if not args.skip_dask:
            details["dask"] = [dask_scan(data, w, args.preset, args.memory_limit) for w in (1, 2)]
            for s in details["dask"]:
                print(
                    f"dask {s['workers']} worker(s): {s['runs']} runs in {s['wall_s']:.1f} s = "
                    f"{s['runs_per_minute']:.1f} runs/min (per run {s['per_run_median_s']:.2f} s, peak RSS "
                    f"{s['peak_worker_rss_mb']:.0f} MB, cluster start {s['cluster_startup_s']:.1f} s)",
                    flush=True,
                )
            details["speedup_2_vs_1"] = (
                details["dask"][1]["runs_per_minute"] / details["dask"][0]["runs_per_minute"]
            )
            print(f"speed-up 2 vs 1 worker: {details['speedup_2_vs_1']:.2f}x")
    session.write(args.out, rows(details), details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
