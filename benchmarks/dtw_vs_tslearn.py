#!/usr/bin/env python
"""DTW: reveal-lab's ``dtw_distance`` (dtaidistance's C code) vs ``tslearn.metrics.dtw``.

Both compute the exact DTW distance, ``sqrt`` of the summed squared differences along
the best warping path; every timed pair is also checked for the same distance
(|difference| <= 1e-9). Cases: z-normalized random-walk traces of 128..1024 samples,
unconstrained and with a Sakoe-Chiba radius of 10 % of the length, and the whole §5.4
study workload (one DTW per run and median trace) at the study's default length.
tslearn is warmed up first so that numba's compilation is not timed.

    .venv/bin/python benchmarks/dtw_vs_tslearn.py [--repeats 5] [--pairs 20]

Writes ``benchmarks/results/dtw_vs_tslearn.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _traces(n_pairs: int, length: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    from reveal_lab.studies import znormalize

    rng = np.random.default_rng(seed)
    return [(znormalize(rng.normal(size=length).cumsum()), znormalize(rng.normal(size=length).cumsum()))
            for _ in range(n_pairs)]


def _time(fn, pairs, repeats: int) -> tuple[list[float], list[float]]:  # noqa: ANN001
    runs, values = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        values = [fn(a, b) for a, b in pairs]
        runs.append((time.perf_counter() - t0) / len(pairs))
    return runs, values


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dtw_vs_tslearn.json"))
    args = ap.parse_args(argv)

    import dtaidistance
    import tslearn
    from tslearn.metrics import dtw as tslearn_dtw

    from reveal_lab.studies import dtw_distance

    load0 = os.getloadavg()
    warm = _traces(2, 64, 99)
    for a, b in warm:  # compile tslearn's numba kernels (both code paths) before timing
        tslearn_dtw(a, b)
        tslearn_dtw(a, b, global_constraint="sakoe_chiba", sakoe_chiba_radius=5)
    results, worst = [], 0.0
    for length in (128, 256, 512, 1024):
        for band in (None, max(1, length // 10)):
            pairs = _traces(args.pairs, length, seed=length)
            kw = {} if band is None else {"global_constraint": "sakoe_chiba", "sakoe_chiba_radius": band}
            ours, d_ours = _time(lambda a, b, band=band: dtw_distance(a, b, band), pairs, args.repeats)
            alt, d_alt = _time(lambda a, b, kw=kw: tslearn_dtw(a, b, **kw), pairs, max(2, args.repeats // 2))
            diff = float(np.max(np.abs(np.asarray(d_ours) - np.asarray(d_alt))))
            worst = max(worst, diff)
            if diff > 1e-9:
                print(f"distances differ by {diff} at length {length}, band {band}", file=sys.stderr)
                return 1
            results.append({
                "case": f"one DTW distance, {length} samples, "
                        + ("unconstrained" if band is None else f"Sakoe-Chiba radius {band}"),
                "unit": "s",
                "ours": {"name": "reveal_lab.studies.dtw_distance (dtaidistance C)",
                         "median": statistics.median(ours), "runs": ours},
                "alternative": {"name": "tslearn.metrics.dtw (numba)", "median": statistics.median(alt),
                                "runs": alt},
                "ratio": statistics.median(alt) / statistics.median(ours),
                "higher_is_better": False,
                "note": f"{args.pairs} pairs per run; max |distance difference| {diff:.2e}",
            })
            print(f"{results[-1]['case']}: ours {statistics.median(ours) * 1e6:.1f} us, "
                  f"tslearn {statistics.median(alt) * 1e6:.1f} us, x{results[-1]['ratio']:.1f}", flush=True)

    # the study itself: 6 workloads x 6 runs x 20 metrics at length 256
    from reveal_lab.studies import dtw_reproducibility

    rng = np.random.default_rng(0)
    t = np.linspace(0, 20, 600)
    traces = {f"w{w}": {f"m{m}": [np.sin((1 + 0.3 * w) * t + m) + 0.3 * rng.normal(size=t.size)
                                  for _ in range(6)] for m in range(20)} for w in range(6)}
    study_runs = []
    for _ in range(max(2, args.repeats // 2)):
        t0 = time.perf_counter()
        s = dtw_reproducibility(traces, length=256)
        study_runs.append(time.perf_counter() - t0)
    results.append({
        "case": "§5.4 study, 6 workloads x 6 runs x 20 metrics, 256 samples (5,040 DTWs + Wilcoxon)",
        "unit": "s",
        "ours": {"name": "reveal_lab.studies.dtw_reproducibility", "median": statistics.median(study_runs),
                 "runs": study_runs},
        "note": f"share of workload-metric pairs with p < 0.05: {100 * s.share_significant:.2f} %",
    })
    result = {
        "benchmark": "dtw_vs_tslearn",
        "machine": {"cpu": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                    "python": platform.python_version(), "dtaidistance": dtaidistance.__version__,
                    "tslearn": tslearn.__version__, "loadavg_before": list(load0),
                    "loadavg_after": list(os.getloadavg())},
        "agreement": {"max_abs_distance_difference": worst, "tolerance": 1e-9},
        "results": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
