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

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from reveal_lab.pipeline import DetectionPolicy

__all__ = ["SETTINGS", "setting_policy", "setting_policies", "policy_table"]

#: the settings, in the order the claims show them
SETTINGS: tuple[str, ...] = ("paper", "default")


def setting_policy(
    name: str, *, min_agreement: int | None = None, trim: bool | str = True
) -> DetectionPolicy:
    """The :class:`~reveal_lab.pipeline.DetectionPolicy` of setting ``name`` (one of
    :data:`SETTINGS`), as a study detects with it (its metric space given apart, the
    ``pruning`` of the study, which replaces the policy's ``prune``).

    ``paper``: ``POLICIES["paper"]`` itself (its name included: its resolved ``departures``
    are kept), the whole recording whatever ``trim`` says. ``default``: ``POLICIES["default"]``
    with ``trim`` (``True``: ``auto``, ``False``: ``none``, or a mode of
    :data:`~reveal_lab.pipeline.TRIM_RULES`) and ``min_agreement``, the detectors that must
    agree (``None`` or 0: the policy's own, 2 with calibrated thresholds, else 1). The paper's
    setting always counts any one detector.

    >>> from reveal_lab.pipeline import POLICIES
    >>> setting_policy("paper") == POLICIES["paper"]
    True
    >>> p = setting_policy("default", min_agreement=2, trim=False)
    >>> p.name, p.thresholds, p.min_agreement, p.trim
    ('default', 'auto', 2, 'none')
    >>> setting_policy("ours")
    Traceback (most recent call last):
    ...
    ValueError: unknown setting 'ours'; expected one of ('paper', 'default')
    """
    from reveal_lab.pipeline import POLICIES, trim_arguments

    if name not in SETTINGS:
        raise ValueError(f"unknown setting {name!r}; expected one of {SETTINGS}")
    policy = POLICIES[name]
    if name == "paper":
        return policy
    agree = int(min_agreement) if min_agreement else policy.min_agreement
    return policy.with_(trim=trim_arguments(trim)[0], min_agreement=agree)


def setting_policies(
    names: Sequence[str], *, min_agreement: int | None = None, trim: bool | str = True
) -> dict[str, DetectionPolicy]:
    """:func:`setting_policy` of each of ``names`` (a notebook's ``policies``), by name, in order.

    >>> list(setting_policies(["paper", "default"]))
    ['paper', 'default']
    """
    return {n: setting_policy(n, min_agreement=min_agreement, trim=trim) for n in names}


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
