"""Benchmark: the three detectors on 1,800 windows of a 700-channel run.

The feature matrix comes from the real pipeline (synthetic 700-channel telemetry →
3 s / 1 s windows → window features, ≈ 1,800 × 6,900). Each detector is fit (which
scores the fit windows: the paper's self-fit mode) and then scores the same windows
again with ``decision_function``; median of ``--repeat`` runs, per detector and
together, with one BLAS thread and with the library default. The Mahalanobis detector
is also timed with ``precision="float32"`` (Gram matrix and eigendecomposition in single
precision). Target: < 2 s together.

    .venv/bin/python benchmarks/detectors.py            # writes benchmarks/results/detectors.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=1802.0, help="run length (1802 s gives 1,800 windows)")
    ap.add_argument("--channels", type=int, default=700)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "detectors.json"))
    args = ap.parse_args()

    from sklearn.base import clone
    from threadpoolctl import threadpool_info, threadpool_limits

    from reveal_lab.config import DetectConfig, WindowConfig
    from reveal_lab.detectors import PCAMahalanobisDetector, default_detectors
    from reveal_lab.features import window_features
    from reveal_lab.synth import make_run

    run, _ = make_run(args.seconds, args.channels, seed=0)
    t = time.perf_counter()
    wf = window_features(run.frame, WindowConfig())
    feat_s = time.perf_counter() - t
    X = wf.X
    print(f"feature matrix {X.shape[0]} x {X.shape[1]} ({feat_s:.1f} s to compute, includes any JIT compile)")

    results: dict[str, dict] = {}
    for label, limit in (("blas_1_thread", 1), ("blas_default", None)):
        per: dict[str, list[float]] = {}
        per_fit: dict[str, list[float]] = {}
        totals = []
        info = {}
        for _ in range(args.repeat):
            total = 0.0
            with threadpool_limits(limits=limit, user_api="blas") if limit else _null():
                dets = default_detectors(DetectConfig())
                dets.append(PCAMahalanobisDetector(precision="float32"))
                for det in dets:
                    d = clone(det)
                    t0 = time.perf_counter()
                    d.fit(X)
                    t1 = time.perf_counter()
                    d.decision_function(X)
                    t2 = time.perf_counter()
                    name = d.name + ("_float32" if getattr(d, "precision", "") == "float32" else "")
                    per.setdefault(name, []).append(t2 - t0)
                    per_fit.setdefault(name, []).append(t1 - t0)
                    if name != "mahalanobis_float32":
                        total += t2 - t0
                    if name == "mahalanobis":
                        info["pca_components"] = int(d.n_components_)
                    info[f"{name}_flagged"] = int(d.labels_.sum())
            totals.append(total)
        med = {k: statistics.median(v) for k, v in per.items()}
        results[label] = {
            "fit_plus_score_median_s": med,
            "total_with_float32_pca_median_s": med["zscore"] + med["mahalanobis_float32"] + med["iforest"],
            "fit_only_median_s": {k: statistics.median(v) for k, v in per_fit.items()},
            "total_median_s": statistics.median(totals),
            "total_all_s": totals,
            "meets_2s_target": statistics.median(totals) < 2.0,
            **info,
        }
        print(
            label,
            json.dumps(results[label]["fit_plus_score_median_s"]),
            f"total {results[label]['total_median_s']:.2f} s",
        )

    out = {
        "benchmark": "detectors",
        "n_windows": int(X.shape[0]),
        "n_features": int(X.shape[1]),
        "channels": args.channels,
        "repeat": args.repeat,
        "feature_seconds": feat_s,
        "results": results,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_avg_1m_at_end": os.getloadavg()[0],
            "blas": [
                {k: i.get(k) for k in ("internal_api", "num_threads", "version")}
                for i in threadpool_info()
                if i.get("user_api") == "blas"
            ],
        },
        "numpy": np.__version__,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main()
