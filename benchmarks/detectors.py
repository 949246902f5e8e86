"""Benchmark: the three detectors on 1,800 windows of a 700-channel run (issue 4: < 2 s together).

The feature matrix comes from the real pipeline (synthetic 700-channel telemetry →
3 s / 1 s windows → window features, 1,800 × 6,818). Measured, with one BLAS thread
and with the library default, median of ``--repeats`` interleaved repeats, wall-clock
and process CPU time (the machine may be shared; CPU time is what the detectors
themselves used):

* ``ensemble``: :class:`DetectorEnsemble` ``fit`` of the paper's three detectors on the
  run itself (the paper's self-fit mode and what ``reveal-lab detect`` does): scores,
  thresholds, labels, agreement and combined score of all 1,800 windows. The headline.
* ``ensemble_mixed_pca`` / ``ensemble_float32_pca``: the same with
  ``PCAMahalanobisDetector(precision="mixed")`` (single-precision Gram matrix, double
  eigendecomposition) or ``"float32"`` (both single); labels and scores compared with float64.
* per detector, ``fit`` and ``fit`` + ``decision_function`` on the same windows again
  (scoring new windows against a fitted model, e.g. the baseline mode).
* ``before``: the same measurements of the detectors at git revision ``--before``
  (the implementation before the speed work), loaded from git into a temporary package,
  in the same run, interleaved; ratios before/after.

The pruned case runs the same on the paper's diagnostic space (``reveal_lab.pruning.prune``
at |r| 0.5 on the same run, then window features of the kept metrics).

    .venv/bin/python benchmarks/detectors.py            # writes benchmarks/results/detectors.json
    .venv/bin/python benchmarks/detectors.py --quick    # seconds: shows it works, numbers not quotable
"""

from __future__ import annotations

import importlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _harness import ROOT, Session, parser, row, side

BEFORE_REV = "605fb79"  # detectors as the detectors engineer left them


def _load_before(rev: str, tmp: Path):  # noqa: ANN202 - a module
    """The ``reveal_lab.detectors`` package at ``rev`` as the module ``_detectors_before``."""
    pkg = tmp / "_detectors_before"
    pkg.mkdir()
    names = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "--name-only", rev, "reveal_lab/detectors/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for name in names:
        src = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:{name}"], check=True, capture_output=True, text=True
        ).stdout
        (pkg / Path(name).name).write_text(src.replace("reveal_lab.detectors", "_detectors_before"))
    sys.path.insert(0, str(tmp))
    return importlib.import_module("_detectors_before")


def _timed(fn):  # noqa: ANN001, ANN202
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def _measure(X: np.ndarray, impls: dict, repeat: int, limit: int | None) -> dict:
    from sklearn.base import clone
    from threadpoolctl import threadpool_limits

    from reveal_lab.config import DetectConfig

    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    info: dict[str, object] = {}

    def rec(key: str, w: float, c: float) -> None:
        wall.setdefault(key, []).append(w)
        cpu.setdefault(key, []).append(c)

    order = list(impls)
    for r in range(repeat):
        ctx = threadpool_limits(limits=limit, user_api="blas") if limit else _null()
        with ctx:
            for impl in order[r % len(order) :] + order[: r % len(order)]:  # interleaved, rotated
                mod = impls[impl]
                dets = mod.default_detectors(DetectConfig())
                # the three together, as the pipeline runs them (self-fit)
                ens, w, c = _timed(lambda mod=mod, dets=dets: mod.DetectorEnsemble(dets).fit(X))
                rec(f"{impl}/ensemble", w, c)
                res = ens.result_
                info[f"{impl}/flagged"] = {n: int(v.sum()) for n, v in res.labels.items()}
                info[f"{impl}/any_flagged"] = int((res.agreement > 0).sum())
                info[f"{impl}/_labels"] = {n: v for n, v in res.labels.items()}
                if impl == "after":
                    for prec in ("mixed", "float32"):
                        dp = [
                            mod.PCAMahalanobisDetector(
                                variance=d.variance, quantile=d.quantile, precision=prec
                            )
                            if d.name == "mahalanobis"
                            else d
                            for d in dets
                        ]
                        ep, w, c = _timed(lambda mod=mod, dp=dp: mod.DetectorEnsemble(dp).fit(X))
                        rec(f"after/ensemble_{prec}_pca", w, c)
                        a, b = ep.result_, res
                        info[f"after/{prec}_pca_labels_equal_float64"] = bool(
                            np.array_equal(a.labels["mahalanobis"], b.labels["mahalanobis"])
                        )
                        info[f"after/{prec}_pca_max_rel_score_diff"] = float(
                            np.max(
                                np.abs(a.scores["mahalanobis"] - b.scores["mahalanobis"])
                                / b.scores["mahalanobis"]
                            )
                        )
                    info["pca_components"] = int(ens.detectors_["mahalanobis"].n_components_)
                # each detector alone: fit, then fit + scoring the same windows again
                for det in dets:
                    d = clone(det)
                    _, w1, c1 = _timed(lambda d=d: d.fit(X))
                    _, w2, c2 = _timed(lambda d=d: d.decision_function(X))
                    rec(f"{impl}/{d.name}/fit", w1, c1)
                    rec(f"{impl}/{d.name}/fit_plus_score", w1 + w2, c1 + c2)
    med_w = {k: statistics.median(v) for k, v in wall.items()}
    med_c = {k: statistics.median(v) for k, v in cpu.items()}
    out: dict[str, object] = {"wall_median_s": med_w, "cpu_median_s": med_c, "wall_all_s": wall}
    if "before" in impls:
        out["labels_equal_before_after"] = {
            n: bool(np.array_equal(info["after/_labels"][n], info["before/_labels"][n]))
            for n in info["after/_labels"]
        }
        out["speedup_ensemble_wall"] = med_w["before/ensemble"] / med_w["after/ensemble"]
        out["speedup_ensemble_cpu"] = med_c["before/ensemble"] / med_c["after/ensemble"]
    out["meets_2s_target_wall"] = med_w["after/ensemble"] < 2.0
    out["meets_2s_target_cpu"] = med_c["after/ensemble"] < 2.0
    for prec in ("mixed", "float32"):
        out[f"meets_2s_target_wall_{prec}_pca"] = med_w[f"after/ensemble_{prec}_pca"] < 2.0
        out[f"meets_2s_target_cpu_{prec}_pca"] = med_c[f"after/ensemble_{prec}_pca"] < 2.0
    out.update({k: v for k, v in info.items() if "/_labels" not in k})
    return out


def rows(details: dict) -> list[dict]:
    """The result rows: fit + score of each detector and the three together (the ensemble),
    per BLAS setting, medians of ``details["by_blas"]`` (no alternative)."""
    size = f"{details['n_windows']} windows x {details['n_features']} features"
    out: list[dict] = []
    for setting, r in details["by_blas"].items():
        for det, v in r["fit_plus_score_median_s"].items():
            out.append(row(f"{det} fit + score, {size} ({setting})", "s", side(det, v)))
        out.append(
            row(
                f"all three, {size} ({setting})",
                "s",
                side("total", r["total_median_s"]),
                note=f"{details['repeat']} repeats",
            )
        )
    return out


def features(seconds: float, channels: int, pruned: bool) -> tuple[dict, dict | None, float]:
    """The feature matrices (``unpruned`` and, when ``pruned``, on the pruned space at |r| 0.5),
    what pruning kept, and the seconds of the unpruned features."""
    from reveal_lab.config import WindowConfig
    from reveal_lab.features import window_features
    from reveal_lab.pruning import prune
    from reveal_lab.synth import make_run

    run, _ = make_run(seconds, channels, seed=0)
    t = time.perf_counter()
    cases = {"unpruned": window_features(run.frame, WindowConfig()).X}
    feat_s = time.perf_counter() - t
    info = None
    if pruned:
        pr = prune({"synthetic": [run.frame]}, 0.5)
        cols = pr.select_columns(run.frame.columns)
        cases["pruned"] = window_features(run.frame.select("timestamp", *cols), WindowConfig()).X
        info = {"threshold": 0.5, "metrics_kept": len(pr.union), "metric_columns": len(cols)}
    for name, X in cases.items():
        print(f"{name}: feature matrix {X.shape[0]} x {X.shape[1]}")
    return cases, info, feat_s


def _print(case: str, label: str, r: dict) -> None:
    w, c = r["wall_median_s"], r["cpu_median_s"]
    line = f"{case:9s} {label:14s} ensemble after {w['after/ensemble']:.2f} s wall"
    line += f" / {c['after/ensemble']:.2f} s cpu"
    if "before/ensemble" in w:
        line += f", before {w['before/ensemble']:.2f} / {c['before/ensemble']:.2f}"
    for prec in ("mixed", "float32"):
        k = f"after/ensemble_{prec}_pca"
        line += f"; {prec} PCA {w[k]:.2f} / {c[k]:.2f}"
    print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = parser(
        "detectors", __doc__, repeats=5, quick="62 s of 30 channels, 1 repeat, no 'before', no pruned case"
    )
    ap.add_argument("--seconds", type=float, default=1802.0, help="run length (1802 s gives 1,800 windows)")
    ap.add_argument("--channels", type=int, default=700)
    ap.add_argument("--before", default=BEFORE_REV, help="git revision to compare with ('' to skip)")
    ap.add_argument("--no-pruned", action="store_true", help="skip the pruned-space case")
    args = ap.parse_args(argv)
    if args.quick:
        args.seconds, args.channels, args.repeats, args.before, args.no_pruned = 62.0, 30, 1, "", True
    session = Session("detectors", argv, versions=("numpy", "scikit-learn"))
    from threadpoolctl import threadpool_info

    import reveal_lab.detectors as after

    cases, pruned_info, feat_s = features(args.seconds, args.channels, not args.no_pruned)
    impls = {"after": after}
    tmp = tempfile.TemporaryDirectory()
    if args.before:
        try:
            impls = {"before": _load_before(args.before, Path(tmp.name)), "after": after}
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"no 'before' comparison: cannot load {args.before} from git ({exc})")
    results: dict[str, dict] = {}
    for case, X in cases.items():
        results[case] = {"n_windows": int(X.shape[0]), "n_features": int(X.shape[1])}
        for label, limit in (("blas_1_thread", 1), ("blas_default", None)):
            r = _measure(X, impls, args.repeats, limit)
            w = r["wall_median_s"]
            r["fit_plus_score_median_s"] = {
                n: w[f"after/{n}/fit_plus_score"] for n in ("zscore", "mahalanobis", "iforest")
            }
            r["total_median_s"] = w["after/ensemble"]
            results[case][label] = r
            _print(case, label, r)
    unpruned = results["unpruned"]
    details = {
        "n_windows": unpruned["n_windows"],
        "n_features": unpruned["n_features"],
        "channels": args.channels,
        "repeat": args.repeats,
        "before_revision": args.before if "before" in impls else None,
        "feature_seconds": feat_s,
        "by_blas": {k: v for k, v in unpruned.items() if k.startswith("blas")},
        "pruned": pruned_info,
        "pruned_results": results.get("pruned"),
        "blas": [
            {k: i.get(k) for k in ("internal_api", "num_threads", "version")}
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        ],
    }
    session.write(args.out, rows(details), details)
    return 0


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    sys.exit(main())
