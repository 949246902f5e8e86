"""Notebook 03's detection on data/lab with and without the per-run cache.

    .venv/bin/python benchmarks/study_cache.py [--max-runs-per-workload 3] [--profile] [--quick]

Detects the same runs three times (no cache, empty cache, cache read back), checks that
the windows and evidence are equal, and writes the seconds of each pass to
``benchmarks/results/study_cache.json`` (the cache read back against no cache, and an empty
cache against no cache: what writing the cache costs); ``--profile`` prints the 35 most
expensive calls of the uncached pass (cProfile, cumulative).
"""

from __future__ import annotations

import cProfile
import pstats
import resource
import sys
import tempfile
import time
import warnings

from _harness import Session, parser, row, side


def passes(runs: list, space: object, cache: str, profile: bool) -> dict:
    """The seconds of the three passes, after checking their windows and evidence are equal."""
    from polars.testing import assert_frame_equal

    from reveal_lab import studies
    from reveal_lab.pipeline._cache import cache_stats, using_cache

    def detect() -> tuple[float, object, object]:
        t0 = time.perf_counter()
        default = studies.setting_policy("default")
        w, ev = studies.run_detection(runs, preset="paper", pruning=space, policy=default)
        return time.perf_counter() - t0, w, ev

    prof = cProfile.Profile() if profile else None
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
        stats = cache_stats()
        print(f"read back: {t2:.1f} s {stats}")
    for a, b in ((w0, w1), (w0, w2), (e0, e1), (e0, e2)):
        assert_frame_equal(a, b)
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(35)
    return {
        "no_cache_s": t0,
        "empty_cache_s": t1,
        "read_back_s": t2,
        "windows": w0.height,
        "cache_stats": stats,
    }


def main(argv: list[str] | None = None) -> int:
    ap = parser("study_cache", __doc__, quick="one run per workload")
    ap.add_argument("--max-runs-per-workload", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.max_runs_per_workload = 1
    session = Session("study_cache", argv)

    from reveal_lab import studies
    from reveal_lab.telemetry import TelemetryWarning

    warnings.simplefilter("ignore", TelemetryWarning)
    t = time.perf_counter()
    runs = studies.load_study_runs("", max_runs_per_workload=args.max_runs_per_workload)
    mb = sum(r.frame.estimated_size() for r in runs) / 1e6
    load_s = time.perf_counter() - t
    print(f"load {len(runs)} runs: {load_s:.1f} s, {mb:.0f} MB of frames")
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as cache:
        t = time.perf_counter()
        space = studies.study_pruning(runs, out, prune="pruning.json")
        prune_s = time.perf_counter() - t
        print(f"pruning fit: {prune_s:.1f} s")
        d = passes(runs, space, cache, args.profile)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"equal; peak RSS {peak:.0f} MB")
    case = f"notebook 03's detection, {len(runs)} lab runs ({d['windows']} windows)"
    no_cache = side("no cache", d["no_cache_s"])
    rows = [
        row(
            case + ", cache read back", "s", side("cache read back", d["read_back_s"]), no_cache, peak_mb=peak
        ),
        row(case + ", writing the cache", "s", side("empty cache", d["empty_cache_s"]), no_cache),
    ]
    details = {
        **d,
        "runs": len(runs),
        "frames_mb": mb,
        "load_s": load_s,
        "pruning_s": prune_s,
        "max_runs_per_workload": args.max_runs_per_workload,
    }
    session.write(args.out, rows, details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
