"""The detection policy from the command line: one flag per policy field, one builder.

Each command that detects (``detect``, ``evaluate``, ``scan``, ``watch``, ``compare``) adds
the flags of the policy fields it uses with :func:`add_policy_arguments` and builds its
:class:`reveal_lab.pipeline.DetectionPolicy` with :func:`policy_from_args`: ``--policy``
names the starting point (``default`` or ``paper``), each flag given replaces one field, a
flag not given leaves the policy's value (the flags have no defaults of their own). The
table :data:`KNOBS` says which flag sets which field; adding a knob is a field of the
policy, the code that reads it, and one row here.

>>> import argparse
>>> p = argparse.ArgumentParser()
>>> add_policy_arguments(p, ("min_run", "sentinel_samples"))
>>> sorted(policy_changes(p.parse_args(["--min-run", "2"])).items())
[('min_run', 2)]
>>> sorted(policy_changes(p.parse_args(["--sentinel-samples", "none"])).items())
[('lone_sentinel', False), ('sentinel_samples', None)]
>>> policy_changes(p.parse_args([]))
{}
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reveal_lab.cli._ranges import int_in
from reveal_lab.cli._types import positive_int, sentinel_samples, share, z_clip

__all__ = [
    "CALIBRATIONS",
    "TRIM_CHOICES",
    "KNOBS",
    "POLICY_NAMES",
    "THRESHOLD_CHOICES",
    "Knob",
    "add_policy_arguments",
    "policy_changes",
    "policy_from_args",
]

#: ``--policy`` choices: the pipeline's ``POLICIES``, written here so that building the parser
#: imports no pipeline (a test checks the two agree)
POLICY_NAMES = ("default", "paper")
#: ``--thresholds`` choices: the pipeline's ``THRESHOLD_MODES`` (a test checks the two agree)
THRESHOLD_CHOICES = ("auto", "calibrated", "baseline", "robust", "self", "workload")
#: ``--prune-method`` and ``--zscore`` choices: the pipeline's ``PRUNE_METHODS`` and the Z-score's
#: forms (a test checks they agree)
PRUNE_METHOD_CHOICES = ("complete", "connected", "pairwise")
ZSCORE_CHOICES = ("robust", "standard")
#: ``--calibration`` choices: the pipeline's ``CALIBRATION_RULES`` (a test checks the two agree)
CALIBRATIONS = ("trimmed", "pooled", "median")
#: ``--trim`` choices: the pipeline's ``TRIM_RULES`` (a test checks the two agree)
TRIM_CHOICES = ("auto", "span", "active", "none")
#: the default policy's ``z_clip`` and ``sentinel_samples``, for the help texts (a test checks
#: them against ``DetectionPolicy``)
Z_CLIP_DEFAULT = 10.0
SENTINEL_DEFAULT = 5
TRIM_HELP = (
    "which part of each recording is scored: auto (default): a lab run's recorded workload span, a "
    "public-dataset run or a host recording (collector folder) whole; span: the recorded workload "
    "span (whole when there is none); active: the span where utilisation is high, less 3 s at each "
    "end (on a host with intermittent jobs it keeps the busiest and leaves the others out); none: "
    "the whole recording. The report's first lines say what was left out and why"
)
Z_CLIP_HELP = (
    "with calibrated thresholds, a standardized feature counts at most this many units in the "
    f"Z-score mean and the Mahalanobis projection (default {Z_CLIP_DEFAULT:g}; a counter silent in the "
    "baseline is not clipped); none: unbounded, as the paper"
)
OUTLIER_FENCE_HELP = (
    "cap each detector's threshold fitted as a quantile (self and baseline thresholds) at the outlier "
    "fence, median + 100 robust spreads of its fit scores, when at most 10 %% of the fit windows lie "
    "beyond it: a few extreme windows cannot lift the threshold above themselves (default: on; off in "
    "the paper policy, which flags each detector's top 1 %% of a run fitted on itself); "
    "--no-outlier-fence: the quantile itself"
)
SENTINEL_HELP = (
    "with baseline runs, a window is anomalous also when a counter that is 0 in every baseline sample "
    f"is non-zero in N or more of its samples (default {SENTINEL_DEFAULT}); a run alone: when a counter 0 "
    "in at least half of its samples moves in 90 %% of a window's samples, 4+ windows in a row; none: "
    "the detectors' agreement alone, as the paper (the counters are still listed in sentinels.csv)"
)


@dataclass(frozen=True)
class Knob:
    """One policy field on the command line: its flags and ``add_argument``'s keywords.
    ``also`` gives further field changes a value implies (``--sentinel-samples none``
    turns both forms of the sentinel rule off)."""

    field: str
    flags: tuple[str, ...]
    options: Mapping[str, Any]
    also: Callable[[Any], dict[str, Any]] | None = None
    extra: tuple[tuple[tuple[str, ...], Mapping[str, Any]], ...] = field(default=())


#: the policy's fields on the command line, in ``--help`` order
KNOBS: tuple[Knob, ...] = (
    Knob(
        "thresholds",
        ("--thresholds",),
        {
            "choices": THRESHOLD_CHOICES,
            "help": "auto (default): calibrated on 2+ --baseline runs (out-of-sample), in-sample on one, "
            "robust (median + k*MAD of the run's own scores) without; self: fit on the run, the top "
            "1%% per detector flagged; workload: the paper's, fit on the --baseline runs (the workload's "
            "other fault-free runs) with in-sample thresholds, on the run itself without",
        },
    ),
    Knob(
        "calibration",
        ("--calibration",),
        {
            "choices": CALIBRATIONS,
            "help": "calibrated thresholds from the left-out baseline runs' scores: trimmed (default) "
            "pooled less the most extreme run (with 4+ baseline runs); pooled: all; median: of each "
            "run's quantile",
        },
    ),
    Knob(
        "false_alarm_rate",
        ("--false-alarm-rate",),
        {
            "type": share,
            "metavar": "RATE",
            "help": "share of fault-free windows any detector may flag (calibrated and robust "
            "thresholds; default 0.01)",
        },
    ),
    Knob(
        "min_agreement",
        ("--min-agreement",),
        {
            "type": int_in(1, 4),
            "metavar": "N",
            "help": "detectors that must flag a window for it to count as anomalous (default: 2 with "
            "calibrated thresholds, where any one detector flags 8 %% of the lab's fault-free windows "
            "and two 1 %%; else 1)",
        },
    ),
    Knob(
        "min_run",
        ("--min-run",),
        {
            "type": positive_int,
            "metavar": "N",
            "help": "a detector's flag counts only inside N or more consecutive windows over its "
            "threshold; default: 4 for a run alone (robust thresholds), which drops what one sample's "
            "spike can flag with 3 s windows every 1 s, else 1 (every window over it)",
        },
    ),
    Knob("trim", ("--trim",), {"choices": TRIM_CHOICES, "help": TRIM_HELP}),
    Knob(
        "prune",
        ("--prune",),
        {
            "action": argparse.BooleanOptionalAction,
            "help": "--prune: fit the pruned space of paper §4.1 on a run alone too; --no-prune: score "
            "every metric (default: the pruned space fitted on the baseline runs; a run alone scores "
            "every metric)",
        },
        extra=(
            (
                ("--pruning",),
                {"metavar": "FILE", "help": "reuse a saved pruning.json as the metric space"},
            ),
        ),
    ),
    Knob(
        "prune_method",
        ("--prune-method",),
        {
            "choices": PRUNE_METHOD_CHOICES,
            "help": "how a pruned space fitted here is cut: complete (default: complete-linkage clusters); "
            "connected; pairwise (the paper's: one of each pair over |r| 0.5 kept, ties by the variance "
            "of the correlations)",
        },
    ),
    Knob(
        "quantile",
        ("--quantile",),
        {
            "type": share,
            "metavar": "Q",
            "help": "each detector's threshold fitted as a quantile (self and baseline thresholds) is this "
            "quantile of its fit scores (default 0.99: the paper's top 1 %%)",
        },
    ),
    Knob(
        "zscore",
        ("--zscore",),
        {
            "choices": ZSCORE_CHOICES,
            "help": "the Z-score's centre and scale: robust (default: median and MAD, a counter constant "
            "in the fit floored); standard (mean and standard deviation, as the paper)",
        },
    ),
    Knob("z_clip", ("--z-clip",), {"type": z_clip, "metavar": "UNITS|none", "help": Z_CLIP_HELP}),
    Knob(
        "outlier_fence",
        ("--outlier-fence",),
        {"action": argparse.BooleanOptionalAction, "help": OUTLIER_FENCE_HELP},
    ),
    Knob(
        "sentinel_samples",
        ("--sentinel-samples",),
        {"type": sentinel_samples, "metavar": "N|none", "help": SENTINEL_HELP},
        also=lambda v: {"lone_sentinel": False} if v is None else {},
    ),
    Knob(
        "fold_cores",
        ("--no-fold-cores",),
        {
            "action": "store_const",
            "const": False,
            "help": "a run alone: score per-core channels as they are (default: folded into host-level "
            "totals, maxima and spreads)",
        },
    ),
    Knob(
        "by_subsystem",
        ("--no-by-family",),
        {
            "action": "store_const",
            "const": False,
            "help": "a run alone: the Z-score as the mean over every feature, as the paper (default: by "
            "metric family, each against its own threshold)",
        },
    ),
    Knob(
        "skip_startup",
        ("--keep-startup",),
        {
            "action": "store_const",
            "const": False,
            "help": "score the collector's own start-up too (default: left out)",
        },
    ),
    Knob(
        "force_baseline",
        ("--force",),
        {
            "action": "store_const",
            "const": True,
            "help": "use a --baseline that shares fewer than half of a run's metrics, none of one of "
            "its subsystems, a metric in another unit, or never moves (refused otherwise); the "
            "report warns",
        },
    ),
)


def add_policy_arguments(
    p: argparse.ArgumentParser, fields: Iterable[str] | None = None, *, knobs: Iterable[Knob] = KNOBS
) -> None:
    """``--policy`` and the flags of ``fields`` (policy field names, default every row of
    ``knobs``); a flag not given leaves its attribute off ``args``."""
    knobs = tuple(knobs)
    by_field = {k.field: k for k in knobs}
    p.add_argument(
        "--policy",
        choices=POLICY_NAMES,
        default="default",
        help="the detection policy the other decision flags start from: default (reveal-lab's) or "
        "paper (the paper's method: fit on the run itself, the top 1%% per detector, any "
        "detector, no clip, no sentinel rule, no outlier fence)",
    )
    wanted = list(by_field) if fields is None else list(fields)
    for name in wanted:
        if name not in by_field:
            raise ValueError(f"no command-line flag for the policy field {name!r}; known: {sorted(by_field)}")
    for knob in knobs:
        if knob.field not in wanted:
            continue
        group = p.add_mutually_exclusive_group() if knob.extra else p  # one field, one flag given
        for flags, options in ((knob.flags, knob.options), *knob.extra):
            group.add_argument(*flags, dest=knob.field, default=argparse.SUPPRESS, **options)


def policy_changes(args: argparse.Namespace, knobs: Iterable[Knob] = KNOBS) -> dict[str, Any]:
    """The policy fields the command line sets (flags given only), with what they imply."""
    out: dict[str, Any] = {}
    for knob in knobs:
        if hasattr(args, knob.field):
            v = getattr(args, knob.field)
            out[knob.field] = v
            if knob.also is not None:
                out.update(knob.also(v))
    return out


def policy_from_args(args: argparse.Namespace):  # noqa: ANN201 - DetectionPolicy
    """The :class:`~reveal_lab.pipeline.DetectionPolicy` of ``args``, built once at the
    command's entry and handed down as it is: ``--policy`` with the fields its flags set."""
    from reveal_lab.pipeline import get_policy

    return get_policy(getattr(args, "policy", "default"), **policy_changes(args))
