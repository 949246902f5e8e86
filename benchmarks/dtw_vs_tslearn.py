#!/usr/bin/env python
"""DTW: reveal-lab's ``dtw_distance`` (dtaidistance's C code) vs ``tslearn.metrics.dtw``.

Both compute the exact DTW distance, ``sqrt`` of the summed squared differences along
the best warping path; every timed pair is also checked for the same distance
(|difference| <= 1e-9). Cases: z-normalized random-walk traces of 128..1024 samples,
unconstrained and with a Sakoe-Chiba radius of 10 % of the length, and the whole §5.4
study workload (one DTW per run and median trace) at the study's default length.
tslearn is warmed up first so that numba's compilation is not timed.

    .venv/bin/python benchmarks/dtw_vs_tslearn.py [--repeats 5] [--pairs 20] [--quick]

Writes ``benchmarks/results/dtw_vs_tslearn.json``.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _harness import Session, parser, row, side, stats

#: trace lengths of the DTW cases (``--quick``: the first two)
LENGTHS = (128, 256, 512, 1024)


def _traces(n_pairs: int, length: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    from reveal_lab.studies import znormalize

    rng = np.random.default_rng(seed)
    return [
        (znormalize(rng.normal(size=length).cumsum()), znormalize(rng.normal(size=length).cumsum()))
        for _ in range(n_pairs)
    ]


def _time(fn, pairs, repeats: int) -> tuple[list[float], list[float]]:  # noqa: ANN001
    """Seconds per pair of each repeat, and the last repeat's distances."""
    runs, values = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        values = [fn(a, b) for a, b in pairs]
        runs.append((time.perf_counter() - t0) / len(pairs))
    return runs, values


def distance_rows(lengths, n_pairs: int, repeats: int) -> tuple[list[dict], float]:  # noqa: ANN001
    """One row per length and band (reveal-lab against tslearn); the largest distance
    difference. Exits when the two disagree by more than 1e-9."""
    from tslearn.metrics import dtw as tslearn_dtw

    from reveal_lab.studies import dtw_distance

    for a, b in _traces(2, 64, 99):  # compile tslearn's numba kernels (both code paths) before timing
        tslearn_dtw(a, b)
        tslearn_dtw(a, b, global_constraint="sakoe_chiba", sakoe_chiba_radius=5)
    rows, worst = [], 0.0
    for length in lengths:
        for band in (None, max(1, length // 10)):
            pairs = _traces(n_pairs, length, seed=length)
            kw = {} if band is None else {"global_constraint": "sakoe_chiba", "sakoe_chiba_radius": band}
            ours, d_ours = _time(lambda a, b, band=band: dtw_distance(a, b, band), pairs, repeats)
            alt, d_alt = _time(lambda a, b, kw=kw: tslearn_dtw(a, b, **kw), pairs, max(2, repeats // 2))
            diff = float(np.max(np.abs(np.asarray(d_ours) - np.asarray(d_alt))))
            worst = max(worst, diff)
            if diff > 1e-9:
                raise SystemExit(f"distances differ by {diff} at length {length}, band {band}")
            r = row(
                f"one DTW distance, {length} samples, "
                + ("unconstrained" if band is None else f"Sakoe-Chiba radius {band}"),
                "s",
                side("reveal_lab.studies.dtw_distance (dtaidistance C)", ours),
                side("tslearn.metrics.dtw (numba)", alt),
                note=f"{n_pairs} pairs per run; max |distance difference| {diff:.2e}",
            )
            rows.append(r)
            print(
                f"{r['case']}: ours {r['ours']['median'] * 1e6:.1f} us, "
                f"tslearn {r['alternative']['median'] * 1e6:.1f} us, x{r['ratio']:.1f}",
                flush=True,
            )
    return rows, worst


def study_row(repeats: int, workloads: int = 6) -> dict:
    """The §5.4 study itself: ``workloads`` workloads x 6 runs x 20 metrics at length 256."""
    from reveal_lab.studies import dtw_reproducibility

    rng = np.random.default_rng(0)
    t = np.linspace(0, 20, 600)
    traces = {
        f"w{w}": {
            f"m{m}": [np.sin((1 + 0.3 * w) * t + m) + 0.3 * rng.normal(size=t.size) for _ in range(6)]
            for m in range(20)
        }
        for w in range(workloads)
    }
    runs = []
    for _ in range(max(2, repeats // 2)):
        t0 = time.perf_counter()
        s = dtw_reproducibility(traces, length=256)
        runs.append(time.perf_counter() - t0)
    n_dtw = workloads * 20 * 42
    return row(
        f"§5.4 study, {workloads} workloads x 6 runs x 20 metrics, 256 samples ({n_dtw:,} DTWs + Wilcoxon)",
        "s",
        side("reveal_lab.studies.dtw_reproducibility", stats(runs)),
        note=f"share of workload-metric pairs with p < 0.05: {100 * s.share_significant:.2f} %",
    )


def main(argv: list[str] | None = None) -> int:
    ap = parser("dtw_vs_tslearn", __doc__, repeats=5, quick="2 lengths, 3 pairs, 1 repeat, 1 workload")
    ap.add_argument("--pairs", type=int, default=20)
    args = ap.parse_args(argv)
    session = Session("dtw_vs_tslearn", argv, versions=("dtaidistance", "tslearn"))
    lengths = LENGTHS[:2] if args.quick else LENGTHS
    pairs = 3 if args.quick else args.pairs
    repeats = 1 if args.quick else args.repeats
    rows, worst = distance_rows(lengths, pairs, repeats)
    rows.append(study_row(repeats, workloads=1 if args.quick else 6))
    session.write(args.out, rows, {"agreement": {"max_abs_distance_difference": worst, "tolerance": 1e-9}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
