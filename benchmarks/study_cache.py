"""Notebook 03's detection on data/lab with and without the per-run cache.

Usage: ``.venv/bin/python benchmarks/study_cache.py [--max-runs-per-workload 3] [--profile]``

Detects the same runs three times (no cache, empty cache, cache read back), checks that
the windows and evidence are equal and prints the seconds of each; ``--profile`` prints
the 35 most expensive calls of the uncached pass (cProfile, cumulative).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import tempfile
import time
import warnings

from polars.testing import assert_frame_equal

from reveal_lab import studies
from reveal_lab.pipeline._cache import cache_stats, using_cache
from reveal_lab.telemetry import TelemetryWarning


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-runs-per-workload", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore", TelemetryWarning)
    t = time.perf_counter()
    runs = studies.load_study_runs("", max_runs_per_workload=args.max_runs_per_workload)
    mb = sum(r.frame.estimated_size() for r in runs) / 1e6
    print(f"load {len(runs)} runs: {time.perf_counter() - t:.1f} s, {mb:.0f} MB of frames")
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as cache:
        t = time.perf_counter()
        space = studies.study_pruning(runs, out, prune="pruning.json")
        print(f"pruning fit: {time.perf_counter() - t:.1f} s")

        def detect() -> tuple[float, object, object]:
            t0 = time.perf_counter()
            w, ev = studies.run_detection(runs, preset="paper", pruning=space, trim=True, thresholds="auto")
            return time.perf_counter() - t0, w, ev

        prof = cProfile.Profile() if args.profile else None
        if prof:
            prof.enable()
        t0, w0, e0 = detect()
        if prof:
            prof.disable()
        print(f"no cache: {t0:.1f} s, {w0.height} windows")
        with using_cache(cache):
            t1, w1, e1 = detect()
            print(f"empty cache: {t1:.1f} s")
            t2, w2, e2 = detect()
            print(f"read back: {t2:.1f} s {cache_stats()}")
        for a, b in ((w0, w1), (w0, w2), (e0, e1), (e0, e2)):
            assert_frame_equal(a, b)
        print(f"equal; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        if prof:
            pstats.Stats(prof).sort_stats("cumulative").print_stats(35)


if __name__ == "__main__":
    main()
