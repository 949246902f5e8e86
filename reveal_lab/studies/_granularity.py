"""Window granularity (paper §5.5): does the answer depend on the window size?

Each run is analysed at several (window, stride) settings, by default
3 s/1 s (the paper's), 1.5 s/0.5 s and 5 s/2 s. The anomalous windows of each
setting are merged into intervals (overlapping or touching windows join), and
every pair of settings is compared per run and host with

* ``iou``: length-based intersection over union of the two interval sets;
* ``hit_count``: share of the reference setting's intervals that overlap any
  interval of the other setting;
* ``hit_length``: share of the reference setting's anomalous time that the other
  setting also flags.

:func:`granularity_table` aggregates these into Table 2 (mean, median, std per pair).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from reveal_lab.config import WindowConfig, get_preset
from reveal_lab.studies._detection import needs_baseline
from reveal_lab.studies._intervals import hit_rate_count, hit_rate_length, interval_iou, merge_windows

if TYPE_CHECKING:
    from reveal_lab.pipeline import DetectionPolicy

__all__ = [
    "GRANULARITIES",
    "granularity_label",
    "detection_windows",
    "detect_windows",
    "granularity_policy",
    "granularity_intervals",
    "granularity_comparison",
    "granularity_table",
]

#: (window_s, stride_s) settings compared in §5.5; the first is the reference
GRANULARITIES: tuple[tuple[float, float], ...] = ((3.0, 1.0), (1.5, 0.5), (5.0, 2.0))

#: returns one row per window: host, start_s, end_s, anomalous
DetectFn = Callable[[object, WindowConfig], pl.DataFrame]


def granularity_label(window_s: float, stride_s: float) -> str:
    """``"3s/1s"`` from ``(3.0, 1.0)``.

    >>> granularity_label(1.5, 0.5)
    '1.5s/0.5s'
    """

    def f(x: float) -> str:
        return f"{x:g}s"

    return f"{f(window_s)}/{f(stride_s)}"


def _seconds(col: pl.Series, t0: object) -> np.ndarray:
    if col.dtype.is_temporal():
        return ((col - t0).dt.total_milliseconds() / 1000.0).to_numpy().astype(float)  # type: ignore[operator]
    return col.cast(pl.Float64).to_numpy()


def detection_windows(det: object, run: object) -> pl.DataFrame:
    """The windows of a :class:`reveal_lab.pipeline.Detection` as
    ``host, start_s, end_s, anomalous`` (seconds from the run's first sample).

    A window is anomalous by the detection's own decision (:attr:`Detection.decision`).
    """
    windows = det.windows  # type: ignore[attr-defined]
    t0 = run.frame.get_column("timestamp").min()  # type: ignore[attr-defined]
    rule = getattr(det, "decision", pl.col("agreement") >= int(getattr(det, "min_agreement", 1)))
    flags = windows.select(rule).to_series().fill_null(False)
    return pl.DataFrame(
        {
            "host": windows.get_column("host").cast(pl.String),
            "start_s": _seconds(windows.get_column("start"), t0),
            "end_s": _seconds(windows.get_column("end"), t0),
            "anomalous": flags.to_numpy(),
        }
    )


def granularity_policy(trim: bool | str = True) -> DetectionPolicy:
    """The policy :func:`detect_windows` detects with when given none: ``POLICIES["default"]``
    with every window over a threshold counted (``min_run`` of the paper's policy) and no
    sentinel rule (the detectors' own decision, as the paper's Table 2 compares them), and
    ``trim`` (``True``: ``auto``, ``False``: ``none``, or a mode).

    The default policy's ``min_run`` for a run alone (``None``) asks
    :func:`reveal_lab.pipeline.past_a_spike` windows in a row, a span that grows with the
    stride (4 s at 1 s, several times that at coarse strides), so the granularities would
    be compared under different rules (on the lab data the coarse setting then finds no
    interval the fine one does: ``docs/RESULTS.md``).

    >>> p = granularity_policy(trim=False)
    >>> p.min_run, p.sentinel_samples, p.lone_sentinel, p.trim
    (1, None, False, 'none')
    """
    from reveal_lab.pipeline import POLICIES, trim_arguments

    return POLICIES["default"].with_(
        min_run=POLICIES["paper"].min_run, sentinel_samples=None, lone_sentinel=False,
        trim=trim_arguments(trim)[0],
    )


def detect_windows(
    run: object,
    window: WindowConfig,
    preset: str = "paper",
    pruning: object | None = None,
    policy: DetectionPolicy | None = None,
    baseline: Sequence[object] | None = None,
) -> pl.DataFrame:
    """Detection for the study: :func:`reveal_lab.pipeline.detect_run` with ``window``
    replacing the preset's window settings, in the ``pruning`` space (``None``: every
    metric; it replaces the policy's ``prune``), under ``policy`` (default
    :func:`granularity_policy`: every window over a threshold, no sentinel rule, trimmed,
    thresholds as the pipeline's default for a run alone; a study's setting:
    :func:`~reveal_lab.studies.setting_policy`). Its ``thresholds``: ``auto``, robust for a
    run alone; ``workload``: the paper's, fitted on ``baseline``, the other fault-free runs
    of the run's workload (:func:`~reveal_lab.studies.baseline_runs`), the top 1 % of their
    scores per detector; without them, on the run itself, said in the resolved policy's
    ``departures``. ``baseline`` is used only by threshold modes that fit on baseline runs
    (:func:`~reveal_lab.studies.needs_baseline`)."""
    from reveal_lab.pipeline import detect_run

    policy = (policy or granularity_policy()).with_(prune=pruning if pruning is not None else False)
    base = list(baseline) if baseline and needs_baseline(policy) else None
    det = detect_run(run, baseline=base, preset=get_preset(preset, window=window), policy=policy)
    return detection_windows(det, run)


def granularity_intervals(
    runs: Iterable[object],
    granularities: Sequence[tuple[float, float]] = GRANULARITIES,
    *,
    detect: DetectFn | None = None,
    preset: str = "paper",
    interval_s: float | None = None,
) -> pl.DataFrame:
    """Detect every run at every granularity; merged anomalous intervals.

    Returns one row per interval: ``run_id, workload, host, granularity, window_s,
    stride_s, start_s, end_s, run_length_s``. A run with no anomalous window at a
    granularity contributes one row with null ``start_s``/``end_s`` so that its
    absence is visible (and the comparison knows the run was analysed).
    """
    rows: list[dict[str, object]] = []
    for run in runs:
        meta = run.meta  # type: ignore[attr-defined]
        ts = run.frame.get_column("timestamp")  # type: ignore[attr-defined]
        run_len = float((ts.max() - ts.min()).total_seconds()) if len(ts) > 1 else 0.0
        for w, s in granularities:
            wc = WindowConfig(window_s=w, stride_s=s, **({"interval_s": interval_s} if interval_s else {}))
            win = detect(run, wc) if detect is not None else detect_windows(run, wc, preset)
            label = granularity_label(w, s)
            base = {
                "run_id": meta.run_id,
                "workload": meta.workload,
                "granularity": label,
                "window_s": w,
                "stride_s": s,
                "run_length_s": run_len,
            }
            for host, part in win.group_by("host", maintain_order=True) if win.height else []:
                iv = merge_windows(
                    part["start_s"].to_numpy(), part["end_s"].to_numpy(), part["anomalous"].to_numpy()
                )
                if len(iv) == 0:
                    rows.append({**base, "host": host[0], "start_s": None, "end_s": None})
                rows.extend({**base, "host": host[0], "start_s": float(a), "end_s": float(b)} for a, b in iv)
    schema = {
        "run_id": pl.String,
        "workload": pl.String,
        "host": pl.String,
        "granularity": pl.String,
        "window_s": pl.Float64,
        "stride_s": pl.Float64,
        "start_s": pl.Float64,
        "end_s": pl.Float64,
        "run_length_s": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema).select(list(schema))


_COMPARISON_SCHEMA = {
    "run_id": pl.String,
    "host": pl.String,
    "pair": pl.String,
    "reference": pl.String,
    "other": pl.String,
    "iou": pl.Float64,
    "hit_count": pl.Float64,
    "hit_length": pl.Float64,
}


def granularity_comparison(intervals: pl.DataFrame, reference: str | None = None) -> pl.DataFrame:
    """Per run and host, compare each pair of granularities.

    ``reference`` (default: the first granularity in ``intervals``) is compared with
    every other one; the others are also compared with each other. Rows:
    ``run_id, host, pair, reference, other, iou, hit_count, hit_length``.
    """
    grans = intervals.get_column("granularity").unique(maintain_order=True).to_list()
    if not grans:
        return pl.DataFrame(schema=_COMPARISON_SCHEMA)
    reference = reference or grans[0]
    if reference not in grans:
        raise ValueError(f"reference granularity {reference!r} not among {grans}")
    ordered = [reference] + [g for g in grans if g != reference]
    rows = []
    for (run_id, host), part in intervals.group_by(["run_id", "host"], maintain_order=True):
        sets = {}
        for g in ordered:
            p = part.filter((pl.col("granularity") == g) & pl.col("start_s").is_not_null())
            sets[g] = p.select("start_s", "end_s").to_numpy().reshape(-1, 2)
        present = set(part.get_column("granularity").to_list())
        for a, b in itertools.combinations(ordered, 2):
            if a not in present or b not in present:
                continue
            rows.append(
                {
                    "run_id": run_id,
                    "host": host,
                    "pair": f"{a} vs {b}",
                    "reference": a,
                    "other": b,
                    "iou": interval_iou(sets[a], sets[b]),
                    "hit_count": hit_rate_count(sets[a], sets[b]),
                    "hit_length": hit_rate_length(sets[a], sets[b]),
                }
            )
    return pl.DataFrame(rows, schema=_COMPARISON_SCHEMA)


def granularity_table(comparison: pl.DataFrame) -> pl.DataFrame:
    """Table 2: mean, median and std of IoU and hit rates per granularity pair
    (NaN comparisons, e.g. two empty interval sets, are left out and counted in ``n``).

    >>> c = pl.DataFrame({"pair": ["a vs b"] * 2, "iou": [0.5, 1.0], "hit_count": [1.0, 1.0],
    ...                   "hit_length": [0.5, float("nan")]})
    >>> granularity_table(c).select("pair", "measure", "mean", "n").rows()
    [('a vs b', 'iou', 0.75, 2), ('a vs b', 'hit_count', 1.0, 2), ('a vs b', 'hit_length', 0.5, 1)]
    """
    rows = []
    for pair in comparison.get_column("pair").unique(maintain_order=True).to_list():
        part = comparison.filter(pl.col("pair") == pair)
        for measure in ("iou", "hit_count", "hit_length"):
            v = part.get_column(measure).to_numpy().astype(float)
            v = v[np.isfinite(v)]
            rows.append(
                {
                    "pair": pair,
                    "measure": measure,
                    "mean": float(v.mean()) if v.size else float("nan"),
                    "median": float(np.median(v)) if v.size else float("nan"),
                    "std": float(v.std(ddof=1)) if v.size > 1 else float("nan"),
                    "n": int(v.size),
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "pair": pl.String,
            "measure": pl.String,
            "mean": pl.Float64,
            "median": pl.Float64,
            "std": pl.Float64,
            "n": pl.Int64,
        },
    )
