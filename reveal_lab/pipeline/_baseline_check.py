"""Is a baseline fit to judge a run? How many of the run's metrics it shares, and
whether it moves at all.

A baseline that shares few of the run's metrics leaves most feature columns unknown
(NaN: neutral for the detectors), so the detectors judge the run on a sliver of it; an
all-constant baseline has zero spread, so every standardised deviation is infinite and
every window is flagged. Both are refused below the documented limits unless forced,
and a forced fit carries the warning into the report.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import numpy as np
import polars as pl

from reveal_lab.telemetry import classify, metric_key, parse_metric_name

__all__ = [
    "MIN_BASELINE_OVERLAP",
    "MIN_SUBSYSTEM_METRICS",
    "BaselineMismatch",
    "check_baseline",
    "check_metric_overlap",
    "outlier_notes",
]

#: the share of the run's metrics (host-free keys) the baseline must also hold
MIN_BASELINE_OVERLAP = 0.5


class BaselineMismatch(ValueError):
    """The baseline shares too few of the run's metrics, or never moves."""


def check_metric_overlap(
    run_columns: Iterable[str],
    baseline_columns: Iterable[str],
    *,
    where: str,
    force: bool = False,
    min_overlap: float = MIN_BASELINE_OVERLAP,
) -> list[str]:
    """What a baseline must share with a run, on the raw metric columns before any pruning (a
    pruned space fitted on the baseline holds only the baseline's metrics, so the per-host
    check after pruning would always find full overlap); notes for the report, or
    :class:`BaselineMismatch` unless ``force``:

    * at least ``min_overlap`` of the run's metrics (host-free keys), as :func:`check_baseline`;
    * every subsystem of the run with :data:`MIN_SUBSYSTEM_METRICS` metrics or more has some of
      them in the baseline (a GPU run against baselines without a GPU: its GPU goes unjudged,
      however much of the rest is shared);
    * a metric shared in another unit (``[MB]`` against ``[kB]``, the unit in the column name)
      is refused with both names: its values are not comparable as they stand.

    Columns outside the metric-name grammar are compared by name (no subsystem, no unit).

    >>> print(check_metric_overlap(["a", "b"], ["a", "b", "c"], where="r")[0])
    r: the baseline holds 2 of the run's 2 metrics (100 %) before pruning
    >>> check_metric_overlap(["a", "b", "c"], ["a"], where="r")
    Traceback (most recent call last):
    ...
    reveal_lab.pipeline._baseline_check.BaselineMismatch: r: the baseline shares 1 of the run's 3 metrics (33 %; at least 50 % are needed: 2 metrics are unknown to the detectors, e.g. b, c). Give a baseline recorded the same way (same dataset, probes and view), or --force to use it anyway
    >>> check_metric_overlap(["Mem:used.h1[MB]"], ["Mem:used.h2[kB]"], where="r")
    Traceback (most recent call last):
    ...
    reveal_lab.pipeline._baseline_check.BaselineMismatch: r: 1 metric(s) of the run are in other units in the baseline, e.g. Mem:used.h1[MB] against the baseline's Mem:used.h2[kB]; their values cannot be compared as they stand. Give a baseline recorded the same way (same dataset, probes and view), or --force to use it anyway
    """
    run_cols = list(dict.fromkeys(run_columns))
    keys = list(dict.fromkeys(metric_key(c) for c in run_cols))
    base_units: dict[str, str] = {}
    for c in baseline_columns:
        base_units.setdefault(metric_key(c), c)
    shared = sum(k in base_units for k in keys)
    if not (keys and shared / len(keys) >= min_overlap):
        # below the limit: the same message and rule as the per-host check (no windows needed)
        pairs = pl.DataFrame({"key": keys}, schema={"key": pl.String})
        return check_baseline(pairs, np.full((2, len(keys)), np.nan), set(base_units), where=where,
                              force=force, min_overlap=min_overlap, check_moving=False)
    notes = [f"{where}: the baseline holds {shared} of the run's {len(keys)} metrics "
             f"({100 * shared / len(keys):.0f} %) before pruning"]
    problems = _absent_subsystems(run_cols, base_units) + _other_units(run_cols, base_units)
    for problem in problems:
        if not force:
            raise BaselineMismatch(f"{where}: {problem}. {_ADVICE}")
        notes.append(f"{where}: {problem}; used because of --force")
    return notes


#: a subsystem of the run with this many metrics must have some of them in the baseline
MIN_SUBSYSTEM_METRICS = 3
_ADVICE = "Give a baseline recorded the same way (same dataset, probes and view), or --force to use it anyway"


def _absent_subsystems(run_cols: list[str], base: dict[str, str]) -> list[str]:
    """A sentence per subsystem of the run the baseline holds none of the metrics of."""
    by_sub: dict[str, list[str]] = {}
    for c in run_cols:
        if parse_metric_name(c) is not None:
            by_sub.setdefault(classify(c).subsystem, []).append(c)
    out = []
    for sub, cols in sorted(by_sub.items()):
        if len(cols) >= MIN_SUBSYSTEM_METRICS and not any(metric_key(c) in base for c in cols):
            out.append(
                f"the baseline holds none of the run's {len(cols)} {sub} metrics (e.g. {', '.join(cols[:2])}), "
                f"so the run's {sub} would go unjudged"
            )
    return out


def _other_units(run_cols: list[str], base: dict[str, str]) -> list[str]:
    """A sentence on the shared metrics whose unit (in the column name) differs in the baseline."""
    odd = []
    for c in run_cols:
        b = base.get(metric_key(c))
        m, mb = parse_metric_name(c), parse_metric_name(b) if b is not None else None
        if m is not None and mb is not None and (m.unit or "") != (mb.unit or ""):
            odd.append(f"{c} against the baseline's {b}")
    if not odd:
        return []
    return [
        f"{len(odd)} metric(s) of the run are in other units in the baseline, e.g. {'; '.join(odd[:3])}; "
        "their values cannot be compared as they stand"
    ]


def check_baseline(
    pairs: pl.DataFrame,
    Xfit: np.ndarray,
    baseline_keys: set[str],
    *,
    where: str,
    force: bool = False,
    min_overlap: float = MIN_BASELINE_OVERLAP,
    check_moving: bool = True,
) -> list[str]:
    """Notes for the report about the baseline of one host of a run; raises
    :class:`BaselineMismatch` when the baseline is unfit and ``force`` is off.

    Parameters
    ----------
    pairs : the run's metric–feature pairs (a ``key`` column: host-free metric keys).
    Xfit : the baseline's windows aligned to ``pairs`` (NaN where the baseline lacks a pair).
    baseline_keys : every host-free metric key the baseline holds.
    where : names the run and host in messages.

    >>> p = pl.DataFrame({"key": ["a", "a", "b", "c"], "feature": ["mean", "std", "mean", "mean"]})
    >>> X = np.array([[1.0, 0.1, np.nan, np.nan], [2.0, 0.3, np.nan, np.nan]])
    >>> note = check_baseline(p, X, {"a", "z"}, where="r", force=True)[0]
    >>> "shares 1 of the run's 3 metrics (33 %; below the 50 % needed, used because of --force" in note
    True
    """
    run_keys = list(dict.fromkeys(pairs["key"].to_list()))
    shared = [k for k in run_keys if k in baseline_keys]
    missing = [k for k in run_keys if k not in baseline_keys]
    n, k = len(run_keys), len(shared)
    share = k / n if n else 0.0
    notes: list[str] = []
    head = f"{where}: the baseline shares {k} of the run's {n} metrics ({100 * share:.0f} %"
    if share < min_overlap:
        detail = (
            f"{len(missing)} metrics are unknown to the detectors, e.g. {', '.join(missing[:3])}"
        )
        if not force:
            raise BaselineMismatch(
                f"{head}; at least {100 * min_overlap:.0f} % are needed: {detail}). Give a baseline "
                "recorded the same way (same dataset, probes and view), or --force to use it anyway"
            )
        notes.append(
            f"{head}; below the {100 * min_overlap:.0f} % needed, used because of --force: {detail})"
        )
    else:
        notes.append(head + ")")
    if not check_moving:
        return notes
    # a baseline that never moves: zero spread in every shared column
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(Xfit)
        cols = finite.sum(axis=0) >= 2
        if cols.any():
            lo = np.where(finite, Xfit, np.inf).min(axis=0)
            hi = np.where(finite, Xfit, -np.inf).max(axis=0)
            moving = cols & (hi > lo)
        else:
            moving = cols
    if not moving.any():
        msg = (
            f"{where}: the baseline is degenerate: none of the {int(cols.sum())} feature columns it "
            f"shares with the run varies over its {Xfit.shape[0]} windows (all constant), so any "
            "movement would be flagged"
        )
        if not force:
            raise BaselineMismatch(msg + "; give a baseline that moves, or --force to use it anyway")
        notes.append(msg + "; used because of --force")
    return notes


def outlier_notes(detectors: dict, *, where: str, replaced: Collection[str] = ()) -> list[str]:
    """What the detectors' outlier policy did, for the report: inputs clipped to
    ±``VALUE_CLIP`` and thresholds capped at the outlier fence (see
    ``outlier_fence`` in the detectors' base). ``replaced``: the detectors whose fitted
    threshold was replaced afterwards (calibrated or robust thresholds): their fence did not
    set the threshold in use, so no note says it did."""
    notes = []
    clipped = max((getattr(d, "n_clipped_", 0) for d in detectors.values()), default=0)
    if clipped:
        notes.append(
            f"{where}: {clipped} feature value(s) beyond ±1e30 were clipped to it before fitting "
            "(extreme values: they stay the most extreme)"
        )
    for name, d in detectors.items():
        n = getattr(d, "n_beyond_fence_", 0)
        if n and name not in replaced:
            notes.append(
                f"{where}: {name}: {n} fit window(s) score beyond the outlier fence (median + 100 robust "
                f"spreads); the threshold was capped there ({d.threshold_:.4g}) so extreme windows "
                "cannot hide themselves"
            )
    return notes
