"""The two settings every detection claim is computed under: ``paper``, the paper's method
as it states it (each run scored by detectors fitted on the other fault-free runs of its
workload pooled, the top 1 % of their scores per detector flagged with no outlier fence, the
standardized Z-score, any detector, every window over a threshold, no clip, no sentinel rule,
no trimming; a workload with no other fault-free run is fitted on the run itself and says so
in its ``departures``), and ``default``, reveal-lab's defaults (thresholds calibrated on the
workload's other fault-free runs where there are two or more, the clip and the sentinel rule
on).

A notebook detects once per setting and writes one table with a ``policy`` column
(:func:`policy_table`); the claims read each setting's rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import polars as pl

__all__ = ["SETTINGS", "setting_arguments", "policy_table"]

#: the settings, in the order the claims show them
SETTINGS: tuple[str, ...] = ("paper", "default")


def setting_arguments(
    name: str, *, min_agreement: int | None = None, lone_run: bool = False
) -> dict[str, object]:
    """Keyword arguments of :func:`~reveal_lab.studies.run_detection` (``lone_run=False``)
    or :func:`~reveal_lab.studies.detect_windows` (``lone_run=True``: a run detected alone)
    for setting ``name`` (one of :data:`SETTINGS`); the pipeline builds its
    :class:`~reveal_lab.pipeline.DetectionPolicy` from them (over ``POLICIES["default"]``).

    ``paper``: every field in which ``POLICIES["paper"]`` differs from the default, but the
    metric space (``prune``: the study's, given apart), so the study detects with the paper's
    policy itself (its name included: its resolved ``departures`` are kept).
    ``min_agreement``: the detectors that must agree under ``default``; ``None`` or 0: the
    default policy's own (2 with calibrated thresholds, else 1). The paper's setting always
    counts any one detector.

    >>> args = setting_arguments("paper")
    >>> args["name"], args["thresholds"], args["zscore"], args["trim"], args["min_agreement"]
    ('paper', 'workload', 'standard', 'none', 1)
    >>> from reveal_lab.pipeline import POLICIES
    >>> POLICIES["default"].with_(**args, prune=True) == POLICIES["paper"]
    True
    >>> setting_arguments("default", lone_run=True)
    {'thresholds': 'auto', 'min_agreement': None, 'min_run': None, 'sentinel': True}
    >>> setting_arguments("ours")
    Traceback (most recent call last):
    ...
    ValueError: unknown setting 'ours'; expected one of ('paper', 'default')
    """
    from reveal_lab.pipeline import POLICIES

    if name == "paper":
        paper, default = POLICIES["paper"], POLICIES["default"]
        args: dict[str, object] = {
            f.name: getattr(paper, f.name)
            for f in dataclasses.fields(paper)
            if f.name != "prune" and getattr(paper, f.name) != getattr(default, f.name)
        }
        sentinel = False
    elif name == "default":
        agree = int(min_agreement) if min_agreement else None
        args = {"thresholds": "auto", "min_agreement": agree, "min_run": None}
        sentinel = True
    else:
        raise ValueError(f"unknown setting {name!r}; expected one of {SETTINGS}")
    if lone_run:
        args["sentinel"] = sentinel
    return args


def policy_table(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """One table from one per setting: each with a first column ``policy`` (its key).

    >>> t = policy_table({"paper": pl.DataFrame({"x": [1]}), "default": pl.DataFrame({"x": [2]})})
    >>> t.rows()
    [('paper', 1), ('default', 2)]
    """
    if not tables:
        raise ValueError("policy_table needs at least one setting's table")
    parts = [t.select(pl.lit(name, pl.String).alias("policy"), pl.all()) for name, t in tables.items()]
    return pl.concat(parts, how="diagonal_relaxed")
