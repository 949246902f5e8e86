"""Where a resolved ``paper`` policy still departs from the paper's method as written: each
entry cites the paper's sentence (short, with its section), says what is done here and why
the paper's cannot be followed. Printed with the resolved policy (``summary.json``) and in
docs/METHOD.md.

>>> from reveal_lab.pipeline import get_policy
>>> alone = get_policy("paper").resolve(baseline_runs=0)
>>> [d["field"] for d in alone.departures]
['thresholds', 'agreement_score', 'prune_priority']
>>> [d["field"] for d in get_policy("paper").resolve(baseline_runs=2).departures]
['agreement_score', 'prune_priority']
>>> [d["field"] for d in get_policy("paper", min_agreement=2).resolve(baseline_runs=2).departures]
['min_agreement', 'agreement_score', 'prune_priority']
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the policy imports this module
    from reveal_lab.pipeline._policy import DetectionPolicy, ResolvedPolicy

__all__ = ["paper_departures", "PAPER_FIELDS", "ALWAYS"]


def _entry(field: str, section: str, quote: str, here: str, why: str) -> dict[str, str]:
    return {"field": field, "section": section, "quote": quote, "here": here, "why": why}


#: the paper's method, field by field, as :data:`~reveal_lab.pipeline.POLICIES` ``paper`` sets
#: it, with the sentence each value follows (a policy named ``paper`` that changes one departs)
PAPER_FIELDS: dict[str, tuple[Any, str, str]] = {
    "min_agreement": (1, "§4.3", "Each detector evaluates every window for anomalies"),
    "min_run": (1, "§4.3", "Each detector evaluates every window for anomalies"),
    "quantile": (0.99, "§4.3", "typically flagging the top 1%"),
    "zscore": ("standard", "§4.3", "flags outliers via standardized deviations"),
    "outlier_fence": (False, "§4.3", "Windows above the 99th percentile are marked"),
    "z_clip": (None, "§4.3", "flags windows exceeding the 99th percentile of the mean absolute Z-score"),
    "trim": ("none", "§4.2", "we segment each metric's time series into overlapping windows"),
    "skip_startup": (False, "§4.2", "we segment each metric's time series into overlapping windows"),
    "sentinel_samples": (None, "§4.3", "Each detector evaluates every window for anomalies"),
    "lone_sentinel": (False, "§4.3", "Each detector evaluates every window for anomalies"),
    "prune_method": (
        "pairwise",
        "§4.1",
        "When a pair of metrics exceeds a global correlation threshold |r|, we retain one",
    ),
}

#: the departures every ``paper`` resolution keeps: the paper leaves these open
ALWAYS: tuple[dict[str, str], ...] = (
    _entry(
        "agreement_score",
        "§3.1",
        "the anomaly score increases with the number of detectors in agreement",
        "a window counts when any detector flags it; its agreement_score (the agreeing detectors, "
        "then the combined score below 1) ranks the windows",
        "the paper gives neither the score's formula nor how many detectors must agree for a "
        "window to count",
    ),
    _entry(
        "prune_priority",
        "§4.1",
        "a fixed priority table that favors interpretable utilization and throughput counters",
        "the metric registry's priority classes (utilisation, throughput, ratios, raw counters)",
        "the paper's table is not published",
    ),
)


def paper_departures(resolved: ResolvedPolicy, *, asked: DetectionPolicy) -> list[dict[str, str]]:
    """The departures of ``resolved`` (a ``paper`` policy made concrete for one run) from the
    paper's method: a field ``asked`` set otherwise than :data:`PAPER_FIELDS`, a workload with
    no other fault-free run (fitted on the run itself), a given pruned space cut another way,
    and :data:`ALWAYS`."""
    out = []
    for name, (value, section, quote) in PAPER_FIELDS.items():
        got = getattr(asked, name)
        if got != value:
            out.append(
                _entry(name, section, quote, f"{name} = {got!r}", f"changed from the paper's {value!r} here")
            )
    if asked.thresholds not in ("workload", "baseline") or resolved.fit_on != "baseline":
        out.insert(
            0,
            _entry(
                "thresholds",
                "§4.3",
                "We train an IF per workload",
                f"{resolved.thresholds} thresholds, fitted on the run itself",
                "no other fault-free run of the workload was given (labels.csv / meta_*.csv name none)"
                if asked.thresholds == "workload"
                else f"thresholds={asked.thresholds!r} asked by the caller",
            ),
        )
    if resolved.prune is False:
        out.append(
            _entry(
                "prune",
                "§4.1",
                "This union defines the final diagnostic space used in Reveal",
                "every metric scored",
                "no pruned space was fitted or given for this run",
            )
        )
    given = _given_params(resolved.prune)
    method = None if given is None else str(given.get("method", "complete"))
    if method is not None and method != "pairwise":
        out.append(
            _entry(
                "prune_method",
                "§4.1",
                "When a pair of metrics exceeds a global correlation threshold |r|, we retain one",
                f"a pruned space given, cut by {method!r}",
                "the space was fitted before and given to this run",
            )
        )
    span = None if given is None else given.get("trim", "auto")
    if span not in (None, False, "none"):
        _, section, quote = PAPER_FIELDS["trim"]
        out.append(
            _entry(
                "prune_trim",
                section,
                quote,
                f"a pruned space given, fitted on each run's {'auto' if span is True else span} span",
                "the space was fitted before and given to this run",
            )
        )
    return out + [dict(d) for d in ALWAYS]


def _given_params(prune: Any) -> dict[str, Any] | None:
    """The parameters of a pruned space given to a run (a :class:`Pruning`: how it was cut,
    on which span of its runs); ``None`` when the policy fits it (``True``), scores every
    metric (``False``) or names a file (read when scored)."""
    if isinstance(prune, bool | str | os.PathLike) or prune is None:
        return None
    return dict(getattr(prune, "params", None) or {})
