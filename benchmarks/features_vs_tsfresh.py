#!/usr/bin/env python
"""Window features: reveal-lab's compiled kernel against tsfresh, same windows, same features.

    .venv/bin/python benchmarks/features_vs_tsfresh.py [--seconds 180] [--channels 700]
        [--tsfresh-windows 2] [--repeats 5] [--tsfresh-repeats 2] [--quick]

Input: a seeded synthetic run in the public dataset's grammar (``reveal_lab.synth``,
700 channels at 100 ms; static channels are excluded by both sides), cut into 3 s
windows with a 1 s stride. Features: mean, variance, standard deviation, min, max,
skewness, kurtosis, linear-trend slope, lag-1 autocorrelation and the ADF statistic
for dynamic channels; sum and max for counters.

* ours: ``window_features(backend="numba")`` over every window (after one warm-up
  call that loads or compiles the kernel), per window = total / windows; also the
  kernel alone (no frame handling);
* tsfresh: the same features from tsfresh's own feature calculators
  (``backend="tsfresh"``) on the first ``--tsfresh-windows`` windows only (tsfresh
  takes seconds per window), per window = total / windows; and tsfresh's
  ``extract_features`` (its usual entry point, same feature parameters, ``n_jobs=0``)
  on one window.

Medians over repeats; the ratio is tsfresh's median per-window time over ours.
The machine is shared: the load average before and after is recorded, and the
process CPU time per window is reported beside the wall time. Writes
``benchmarks/results/features_vs_tsfresh.json``.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import polars as pl
from _harness import Session, parser, row, side, time_repeats


def extract_features_call(frame: pl.DataFrame, window: dict, pairs: pl.DataFrame):
    """tsfresh.extract_features on one window, the same features per channel kind."""
    from tsfresh import extract_features

    dyn = {
        "mean": None,
        "variance": None,
        "standard_deviation": None,
        "minimum": None,
        "maximum": None,
        "skewness": None,
        "kurtosis": None,
        "linear_trend": [{"attr": "slope"}],
        "autocorrelation": [{"lag": 1}],
        "augmented_dickey_fuller": [{"attr": "teststat", "autolag": "AIC"}],
    }
    cnt = {"sum_values": None, "maximum": None}
    kinds = dict(pairs.select("metric", "kind").unique(maintain_order=True).iter_rows())
    cols = list(kinds)
    part = frame.slice(window["row_start"], window["n_samples"]).select(cols).to_pandas()
    part.columns = [f"c{i}" for i in range(len(cols))]
    part["id"] = 0
    part["time"] = np.arange(len(part))
    per_kind = {f"c{i}": (cnt if kinds[c] == "counter" else dyn) for i, c in enumerate(cols)}

    def call():
        return extract_features(
            part,
            column_id="id",
            column_sort="time",
            kind_to_fc_parameters=per_kind,
            n_jobs=0,
            disable_progressbar=True,
        )

    return call


def ours_per_window(frame: pl.DataFrame, cfg, windows: pl.DataFrame, repeats: int) -> dict:  # noqa: ANN001
    """reveal-lab's window features over every window: the first call (loads or compiles the
    kernel), then wall and CPU seconds per window of the whole call and of the kernel alone."""
    from reveal_lab.features import window_features
    from reveal_lab.features._kernels import FEATURE_CODES, N_FEATURES, window_feature_kernel

    n_win = windows.height
    t0 = time.perf_counter()
    ours = window_features(frame, cfg, windows=windows)
    first_call = time.perf_counter() - t0
    wall, cpu, _ = time_repeats(lambda: window_features(frame, cfg, windows=windows), repeats, per=n_win)
    metrics = ours.pairs["metric"].unique(maintain_order=True).to_list()
    values = np.asfortranarray(frame.select(metrics).to_numpy())
    want = np.zeros((len(metrics), N_FEATURES), dtype=np.bool_)
    pos = {m: i for i, m in enumerate(metrics)}
    for m, f in ours.pairs.select("metric", "feature").iter_rows():
        want[pos[m], FEATURE_CODES[f]] = True
    rs = windows["row_start"].to_numpy().astype(np.int64)
    re_ = windows["row_end"].to_numpy().astype(np.int64)
    out = np.empty((n_win, len(metrics), N_FEATURES))
    k_wall, k_cpu, _ = time_repeats(
        lambda: window_feature_kernel(values, rs, re_, want, 3, out), repeats, per=n_win
    )
    return {
        "wf": ours,
        "first_call_s": first_call,
        "wall": wall,
        "cpu": cpu,
        "kernel_wall": k_wall,
        "kernel_cpu": k_cpu,
    }


def agreement(ours, ref, k: int) -> dict:  # noqa: ANN001
    """How ours and tsfresh's features agree on the first ``k`` windows."""
    A, B = ours.X[:k], ref.X
    same = np.isnan(A) == np.isnan(B)
    both = ~np.isnan(A) & ~np.isnan(B)
    rel = np.abs(A[both] - B[both]) / np.maximum(np.abs(B[both]), 1e-300)
    adf = (ours.pairs["feature"] == "adf").to_numpy()
    nan_only_ours = np.isnan(A) & ~np.isnan(B)
    return {
        "cells": int(both.sum()),
        "max_rel_diff_non_adf": float(rel[~np.broadcast_to(adf, A.shape)[both]].max())
        if both.any()
        else None,
        "cells_rel_diff_gt_1e-9": int((rel > 1e-9).sum()),
        "nan_pattern_equal_outside_adf": bool(same[:, ~adf].all()),
        "adf_nan_ours_finite_tsfresh": int(nan_only_ours[:, adf].sum()),
    }


def tsfresh_per_window(frame: pl.DataFrame, cfg, windows: pl.DataFrame, ours, k: int, repeats: int) -> dict:  # noqa: ANN001
    """tsfresh's feature calculators on the first ``k`` windows, and its ``extract_features``
    on one window: wall and CPU seconds per window, and the agreement with ours."""
    from reveal_lab.features import window_features

    sub = windows.head(k)
    wall, cpu, ref = time_repeats(
        lambda: window_features(frame, cfg, windows=sub, backend="tsfresh"), repeats, per=k
    )
    ef_call = extract_features_call(frame, windows.row(0, named=True), ours.pairs)
    ef_wall, ef_cpu, _ = time_repeats(ef_call, 1)
    return {
        "wall": wall,
        "cpu": cpu,
        "ef_wall": ef_wall,
        "ef_cpu": ef_cpu,
        "agreement": agreement(ours, ref, k),
    }


def build_rows(ours: dict, ts: dict, n_win: int, k: int) -> list[dict]:
    """The three rows: window features, the kernel alone, against tsfresh's calculators and
    against its ``extract_features``."""
    wf = ours["wf"]
    case = (
        f"{wf.pairs['metric'].n_unique()} channels ({wf.n_pairs} metric-feature pairs), "
        "3 s windows at 100 ms, per window"
    )
    numba = side("reveal-lab window_features(backend='numba')", ours["wall"])
    return [
        row(
            case + " (tsfresh feature calculators)",
            "s",
            numba,
            side("tsfresh feature_calculators (backend='tsfresh')", ts["wall"]),
            note=f"tsfresh timed on {k} of {n_win} windows; ours on all {n_win}; "
            f"agreement: {ts['agreement']}",
        ),
        row(
            case + " (kernel alone vs tsfresh calculators)",
            "s",
            side("reveal-lab numba kernel", ours["kernel_wall"]),
            side("tsfresh feature_calculators", ts["wall"]),
        ),
        row(
            case + " (tsfresh extract_features)",
            "s",
            numba,
            side("tsfresh.extract_features (n_jobs=0), one window", ts["ef_wall"]),
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = parser(
        "features_vs_tsfresh", __doc__, repeats=5, quick="20 s of 40 channels, 1 tsfresh window, 1 repeat"
    )
    ap.add_argument("--seconds", type=float, default=180.0)
    ap.add_argument("--channels", type=int, default=700)
    ap.add_argument("--tsfresh-windows", type=int, default=2)
    ap.add_argument("--tsfresh-repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if a.quick:
        a.seconds, a.channels, a.tsfresh_windows, a.repeats, a.tsfresh_repeats = 20.0, 40, 1, 1, 1
    session = Session("features_vs_tsfresh", argv, versions=("numba", "tsfresh"))

    import numba

    from reveal_lab.config import WindowConfig
    from reveal_lab.features import make_windows
    from reveal_lab.synth import make_run

    warnings.simplefilter("ignore")
    frame = make_run(a.seconds, n_channels=a.channels, seed=a.seed)[0].frame
    cfg = WindowConfig(window_s=3.0, stride_s=1.0, interval_s=0.1)
    windows = make_windows(frame, cfg)
    n_win, k = windows.height, min(a.tsfresh_windows, windows.height)
    ours = ours_per_window(frame, cfg, windows, a.repeats)
    ts = tsfresh_per_window(frame, cfg, windows, ours["wf"], k, a.tsfresh_repeats)
    rows = build_rows(ours, ts, n_win, k)
    cpu = {  # process CPU seconds per window (one thread on both sides): less inflated by other users
        "ours_window_features": ours["cpu"]["median"],
        "ours_kernel": ours["kernel_cpu"]["median"],
        "tsfresh_calculators": ts["cpu"]["median"],
        "tsfresh_extract_features": ts["ef_cpu"]["median"],
    }
    details = {
        "input": {
            "generator": "reveal_lab.synth.make_run",
            "seed": a.seed,
            "seconds": a.seconds,
            "channels": a.channels,
            "features_channels": ours["wf"].pairs["metric"].n_unique(),
            "windows": n_win,
            "tsfresh_windows": k,
            "pairs": ours["wf"].n_pairs,
        },
        "numba_threads": numba.get_num_threads(),
        "first_call_s": ours["first_call_s"],
        "agreement": ts["agreement"],
        "cpu_seconds_per_window": cpu,
        "cpu_ratio_vs_calculators": cpu["tsfresh_calculators"] / cpu["ours_window_features"],
        "cpu_ratio_vs_extract_features": cpu["tsfresh_extract_features"] / cpu["ours_window_features"],
    }
    session.write(a.out, rows, details)
    for r in rows:
        print(
            f"{r['case']}: ours {r['ours']['median'] * 1e3:.3f} ms, {r['alternative']['name']} "
            f"{r['alternative']['median']:.3f} s -> {r['ratio']:.0f}x"
        )
    print(f"first call {ours['first_call_s']:.2f} s; CPU per window {cpu}; agreement {ts['agreement']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
