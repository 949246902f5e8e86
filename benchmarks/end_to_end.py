"""Benchmark: ``reveal-lab detect`` on a synthetic 30-minute, 700-channel run (18,000 rows).

The run is written as a canonical Parquet run, then detected in fresh subprocesses the
way a user runs it:

* ``cli``: ``reveal-lab detect RUN --out DIR`` (load → derive → windows → features →
  detectors → attribution → report); wall time and the child's peak RSS
  (``ru_maxrss`` from ``getrusage(RUSAGE_CHILDREN)``);
* ``traced``: the same steps in a child under ``tracemalloc`` (peak of Python-visible
  allocations, numpy arrays included) with the per-stage timings of ``detect_run``.

Target: peak memory under 2 GB.

    .venv/bin/python benchmarks/end_to_end.py          # writes benchmarks/results/end_to_end.json
    .venv/bin/python benchmarks/end_to_end.py --quick  # seconds: shows it works, numbers not quotable
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import Session, parser, row, side

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


def rows(details: dict) -> list[dict]:
    """The one result row: the measured ``reveal-lab detect`` (after a warm-up run), its peak
    RSS and the per-stage seconds of the traced run."""
    t = (details.get("traced") or {}).get("timings_s") or {}
    return [
        row(
            f"`reveal-lab detect`, {details['rows']} rows x {details['channels']} channels",
            "s",
            side("detect (CLI)", details["cli_wall_s"]),
            peak_mb=details["peak_rss_bytes"] / 1e6,
            note=", ".join(f"{k} {v:.1f} s" for k, v in t.items() if isinstance(v, (int, float))),
        )
    ]


def write_run(seconds: float, channels: int, tmp: Path) -> tuple[Path, int, int]:
    """The synthetic run with four planted episodes as Parquet; its path, rows and channels."""
    from reveal_lab.io import write_parquet_run
    from reveal_lab.synth import Anomaly, make_run

    at = [seconds * k / 18 for k in (3, 7, 11, 15)]  # 300, 700, 1100, 1500 s of the 30-minute run
    anomalies = [
        Anomaly("cpu", at[0], at[0] + 6),
        Anomaly("network", at[1], at[1] + 6, "variance"),
        Anomaly("storage", at[2], at[2] + 6, "trend"),
        Anomaly("gpu", at[3], at[3] + 6, "oscillation"),
    ]
    run, _ = make_run(seconds, channels, seed=0, anomalies=anomalies)
    path = write_parquet_run(run, tmp / f"synth_{seconds:g}s_{channels}ch.parquet")
    print(
        f"run: {run.frame.height} rows x {run.frame.width - 1} channels -> {path} "
        f"({path.stat().st_size / 1e6:.1f} MB)"
    )
    return path, run.frame.height, run.frame.width - 1


def main(argv: list[str] | None = None) -> int:
    ap = parser("end_to_end", __doc__, quick="a 60 s run of 30 channels")
    ap.add_argument("--seconds", type=float, default=1800.0)
    ap.add_argument("--channels", type=int, default=700)
    args = ap.parse_args(argv)
    if args.quick:
        args.seconds, args.channels = 60.0, 30
    session = Session("end_to_end", argv)
    tmp = Path(tempfile.mkdtemp(prefix="reveal-e2e-"))
    path, rows_, cols = write_run(args.seconds, args.channels, tmp)
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
    r, wall, _ = _child([sys.executable, "-c", TRACED, str(path), str(tmp / "traced")])
    traced = json.loads(r.stdout.strip().splitlines()[-1])
    # peak RSS: the largest child of this process (all three children run the same work)
    peak_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    details = {
        "rows": rows_,
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
    }
    session.write(args.out, rows(details), details)
    keys = ("cli_wall_s", "peak_rss_gb", "tracemalloc_peak_gb", "meets_2gb_target")
    print(json.dumps({k: details[k] for k in keys}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
