"""Benchmark: ``reveal-lab detect`` on a synthetic 30-minute, 700-channel run (18,000 rows).

The run is written as a canonical Parquet run, then detected in fresh subprocesses the
way a user runs it:

* ``cli``: ``reveal-lab detect RUN --out DIR`` (load → derive → windows → features →
  detectors → attribution → report); wall time and the child's peak RSS
  (``ru_maxrss`` from ``getrusage(RUSAGE_CHILDREN)``);
* ``traced``: the same steps in a child under ``tracemalloc`` (peak of Python-visible
  allocations, numpy arrays included) with the per-stage timings of ``detect_run``.

Target: peak memory under 2 GB.

    .venv/bin/python benchmarks/end_to_end.py     # writes benchmarks/results/end_to_end.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRACED = r"""
import json, sys, time, tracemalloc
tracemalloc.start()
from reveal_lab.io import load_run
from reveal_lab.pipeline import detect_run
from reveal_lab.report import write_report
t = time.perf_counter()
run = load_run(sys.argv[1])
load_s = time.perf_counter() - t
det = detect_run(run)
t = time.perf_counter()
write_report(det, sys.argv[2])
report_s = time.perf_counter() - t
cur, peak = tracemalloc.get_traced_memory()
print(json.dumps({"tracemalloc_peak_bytes": peak, "load_s": load_s, "report_s": report_s,
                  "timings_s": det.timings, "windows": det.windows.height,
                  "anomalous": det.summary["anomalous"], "evidence_rows": det.evidence.height}))
"""


def _child(cmd: list[str]) -> tuple[subprocess.CompletedProcess, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if r.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed:\n{r.stderr[-3000:]}")
    # ru_maxrss of RUSAGE_CHILDREN is the largest child so far (kB on Linux)
    return r, wall, max(after, before) * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=1800.0)
    ap.add_argument("--channels", type=int, default=700)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "end_to_end.json"))
    args = ap.parse_args()

    from reveal_lab.io import write_parquet_run
    from reveal_lab.synth import Anomaly, make_run

    tmp = Path(tempfile.mkdtemp(prefix="reveal-e2e-"))
    anomalies = [
        Anomaly("cpu", 300, 306),
        Anomaly("network", 700, 706, "variance"),
        Anomaly("storage", 1100, 1106, "trend"),
        Anomaly("gpu", 1500, 1506, "oscillation"),
    ]
    run, _ = make_run(args.seconds, args.channels, seed=0, anomalies=anomalies)
    path = write_parquet_run(run, tmp / "synth_30min_700ch.parquet")
    rows, cols = run.frame.height, run.frame.width - 1
    del run
    print(f"run: {rows} rows x {cols} channels -> {path} ({path.stat().st_size / 1e6:.1f} MB)")

    exe = Path(sys.executable).parent / "reveal-lab"
    cli = (
        [str(exe)]
        if exe.exists()
        else [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())"]
    )
    results = {}
    # warm-up run first (compiles/caches numba kernels), then the measured CLI run
    for label in ("cli_first", "cli"):
        r, wall, rss = _child([*cli, "detect", str(path), "--out", str(tmp / label)])
        results[label] = {"wall_s": wall, "stdout_tail": r.stdout.strip().splitlines()[-2:]}
        print(label, f"{wall:.1f} s")
    # a lone child measures its own maxrss: run the traced child and read RUSAGE_CHILDREN delta-free
    r, wall, _ = _child([sys.executable, "-c", TRACED, str(path), str(tmp / "traced")])
    traced = json.loads(r.stdout.strip().splitlines()[-1])
    # peak RSS: the largest child of this process (all three children run the same work)
    peak_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    out = {
        "benchmark": "end_to_end",
        "rows": rows,
        "channels": cols,
        "cli_wall_s": results["cli"]["wall_s"],
        "cli_first_wall_s": results["cli_first"]["wall_s"],
        "peak_rss_bytes": peak_rss,
        "peak_rss_gb": peak_rss / 1e9,
        "tracemalloc_peak_gb": traced["tracemalloc_peak_bytes"] / 1e9,
        "meets_2gb_target": peak_rss < 2e9,
        "traced": traced,
        "traced_wall_s": wall,
        "cli_stdout_tail": results["cli"]["stdout_tail"],
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_avg_1m_at_end": os.getloadavg()[0],
        },
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, default=str) + "\n")
    print(
        json.dumps(
            {k: out[k] for k in ("cli_wall_s", "peak_rss_gb", "tracemalloc_peak_gb", "meets_2gb_target")}
        )
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
