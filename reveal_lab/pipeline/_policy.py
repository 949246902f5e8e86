"""The detection policy: every choice that decides which windows are anomalous, in one
frozen object.

A :class:`DetectionPolicy` holds the choices as asked, ``"auto"`` or ``None`` where the
choice depends on what the run comes with; :meth:`DetectionPolicy.resolve` turns them into
concrete values for a run with ``baseline_runs`` baseline runs and says why
(:class:`ResolvedPolicy`, printed in ``summary.json`` and the report). Two named policies
(:data:`POLICIES`): ``paper``, the paper's method (fitted per workload on its other fault-free
runs, the top 1 % per detector flagged, the standardized Z-score, any detector, no clip, no
sentinel rule, no outlier fence, no trimming, pairwise pruning), and
``default``, reveal-lab's defaults. Window, feature and detector hyper-parameters are not
decisions: they stay in :mod:`reveal_lab.config` presets.

>>> p = get_policy("default")
>>> r = p.resolve(baseline_runs=0, source="lab")
>>> r.thresholds, r.min_agreement, r.min_run, r.sentinel_rule
('robust', 1, 8, 'lone')
>>> print(r.reasons["min_run"])
auto: a run alone (robust thresholds) counts a flag only in an episode that lasts (8 windows in a row)
>>> get_policy("paper").resolve(baseline_runs=0, source="lab").thresholds
'self'
>>> get_policy("paper").resolve(baseline_runs=3, source="lab").thresholds
'baseline'
>>> get_policy("paper").outlier_fence, p.outlier_fence
(False, True)
>>> p.with_(min_run=0)
Traceback (most recent call last):
...
ValueError: DetectionPolicy.min_run must be a whole number >= 1 or None (auto), got 0
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from reveal_lab.config import Preset, get_preset
from reveal_lab.detectors import QUANTILE, ZSCORE_FORMS
from reveal_lab.pipeline._departures import paper_departures
from reveal_lab.pipeline._pruning import Pruning
from reveal_lab.pipeline._spikes import spike_windows
from reveal_lab.pipeline._trim import TRIM_RULES, resolve_trim, run_source

__all__ = [
    "DetectionPolicy",
    "ResolvedPolicy",
    "POLICIES",
    "get_policy",
    "AGREEING_DETECTORS",
    "ANY_DETECTOR",
    "THRESHOLD_MODES",
    "PRUNE_METHODS",
    "CALIBRATION_RULES",
    "TRIM_RULES",
    "SOURCES",
    "threshold_mode",
    "run_source",
    "past_a_spike",
    "default_min_run",
]

#: ``calibrated``: fitted on baseline runs, thresholds cross-fitted on them (out-of-sample);
#: ``baseline``: fitted on baseline runs, in-sample quantile thresholds;
#: ``robust``: fitted on the run itself, threshold ``median + k·1.4826·MAD`` of the run's own
#: scores (its calm majority), so no fixed share is flagged (for a run alone with
#: ``min_run=4``: :func:`~reveal_lab.pipeline.sustained`, :func:`~reveal_lab.pipeline.spike_windows`);
#: ``self``: fitted on the run itself, the top share flagged;
#: ``auto``: calibrated with 2+ baseline runs, baseline with one, robust with none;
#: ``workload``: the paper's (§4.3, per workload): baseline with any baseline runs (the other
#: fault-free runs of the workload pooled), self for a workload with no other fault-free run.
THRESHOLD_MODES = ("auto", "calibrated", "baseline", "robust", "self", "workload")
#: how the pruned space a policy fits is cut (:data:`reveal_lab.pruning.CLUSTER_METHODS`):
#: ``complete`` (complete-linkage clusters, the representative by priority then the metric's
#: own variance), ``connected``, ``pairwise`` (the paper's §4.1: one metric of each pair over
#: the threshold kept, ties broken by the variance of its correlations)
PRUNE_METHODS = ("complete", "connected", "pairwise")
#: how calibrated thresholds combine the left-out baseline runs: ``trimmed`` (pooled, less
#: the most extreme run), ``pooled`` or ``median`` (of each run's quantile)
CALIBRATION_RULES = ("trimmed", "pooled", "median")
#: where a run comes from, as :meth:`DetectionPolicy.resolve` reads it: a lab run (with a
#: recorded workload span), a public-dataset run, a host recording (collector folder)
SOURCES = ("lab", "public", "host")


#: ``min_agreement`` left ``auto``: with calibrated thresholds two detectors must agree (one
#: detector's false alarms are kept out); with the other threshold modes any one detector
AGREEING_DETECTORS, ANY_DETECTOR = 2, 1


def threshold_mode(thresholds: str, n_baseline: int) -> str:
    """The threshold mode ``thresholds`` (one of :data:`THRESHOLD_MODES`) means with
    ``n_baseline`` baseline runs: ``auto`` is calibrated with 2+, baseline with one, robust
    with none; any other mode is itself.

    >>> threshold_mode("auto", 2), threshold_mode("auto", 1), threshold_mode("auto", 0)
    ('calibrated', 'baseline', 'robust')
    >>> threshold_mode("self", 3), threshold_mode("workload", 3), threshold_mode("workload", 0)
    ('self', 'baseline', 'self')
    """
    if thresholds == "workload":
        return "baseline" if n_baseline else "self"
    if thresholds != "auto":
        return thresholds
    return "calibrated" if n_baseline >= 2 else "baseline" if n_baseline == 1 else "robust"


def past_a_spike(preset: Preset) -> int:
    """The ``min_run`` that no single sample's spike can reach: one more than the windows one
    sample lies in (:func:`~reveal_lab.pipeline.spike_windows`; 4 with the paper's 3 s windows
    and 1 s stride).

    >>> past_a_spike(get_preset("paper"))
    4
    """
    return spike_windows(preset.window.window_s, preset.window.stride_s) + 1


#: a run alone: a detector's flag counts inside this many times :func:`past_a_spike` windows
#: in a row (an episode must last)
LONE_EPISODE_SPIKES = 2


def default_min_run(mode: str, preset: Preset) -> int:
    """The ``min_run`` that ``min_run=None`` means under threshold mode ``mode``:
    :data:`LONE_EPISODE_SPIKES` × :func:`past_a_spike` for ``robust`` (a run alone, no
    baseline), 1 for every other mode.

    A run alone has no reference for what its own bursts look like: one sample's spike lies
    in several windows in a row, and a host's own housekeeping (a burst of page faults, the
    page cache written back) lasts a few seconds. Counting only deviations that last twice
    what a spike can flag (8 windows, about 10 s of windows at 3 s / 1 s) keeps the faults
    that slow a job and drops those bursts: on the host recordings (``data/host``, where it
    was chosen) fault-free windows flagged fall from 6.6 % at 4 windows to 1.0 % at 8, one of
    30 jobs (an 11 s read) lost (``benchmarks/host_recordings.py``, docs/RESULTS.md).
    With baseline runs (calibrated or in-sample thresholds) and in the paper's ``self``
    setting every window over a threshold counts.

    >>> default_min_run("robust", get_preset("paper")), default_min_run("calibrated", get_preset("paper"))
    (8, 1)
    """
    return LONE_EPISODE_SPIKES * past_a_spike(preset) if mode == "robust" else 1


def _threshold_reason(asked: str, mode: str, n: int) -> str:
    """Why ``asked`` thresholds (``auto`` or ``workload``) resolved to ``mode`` with ``n``
    baseline runs."""
    if asked == "workload":
        if n:
            return f"workload: fitted on the {n} other fault-free runs of the workload pooled, the top share flagged"
        return "workload: no other fault-free run of the workload, fitted on the run itself"
    return f"auto: {n} baseline runs" + {
        "calibrated": " (2+: thresholds cross-fitted on them, out-of-sample)",
        "baseline": " (one: fitted on it, in-sample thresholds)",
        "robust": " (a run alone: median + k·MAD of its own scores)",
    }[mode]


def _whole(value: object, name: str, *, none_ok: bool) -> None:
    if value is None and none_ok:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        tail = " or None (auto)" if none_ok else ""
        raise ValueError(f"DetectionPolicy.{name} must be a whole number >= 1{tail}, got {value!r}")


def _detector_count(preset: Preset) -> int:
    """How many detectors ``preset`` asks (:func:`~reveal_lab.detectors.default_detectors`)."""
    from reveal_lab.detectors import default_detectors

    return len(default_detectors(preset.detect))


def _choice(value: object, name: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"DetectionPolicy.{name} must be one of {choices}, got {value!r}")


@dataclass(frozen=True)
class DetectionPolicy:
    """Which windows of a run are anomalous: every decision, as asked (``"auto"``/``None``
    where it depends on the baseline runs; :meth:`resolve` makes it concrete).

    Attributes
    ----------
    name : a label printed with the resolved policy (``"paper"``, ``"default"`` or the
        caller's).
    thresholds : one of :data:`THRESHOLD_MODES`; ``auto``: calibrated with 2+ baseline runs,
        baseline with one, robust with none.
    calibration : how calibrated thresholds combine the left-out baseline runs
        (:data:`CALIBRATION_RULES`): ``trimmed`` pools them less the most extreme one (with
        4+), ``pooled`` keeps all, ``median`` takes the median of each run's quantile.
    false_alarm_rate : the share of fault-free windows any detector may flag (union bound:
        each of ``n`` detectors gets ``rate / n``): the calibrated thresholds' target and the
        ``k`` of robust thresholds; unused by ``baseline`` and ``self``.
    min_agreement : detectors that must flag a window for it to count; ``None``: 2 with
        calibrated thresholds (two agreeing detectors keep one detector's false alarms out),
        else 1.
    min_run : a detector's flag counts only inside this many consecutive windows over its
        threshold; ``None``: :func:`default_min_run` (4 for a run alone, else 1).
    trim : one of :data:`TRIM_RULES`: which span of the run (and of the baseline runs) is
        scored.
    prune : the pruned metric space (paper §4.1): ``True`` fits it on the baseline runs (or
        the run itself), a path (or a :class:`~reveal_lab.pipeline.Pruning`) reuses a saved
        one, ``False`` scores every metric; ``None``: :meth:`pruned_space` (fitted, but not on
        a run alone: a space fitted on the run itself merges what its faults move together
        and keeps one of them, so the GPU's memory and power left the space of the GPU host's
        co-tenant run).
    z_clip : with calibrated thresholds, a standardized feature counts at most this many
        units in the Z-score mean and the Mahalanobis projection (a counter constant in the
        baseline excepted); ``None``: unbounded, as the paper. Other threshold modes are never
        clipped. In a fault-free run left out of the calibration, the within-window variance
        of the page cache reaches |z| of 10⁴-10⁸, and unclipped thresholds sit above every
        fault.
    sentinel_samples : with baseline runs, a window is anomalous also when a counter 0 in
        every baseline sample is non-zero in this many of its samples (the sentinel rule,
        :func:`~reveal_lab.pipeline.sentinel_windows`; 5 = 0.5 s of a 3 s window at 100 ms);
        ``None``: off, the detectors' agreement alone (the paper's rule). On the lab
        recording, where it was chosen (``scripts/studies/sentinel_counters.py``): 3 fires 18 of
        3,953 fault-free windows, 5 to 10 none; 5 finds all 9 packet-loss episodes, 8 finds 6.
    lone_sentinel : a run alone (robust thresholds): a window is anomalous also when a
        counter 0 in at least half of the run's samples moves in 90 % of the window's samples,
        :func:`past_a_spike` windows in a row (per-CPU interrupt counters excepted; the window
        is named after the rarest counter that fires, and takes its subsystem).
    quantile : each detector's threshold fitted as a quantile (``self``, ``baseline``) is this
        quantile of its fit scores: 0.99, the paper's top 1 % (§4.3); the detectors' shared
        ``quantile`` (:class:`~reveal_lab.detectors.BaseDetector`).
    zscore : the Z-score's form (:attr:`~reveal_lab.detectors.ZScoreDetector.FORMS`):
        ``robust`` (median and MAD, a constant feature floored) or ``standard`` (mean and
        standard deviation of the fit windows, the paper's "three-sigma" Z-score).
    prune_method : how a pruned space fitted under this policy is cut (:data:`PRUNE_METHODS`;
        ``pairwise`` is the paper's). A space given (a path, a :class:`Pruning`) keeps its own.
    outlier_fence : each detector's threshold fitted as a quantile (``self`` and ``baseline``
        thresholds) is capped at median + 100·1.4826·MAD of the fit scores when at most 10 %
        of the fit windows lie beyond that fence (:func:`~reveal_lab.detectors._base.outlier_fence`):
        a few extreme windows (one sample's 1e25 spike lies in three windows) cannot lift the
        threshold above themselves and hide. ``False``: the quantile itself, as the paper, so a
        fit on the run flags its top share per detector. ``calibrated`` and ``robust``
        thresholds replace the fitted quantile, so the fence does not set them.
    force_baseline : use a baseline that shares few of the run's metrics or never moves
        (refused otherwise).
    fold_cores : per-core families (per-core CPU times, softirqs and interrupts per CPU,
        per-core perf counts) scored as host-level metrics: their total, busiest core and
        spread across cores (:func:`~reveal_lab.derive.fold_cores`), so what can fire does not
        grow with the cores; ``None``: on for a run alone (robust thresholds), off otherwise.
    by_subsystem : the Z-score of a window is the largest of its subsystems' mean ``|z|``
        (each feature's ``|z|`` clipped at ``z_clip``) instead of the mean over every feature,
        so a fault in a subsystem with few metrics (a GPU's 10 against hundreds of network
        counters) is not averaged away; ``None``: on for a run alone, off otherwise.
    skip_startup : a recording that begins with the collector's own start-up is scored from
        its end (:func:`~reveal_lab.pipeline.collector_startup`, found from the collector's own
        channels; a recording without them, or whose scored span starts later, is not cut):
        the instrument starting is not the host.
    """

    name: str = "default"
    thresholds: str = "auto"
    calibration: str = "trimmed"
    false_alarm_rate: float = 0.01
    min_agreement: int | None = None
    min_run: int | None = None
    trim: str = "auto"
    prune: bool | str | os.PathLike | Pruning | None = None
    z_clip: float | None = 10.0
    sentinel_samples: int | None = 5
    lone_sentinel: bool = True
    outlier_fence: bool = True
    quantile: float = QUANTILE
    zscore: str = "robust"
    prune_method: str = "complete"
    force_baseline: bool = False
    fold_cores: bool | None = None
    by_subsystem: bool | None = None
    skip_startup: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"DetectionPolicy.name must be a non-empty string, got {self.name!r}")
        _choice(self.thresholds, "thresholds", THRESHOLD_MODES)
        _choice(self.calibration, "calibration", CALIBRATION_RULES)
        _choice(self.trim, "trim", TRIM_RULES)
        _choice(self.zscore, "zscore", ZSCORE_FORMS)
        _choice(self.prune_method, "prune_method", PRUNE_METHODS)
        q = self.quantile
        if isinstance(q, bool) or not isinstance(q, int | float) or not 0.5 <= q < 1.0:
            raise ValueError(f"DetectionPolicy.quantile must be in [0.5, 1), got {q!r}")
        rate = self.false_alarm_rate
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 < rate < 1.0:
            raise ValueError(f"DetectionPolicy.false_alarm_rate must be in (0, 1), got {rate!r}")
        _whole(self.min_agreement, "min_agreement", none_ok=True)
        _whole(self.min_run, "min_run", none_ok=True)
        _whole(self.sentinel_samples, "sentinel_samples", none_ok=True)
        clip = self.z_clip
        if clip is not None and (isinstance(clip, bool) or not isinstance(clip, int | float) or not clip > 0):
            raise ValueError(f"DetectionPolicy.z_clip must be a number > 0 or None (unbounded), got {clip!r}")
        if self.prune is not None and not isinstance(self.prune, bool | str | os.PathLike | Pruning):
            raise ValueError(
                "DetectionPolicy.prune must be True (fit), False (every metric), the path of a "
                f"pruning.json or a Pruning, got {self.prune!r}"
            )
        for flag in ("lone_sentinel", "outlier_fence", "force_baseline", "skip_startup"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"DetectionPolicy.{flag} must be True or False, got {getattr(self, flag)!r}")
        for flag in ("fold_cores", "by_subsystem"):
            if getattr(self, flag) is not None and not isinstance(getattr(self, flag), bool):
                raise ValueError(
                    f"DetectionPolicy.{flag} must be True, False or None (auto), got {getattr(self, flag)!r}"
                )

    # the one constructor of a changed policy: its fields by name, validated into the one object
    def with_(self, **changes: Any) -> DetectionPolicy:
        """A copy with ``changes`` (field names), validated as a new policy.

        >>> get_policy("default").with_(min_agreement=3).min_agreement
        3
        >>> get_policy("default").with_(agreement=3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: DetectionPolicy has no field 'agreement'; fields: name, thresholds, ...
        """
        names = [f.name for f in dataclasses.fields(self)]
        for k in changes:
            if k not in names:
                raise ValueError(f"DetectionPolicy has no field {k!r}; fields: {', '.join(names)}")
        return dataclasses.replace(self, **changes)

    def pruned_space(self, baseline_runs: int) -> bool | str | os.PathLike | Pruning:
        """What ``prune`` means with ``baseline_runs`` baseline runs: as given, or for ``None``
        fitted (``True``) except for a run alone under robust thresholds (``False``: every
        metric).

        >>> get_policy("default").pruned_space(0), get_policy("default").pruned_space(2)
        (False, True)
        >>> get_policy("paper").pruned_space(0)
        True
        """
        if self.prune is not None:
            return self.prune
        return threshold_mode(self.thresholds, baseline_runs) != "robust"

    def _alone_rules(self, mode: str, why: dict[str, str]) -> tuple[bool, bool]:
        """``(fold_cores, by_subsystem)`` under threshold mode ``mode`` (``None``: on for a run
        alone, robust thresholds), with their reasons added to ``why``."""
        reasons = {  # field: (why when on, why when off)
            "fold_cores": (
                "auto: a run alone scores per-core families as host-level totals, maxima and spreads",
                f"auto: per-core channels scored as they are with {mode} thresholds",
            ),
            "by_subsystem": (
                "auto: a run alone takes the Z-score of its most deviant metric family",
                f"auto: the Z-score is the mean over every feature with {mode} thresholds",
            ),
        }
        out = []
        for name, (on, off) in reasons.items():
            value = getattr(self, name)
            if value is None:
                value = mode == "robust"
                why[name] = on if value else off
            out.append(bool(value))
        return out[0], out[1]

    def _quantile_in_force(self, mode: str, why: dict[str, str]) -> float | None:
        """``quantile`` where thresholds are fitted quantiles (``self``, ``baseline``), else
        ``None`` with its reason added to ``why``."""
        if mode in ("self", "baseline"):
            return self.quantile
        why["quantile"] = f"{mode} thresholds replace the fitted quantile"
        return None

    def for_shares(self) -> DetectionPolicy:
        """This policy with an ``auto`` ``min_agreement`` made :data:`ANY_DETECTOR`: for a
        share of windows compared on two sides alike (``compare``), where a fault one detector
        sees must still move the share. An explicit ``min_agreement`` is kept.

        >>> get_policy("default").for_shares().min_agreement, get_policy("default", min_agreement=3).for_shares().min_agreement
        (1, 3)
        """
        return self if self.min_agreement is not None else self.with_(min_agreement=ANY_DETECTOR)

    def agreeing(self) -> DetectionPolicy:
        """This policy with an ``auto`` ``min_agreement`` made :data:`AGREEING_DETECTORS` in
        every threshold mode, not only the calibrated one: for studies that compare modes
        under one rule (the lemon-host study). An explicit ``min_agreement`` is kept.

        >>> get_policy("default").agreeing().min_agreement
        2
        """
        return self if self.min_agreement is not None else self.with_(min_agreement=AGREEING_DETECTORS)

    def resolve(self, *, baseline_runs: int, source: str = "lab", preset: Preset | None = None) -> ResolvedPolicy:
        """The concrete decision for a run with ``baseline_runs`` baseline runs from ``source``
        (one of :data:`SOURCES`), windows and detectors of ``preset`` (default ``paper``), with
        the reason for each value that ``"auto"``/``None`` left open.

        Raises
        ------
        ValueError
            when the thresholds asked need baseline runs that are not there, or
            ``min_agreement`` exceeds the detectors of the preset.
        """
        if isinstance(baseline_runs, bool) or not isinstance(baseline_runs, int) or baseline_runs < 0:
            raise ValueError(f"baseline_runs must be a whole number >= 0, got {baseline_runs!r}")
        _choice(source, "resolve(source=...)", SOURCES)
        preset = preset or get_preset("paper")
        n = baseline_runs
        why: dict[str, str] = {}
        mode = threshold_mode(self.thresholds, n)
        if self.thresholds in ("auto", "workload"):
            why["thresholds"] = _threshold_reason(self.thresholds, mode, n)
        if mode in ("calibrated", "baseline") and not n:
            raise ValueError(f"DetectionPolicy.thresholds={mode!r} needs baseline runs")
        if mode == "calibrated" and n < 2:
            raise ValueError(
                "DetectionPolicy.thresholds='calibrated' needs at least 2 baseline runs "
                "(leave-one-run-out thresholds)"
            )
        fit_on = "baseline" if mode in ("calibrated", "baseline") else "run"
        if n and fit_on == "run":
            why["fit_on"] = f"{mode} thresholds fit on the run itself: the {n} baseline runs are not used"
        n_det = _detector_count(preset)
        agree = self.min_agreement
        if agree is None:
            agree = AGREEING_DETECTORS if mode == "calibrated" else ANY_DETECTOR
            why["min_agreement"] = (
                "auto: 2 with calibrated thresholds (two agreeing detectors keep one detector's "
                "false alarms out)"
                if mode == "calibrated"
                else f"auto: 1 with {mode} thresholds (any detector)"
            )
        if agree > n_det:
            raise ValueError(f"DetectionPolicy.min_agreement must be in 1..{n_det}, got {agree}")
        run = self.min_run
        if run is None:
            run = default_min_run(mode, preset)
            why["min_run"] = (
                f"auto: a run alone (robust thresholds) counts a flag only in an episode that lasts "
                f"({run} windows in a row)"
                if mode == "robust"
                else f"auto: every window over a threshold counts with {mode} thresholds"
            )
        rate = self.false_alarm_rate if mode in ("calibrated", "robust") else None
        if rate is None:
            why["false_alarm_rate"] = f"unused by {mode} thresholds"
        trim, trim_why = resolve_trim(self.trim, source)
        if self.trim == "auto":
            why["trim"] = f"auto: {trim_why}"
        prune = self.pruned_space(n)
        if self.prune is None:
            why["prune"] = (
                "auto: a run alone scores every metric (a space fitted on the run itself drops what "
                "its faults move together)"
                if prune is False
                else f"auto: the pruned space, fitted on the {'baseline runs' if n else 'run itself'}"
            )
        fold, by_sub = self._alone_rules(mode, why)
        clip = self.z_clip if mode == "calibrated" or (mode == "robust" and by_sub) else None
        if self.z_clip is not None and clip is None:
            why["z_clip"] = f"clips calibrated thresholds and a run alone by subsystem only, not {mode}"
        if self.outlier_fence and mode in ("calibrated", "robust"):
            why["outlier_fence"] = f"caps quantile thresholds (self, baseline) only, not {mode}"
        fire = fit_on == "baseline" and self.sentinel_samples is not None
        lone = mode == "robust" and self.lone_sentinel
        rule = "baseline" if fire else "lone" if lone else None
        if rule == "lone":
            why["sentinel_rule"] = "a run alone: its own quiet counters (lone_sentinel)"
        elif rule is None and (self.sentinel_samples is not None or self.lone_sentinel):
            why["sentinel_rule"] = f"off: no form of the sentinel rule applies to {mode} thresholds"
        return self._with_departures(ResolvedPolicy(
            name=self.name,
            baseline_runs=n,
            source=source,
            thresholds=mode,
            fit_on=fit_on,
            calibration=self.calibration if mode == "calibrated" else None,
            false_alarm_rate=rate,
            min_agreement=int(agree),
            min_run=int(run),
            trim=trim,
            prune=prune,
            z_clip=clip,
            sentinel_samples=self.sentinel_samples if fire else None,
            sentinel_rule=rule,
            sentinel_min_run=past_a_spike(preset) if lone else None,
            outlier_fence=self.outlier_fence,
            force_baseline=self.force_baseline,
            fold_cores=bool(fold),
            by_subsystem=bool(by_sub),
            skip_startup=self.skip_startup,
            quantile=self._quantile_in_force(mode, why),
            zscore=self.zscore,
            prune_method=self.prune_method,
            reasons=why,
        ))

    def _with_departures(self, resolved: ResolvedPolicy) -> ResolvedPolicy:
        """``resolved`` with its departures from the paper's method when this is the ``paper``
        policy (:func:`~reveal_lab.pipeline._departures.paper_departures`)."""
        if self.name != "paper":
            return resolved
        return dataclasses.replace(resolved, departures=paper_departures(resolved, asked=self))


@dataclass(frozen=True)
class ResolvedPolicy:
    """A :class:`DetectionPolicy` made concrete for one run (:meth:`DetectionPolicy.resolve`):
    every value in force, ``None`` where a rule is off or does not apply, and ``reasons``
    (field → why) for every value that was ``"auto"``/``None`` or is not used."""

    name: str
    baseline_runs: int
    source: str
    thresholds: str
    fit_on: str
    calibration: str | None
    false_alarm_rate: float | None
    min_agreement: int
    min_run: int
    trim: str
    prune: Any
    z_clip: float | None
    sentinel_samples: int | None
    sentinel_rule: str | None
    sentinel_min_run: int | None
    outlier_fence: bool
    force_baseline: bool
    fold_cores: bool = False
    by_subsystem: bool = False
    skip_startup: bool = False
    quantile: float | None = QUANTILE
    zscore: str = "robust"
    prune_method: str = "complete"
    reasons: dict[str, str] = field(default_factory=dict)
    #: where this decision departs from the paper's method as written (the ``paper`` policy
    #: only): one entry per departure, with the paper's sentence (``quote``, ``section``), what
    #: is done here (``here``) and why the paper's cannot be followed (``why``)
    departures: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``prune`` as ``"fit"``, ``"off"``, ``"given"`` or the path."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        p = self.prune
        out["prune"] = (
            "fit" if p is True else "off" if p is False else "given" if isinstance(p, Pruning) else os.fspath(p)
        )
        out["reasons"] = dict(self.reasons)
        out["departures"] = [dict(d) for d in self.departures]
        return out


#: the named policies: ``paper`` is the paper's method as written (docs/METHOD.md): each run
#: scored by detectors fitted on the other fault-free runs of its workload pooled (``workload``
#: thresholds), each detector's threshold the 0.99 quantile of its fit scores (no outlier
#: fence), the standardized Z-score, any detector (windows ranked by the agreement score), no
#: clip, no sentinel rule, no trimming and no start-up cut, the pruned space cut pairwise;
#: what it still cannot follow is in each resolved policy's ``departures``. ``default`` is
#: reveal-lab's (the fields' defaults), with the outlier fence on: a few extreme windows
#: cannot lift a threshold above themselves
POLICIES: dict[str, DetectionPolicy] = {
    "paper": DetectionPolicy(
        name="paper",
        thresholds="workload",
        min_agreement=1,
        min_run=1,
        z_clip=None,
        sentinel_samples=None,
        lone_sentinel=False,
        outlier_fence=False,
        zscore="standard",
        prune_method="pairwise",
        trim="none",
        skip_startup=False,
        prune=True,
        fold_cores=False,
        by_subsystem=False,
    ),
    "default": DetectionPolicy(),
}


# builds the one object (a named policy with fields changed, as with_); never forwarded further
def get_policy(name: str, **changes: Any) -> DetectionPolicy:
    """A named policy of :data:`POLICIES`, with ``changes`` applied (:meth:`DetectionPolicy.with_`).

    >>> get_policy("paper", min_agreement=2).min_agreement
    2
    >>> get_policy("ours")
    Traceback (most recent call last):
    ...
    ValueError: unknown detection policy 'ours'; expected one of ['default', 'paper']
    """
    try:
        p = POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown detection policy {name!r}; expected one of {sorted(POLICIES)}") from None
    return p.with_(**changes) if changes else p
