"""Incremental windowing, features and scoring of a telemetry stream.

:class:`LiveDetector` is fed canonical rows (``timestamp`` + Float64 metric columns,
the dataset view) in whatever chunks they arrive. It applies the pipeline's
detection view (:func:`reveal_lab.pipeline.detection_view`: derived metrics) to the
new rows, keeps only the rows the next windows need, and each time a window
completes (its last sample has arrived) it computes that one window's features
(the compiled kernel of :mod:`reveal_lab.features` on the window's rows only, with
the feature plan made once), scores them with the paper's three detectors fitted
on a warm-up period or a baseline run, and attributes an anomaly with
:func:`reveal_lab.attribution.attribute`, the function the offline pipeline uses.

Windows are the offline ones: anchored at the first sample, ``window_s`` long, every
``stride_s`` (:class:`reveal_lab.config.WindowConfig`); a window with fewer than
``min_fill`` of its expected samples is a gap, not scored (as ``make_windows``).

The metric space is the paper's pruned one by default (§4.1, as ``detect_run``):
:func:`reveal_lab.pipeline.fit_pruning` fitted on the baseline runs, or on the
warm-up stretch of the stream itself when there is no baseline, or a saved
``pruning.json`` / :class:`reveal_lab.pipeline.Pruning` as the policy's ``prune``;
``prune=False`` scores every metric.

With a baseline, the sentinel rule of ``detect_run`` holds here too: a window where a
counter that is 0 in every baseline sample is non-zero in the policy's ``sentinel_samples`` of its
samples is anomalous (:func:`reveal_lab.pipeline.sentinel_windows`), attributed to that
counter; the stream keeps those counters beside the pruned space for it.

Without a baseline the stream is a run alone, scored by ``detect_run``'s rules for one
(docs/METHOD.md, "A run alone"), each in its causal form: per-core families folded; every
column but static, unscored and all-missing ones (a column constant over the warm-up is kept:
``detect_run`` judges constancy over the whole run, where a disk read or a network send that
comes later moves it); the detectors set as ``score_host`` sets them (the policy's clip, the
Z-score by family) with a run alone's robust thresholds (the Z-score's per family, the others
``median + k·MAD`` of their scores of the windows fitted on), refitted on the stream so far; a
flag counted from its ``min_run``-th window in a row; the attribution by the Z-score's own
contributions; and the sentinel rule's form for a run alone (:class:`_LoneSentinel`), whose
counter names the window's subsystem.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl

from reveal_lab.attribution import attribute
from reveal_lab.config import DetectConfig, WindowConfig
from reveal_lab.derive import CONSTANT_REASON, DerivedPlan, plan_derived
from reveal_lab.derive import detection_view as single_host_view
from reveal_lab.detectors import DetectorEnsemble, FittedDetectors, default_detectors
from reveal_lab.features import WindowPlan, pair_keys, window_features, window_plan
from reveal_lab.pipeline import (
    POLICIES,
    DetectionPolicy,
    Pruning,
    check_metric_overlap,
    confirmed_result,
    detection_view,
    fit_pruning,
    host_memory_kb,
    load_pruning,
    moved_samples,
    per_interval_counts,
    select_metrics,
    sentinel_evidence,
    silent_columns,
    silent_counters,
    silent_indices,
)
from reveal_lab.telemetry import (
    TIMESTAMP,
    Run,
    RunMeta,
    TelemetryError,
    metric_columns,
    parse_metric_name,
)

__all__ = ["Verdict", "LiveDetector", "make_detectors", "pair_keys", "HISTORY_WINDOWS", "REFIT_MAX_WINDOWS"]

#: a stream alone is refitted on at most its last this many windows (an hour at 1 s)
HISTORY_WINDOWS = 3600
#: ... at least every this many windows once its history is long
REFIT_MAX_WINDOWS = 300

log = logging.getLogger(__name__)

#: the fields of an evidence row a verdict keeps (:func:`reveal_lab.attribution.attribute`'s)
EVIDENCE_FIELDS = ("subsystem", "metric", "feature", "score", "claim", "evidence_of", "rank", "value", "baseline", "z")


@dataclass
class Verdict:
    """The verdict on one completed window.

    ``evidence`` holds, for an anomalous window, the rows
    :func:`reveal_lab.attribution.attribute` gives (``subsystem, metric, feature,
    score, claim, evidence_of, rank, value, baseline, z``), best first.
    """

    window_id: int
    start: dt.datetime
    end: dt.datetime
    host: str | None
    phase: str  # "warmup" (collected to fit on), "scored", or "gap" (too few samples)
    anomalous: bool = False
    methods: list[str] = field(default_factory=list)
    agreement: int = 0
    score: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)
    subsystems: str | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    n_samples: int = 0
    compute_ms: float = 0.0
    #: wall-clock time (epoch seconds) the verdict was made
    decided_at: float = 0.0
    #: the silent counter that fired the sentinel rule in this window (with a baseline; a run
    #: alone: its own quiet counter)
    sentinel: str | None = None
    #: an anomalous window's subsystems and their shares of its attribution (as ``detect``'s
    #: ``share_*`` columns; the sentinel rule's subsystem 1)
    shares: dict[str, float] = field(default_factory=dict)

    @property
    def subsystem(self) -> str | None:
        return self.evidence[0]["subsystem"] if self.evidence else None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["start"] = self.start.isoformat(timespec="milliseconds")
        d["end"] = self.end.isoformat(timespec="milliseconds")
        top = self.evidence[0] if self.evidence else {}
        for k in ("subsystem", "metric", "feature", "claim"):
            d[k] = top.get(k)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=float)

    def line(self) -> str:
        """One human line (what ``reveal-lab watch`` prints)."""
        t = self.end.strftime("%H:%M:%S.%f")[:-3]
        if self.phase == "warmup":
            return (
                f"{t} window {self.window_id}: warm-up ({self.n_samples} samples, {self.compute_ms:.1f} ms)"
            )
        if self.phase == "gap":
            return f"{t} window {self.window_id}: gap, not scored ({self.n_samples} samples)"
        if not self.anomalous:
            return (
                f"{t} window {self.window_id}: ok (agreement {self.agreement}, score {self.score:.2f}, "
                f"{self.compute_ms:.1f} ms)"
            )
        ev = self.evidence[0] if self.evidence else {}
        return (
            f"{t} window {self.window_id}: ANOMALY [{'+'.join(self.methods)}] {self.subsystems or ''} | "
            f"{ev.get('metric')} {ev.get('feature')}: {ev.get('claim')} "
            f"(score {self.score:.2f}, {self.compute_ms:.1f} ms)"
        )


def make_detectors(cfg: DetectConfig, outlier_fence: bool | None = None) -> list[Any]:
    """The three detectors of the paper with ``cfg``'s settings (fresh, unfitted);
    ``outlier_fence``: their thresholds capped at the outlier fence (a policy's
    ``outlier_fence``; ``None``: the ``default`` policy's)."""
    if outlier_fence is None:
        outlier_fence = POLICIES["default"].outlier_fence
    return default_detectors(cfg, outlier_fence=outlier_fence)


class LiveDetector:
    """Windows, features and verdicts, one window at a time.

    Parameters
    ----------
    window : window length / stride / sampling interval.
    detect : detector settings.
    warmup_s : without a baseline, the first ``warmup_s`` seconds of the stream
        are the reference the detectors are fitted on (those windows get
        ``phase="warmup"`` verdicts).
    warmup_wait_s : when the first ``warmup_s`` seconds hold fewer than
        :attr:`min_warmup_windows` complete windows (a collector that starts late or misses
        ticks on a busy machine leaves gap windows), the warm-up goes on for up to this many
        more seconds of stream until they are there; then it fits on what it has (at least
        3 windows, else :class:`~reveal_lab.telemetry.TelemetryError`).
    baseline : reference run(s) to fit on instead (metrics are matched by their
        host-free key and feature, so another host's run works).
    policy : which windows are anomalous (:class:`~reveal_lab.pipeline.DetectionPolicy`,
        default ``POLICIES["default"]``), resolved as thresholds fitted on a reference
        (``baseline``): ``min_agreement`` detectors must flag a window, ``sentinel_samples``
        is the sentinel rule's with a baseline, ``prune`` the metric space, ``outlier_fence``
        whether the fitted thresholds are capped at the outlier fence.
    derive : apply the pipeline's derived metrics (``detection_view``).
    fast_forest : score and explain the Isolation Forest with the flattened forest.
    keep_features : keep every window's feature vector in :attr:`history` (tests,
        debugging; memory grows with the stream).
    The policy's ``prune`` (paper §4.1): ``True`` prunes correlated metrics, fitted on the
    baseline runs or, without one, on the warm-up stretch; a
    :class:`reveal_lab.pipeline.Pruning` or the path of a saved ``pruning.json`` reuses one;
    ``False`` scores every metric. :attr:`pruning` holds what was used.
    prune_threshold : the correlation threshold when pruning is fitted here (paper: 0.5).
    """

    def __init__(
        self,
        window: WindowConfig | None = None,
        detect: DetectConfig | None = None,
        *,
        warmup_s: float = 30.0,
        warmup_wait_s: float = 0.0,
        baseline: Run | Sequence[Run] | None = None,
        policy: DetectionPolicy | None = None,
        derive: bool = True,
        fast_forest: bool = True,
        keep_features: bool = False,
        prune_threshold: float = 0.5,
    ) -> None:
        self.window = window or WindowConfig()
        self.detect = detect or DetectConfig()
        self.warmup_s = float(warmup_s)
        if not warmup_wait_s >= 0:
            raise ValueError(f"warmup_wait_s must be >= 0, got {warmup_wait_s}")
        self.warmup_wait_s = float(warmup_wait_s)
        #: the decision: thresholds fitted on a reference (the baseline or the warm-up)
        self.policy = policy or POLICIES["default"]
        resolved = self.policy.with_(thresholds="baseline").resolve(baseline_runs=1, source="host")
        #: fitted on the warm-up (no baseline), the stream is a run alone: detect_run's rules for
        #: one (per-core families folded, the Z-score by family against its per-family
        #: threshold, a flag counted from its ``min_run``-th window in a row on)
        self.alone = self.policy.with_(thresholds="robust").resolve(baseline_runs=0, source="host")
        self._alone_rules = baseline is None
        self._run_len: dict[str, int] = {}
        #: a run alone: every window's aligned features so far, the reference it is refitted on
        #: (the stream's calm majority, as ``detect_run`` fits a run alone on the whole run)
        self._history: list[np.ndarray] = []
        self._fitted_on_n = 0
        self.min_agreement = resolved.min_agreement
        self.sentinel_samples = resolved.sentinel_samples
        prune = self.policy.pruned_space(0 if baseline is None else 1)
        self.derive = derive
        self.fast_forest = fast_forest
        self.keep_features = keep_features
        #: ``(window_id, feature vector, pairs)`` of every window when ``keep_features``
        self.history: list[tuple[int, np.ndarray, pl.DataFrame]] = []
        self._buf_t = np.empty(0, dtype=np.int64)  # timestamps (epoch ms) of the buffered rows
        self._buf_v = np.empty((0, 0))  # their values, in the feature plan's metric order
        self._tail: pl.DataFrame | None = None  # last rows before derive, for its look-back
        self._derive_state: DerivedPlan | None = None
        self._pending: list[pl.DataFrame] = []
        self._t0: int | None = None  # epoch ms of the first sample
        self._mem_total_kb: float | None = None  # the host's memory, from the first rows
        self._last_ts: int | None = None
        self._next_id = 0
        self._warm_X: list[np.ndarray] = []
        self._warm_cols: list[str] | None = None
        self.ensemble: DetectorEnsemble | None = None
        self.fitted_detectors: FittedDetectors | None = None
        self.detectors: dict[str, Any] = {}
        self.keys: list[str] | None = None  # feature columns the detectors were fitted on
        self.pairs: pl.DataFrame | None = None
        self.host: str | None = None
        self.fitted_on: str | None = None
        #: what each fit was on, in order (the warm-up or the baseline first, then the refits)
        self.fits: list[str] = []
        self.fit_seconds: float | None = None
        self._plan_cols: list[str] | None = None
        self._plan_state: WindowPlan | None = None
        self._pairs_keys: list[str] = []
        self._align_cols: list[str] | None = None
        self._align_idx: np.ndarray | None = None
        self._align_pairs: pl.DataFrame | None = None
        self.prune_threshold = float(prune_threshold)
        #: the pruned space in use (None: every metric); ``pruning_source`` says where it came from
        self.pruning: Pruning | None = None
        self.pruning_source: str | None = None
        self._prune_pending = False  # fit the space on the warm-up (no baseline given)
        #: with a baseline (and the policy's ``sentinel_samples``): host-free keys of the counters 0
        #: in every baseline sample, for the sentinel rule
        self.silent: set[str] = set()
        #: the baseline runs' metric columns (checked against the stream's first rows) and the notes
        self._baseline_columns: list[str] | None = None
        self.baseline_notes: list[str] = []
        self._silent_idx = np.empty(0, dtype=np.int64)  # their positions in the plan's metrics
        self._silent_names: list[str] = []
        #: a run alone: the sentinel rule's own form (``detect_run``'s ``lone``), live
        self._lone = _LoneSentinel(self.alone.sentinel_min_run) if self.alone.sentinel_rule == "lone" else None
        if isinstance(prune, Pruning):
            self.pruning, self.pruning_source = prune, "given"
        elif isinstance(prune, str | os.PathLike):
            self.pruning, self.pruning_source = load_pruning(prune), str(prune)
        elif prune is True:
            self._prune_pending = True
        elif prune not in (False, None):
            raise ValueError(f"prune must be True, False, a Pruning or a pruning.json path, got {prune!r}")
        if baseline is not None:
            self.fit_baseline(baseline)

    # -- fitting ----------------------------------------------------------------------------
    @property
    def fitted(self) -> bool:
        return self.ensemble is not None

    @property
    def min_warmup_windows(self) -> int:
        """Complete windows the warm-up waits for: half of those ``warmup_s`` holds at full
        rate, and at least 3 (what a fit needs)."""
        w = self.window
        full = max(0.0, (self.warmup_s - w.window_s) / w.stride_s) + 1
        return max(3, int(np.ceil(full / 2)))

    def _fit(self, X: np.ndarray, pairs: pl.DataFrame, what: str) -> None:
        if X.shape[0] < 3:
            raise TelemetryError(
                f"{what}: {X.shape[0]} window(s) to fit the detectors on; need at least 3 (a warm-up or "
                f"baseline of at least {self.window.window_s + 2 * self.window.stride_s:g} s)"
            )
        t = time.perf_counter()
        dets = self._alone_detectors(pairs) if self._alone_rules else make_detectors(
            self.detect, self.policy.outlier_fence
        )
        fitted = FittedDetectors.fit(X, dets, fast_forest=self.fast_forest)
        if self._alone_rules and self.alone.thresholds == "robust":
            _robust_thresholds(fitted, self.alone.false_alarm_rate)
        self.fitted_detectors, self.ensemble, self.detectors = fitted, fitted.ensemble, fitted.detectors
        self.keys, self.pairs, self.fitted_on = pair_keys(pairs), pairs, what
        self.fits.append(what)
        self._align_cols = None
        self.fit_seconds = time.perf_counter() - t

    def _alone_detectors(self, pairs: pl.DataFrame) -> list[Any]:
        """The detectors of a run alone, set as ``detect_run`` sets them for one
        (:func:`reveal_lab.pipeline.score_host`): the policy's clip (the Z-score's and the
        Mahalanobis projection's), Z-score form and quantile, and by family the Z-score's
        groups and floors."""
        a = self.alone
        dets = default_detectors(
            self.detect, clip=a.z_clip, outlier_fence=a.outlier_fence, zscore=a.zscore,
            **({"quantile": a.quantile} if a.quantile is not None else {}),
        )
        if a.by_subsystem:
            from reveal_lab.pipeline import RELATIVE_FLOOR, family_groups, unit_floors

            floors = unit_floors(pairs, self._mem_total_kb)
            for d in dets:
                if d.name == "zscore":
                    d.set_params(
                        groups=family_groups(pairs), relative_floor=RELATIVE_FLOOR, scale_floor=floors
                    )
        return dets

    def fit_baseline(self, baseline: Run | Sequence[Run]) -> LiveDetector:
        """Fit the detectors on every window of reference run(s) (each host's windows stacked)."""
        runs = [baseline] if isinstance(baseline, Run) else list(baseline)
        self._alone_rules = False  # a baseline: the reference is the baseline's, not a run alone's
        self._baseline_columns = [c for r in runs for c in metric_columns(r.frame)]
        if self.sentinel_samples is not None:
            self.silent = silent_counters([per_interval_counts(r, self.derive) for r in runs])
        if self._prune_pending:
            self.pruning = fit_pruning(runs, self.prune_threshold, trim=False)
            self.pruning_source, self._prune_pending = "fitted on the baseline runs", False
        blocks, pairs, names = [], None, []
        for run in runs:
            for _h, part in run.split_hosts().items():
                frame = self._view(part.frame)
                wf = window_features(frame, self.window)
                if pairs is None:
                    pairs, keys = wf.pairs, pair_keys(wf.pairs)
                    blocks.append(np.asarray(wf.X, dtype=np.float64))
                else:
                    pos = {k: j for j, k in enumerate(pair_keys(wf.pairs))}
                    idx = np.array([pos.get(k, -1) for k in keys], dtype=np.int64)
                    Xb = np.full((wf.n_windows, len(keys)), np.nan)
                    Xb[:, idx >= 0] = wf.X[:, idx[idx >= 0]]
                    blocks.append(Xb)
            names.append(run.meta.run_id)
        if pairs is None:
            raise TelemetryError("baseline runs hold no host to fit on")
        self._fit(np.vstack(blocks), pairs, f"baseline {', '.join(names)}")
        return self

    def check_baseline(self, columns: Sequence[str]) -> list[str]:
        """The checks ``detect`` makes of a baseline against a run
        (:func:`reveal_lab.pipeline.check_metric_overlap`: the share of metrics, every
        subsystem, units), on the stream's first columns; raises
        :class:`~reveal_lab.pipeline.BaselineMismatch` unless the policy's ``force_baseline``,
        when each problem is logged as a warning. The notes are kept in ``baseline_notes``."""
        notes = check_metric_overlap(
            columns, self._baseline_columns or [], where="the stream", force=self.policy.force_baseline
        )
        for note in notes:
            if "--force" in note:  # a problem let through: said as detect's report says it
                log.warning("%s", note)
        self.baseline_notes = notes
        return notes

    # -- the detection view -----------------------------------------------------------------
    def _view(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The pipeline's detection view of a whole frame (baselines)."""
        if not self.derive:
            return frame if self.pruning is None else frame.select(TIMESTAMP, *self._selected(frame.columns))
        return detection_view(frame, self.pruning, derive=True)[0]

    def _selected(self, columns: Sequence[str]) -> list[str]:
        """The metric columns of ``columns`` in the pruned space (all of them without one),
        matched by name or host-free key as :func:`reveal_lab.pipeline.detection_view`."""
        if self.pruning is None:
            return [c for c in columns if c != TIMESTAMP]
        kept = select_metrics(columns, self.pruning)
        if not kept:
            sel = self.pruning.selected
            raise TelemetryError(
                f"none of the {len(sel)} metrics of the pruned space ({self.pruning_source}) is in this "
                f"stream (first of the space: {sorted(sel)[:3]}); fit the space on this stream, or score every "
                "metric (watch --no-prune)"
            )
        return kept

    def _decide_derive(self, frame: pl.DataFrame) -> None:
        """Fix the derived-metric plan on the first stretch of the stream.

        :func:`reveal_lab.derive.add_derived` decides from the data which columns are
        cumulative counters (those that never decrease); decided on every small chunk,
        that would flip. The live view decides once, on the warm-up (or the first
        window when fitted on a baseline), then applies the same expressions to every
        chunk with one row of look-back (they are first differences and row-wise ratios).
        """
        self._derive_state = plan_derived(frame)
        self._keep: list[str] | None = None
        if not self.fitted:
            # as the pipeline's detection view: static, all-missing and constant columns out,
            # judged on the warm-up (with a baseline, alignment to its columns decides)
            derived = self._apply_derive(frame)
            view, cat = single_host_view(derived)
            # a run alone keeps the columns constant over the warm-up too: the pipeline judges
            # constancy over the whole run, where a counter whose first event comes later (a
            # disk read, a network send) moves; dropped here, the stream could never see it
            kept = set(view.columns)
            if self._alone_rules:
                kept |= set(cat.filter(pl.col("reason") == CONSTANT_REASON)["column"])
            self._keep = [c for c in derived.columns if c in kept]
            if self._prune_pending:  # the pruned space of the run itself, as detect_run alone
                host = parse_metric_name(next((c for c in frame.columns if c != TIMESTAMP), ""))
                warm = Run(RunMeta("warm-up", hosts=(host.host,) if host is not None else ()), frame)
                self.pruning = fit_pruning([warm], self.prune_threshold, trim=False)
                self.pruning_source, self._prune_pending = "fitted on the warm-up", False
            if self.pruning is not None:
                self._keep = [TIMESTAMP, *self._selected(view.columns)]
        elif self.pruning is not None:  # a baseline fitted in the pruned space: compute only that
            head = self._apply_derive(frame.head(2))
            self._keep = [TIMESTAMP, *self._selected(head.columns)]
            # ... and the counters silent in the baseline, for the sentinel rule
            self._keep += [c for c in silent_columns(head, self.silent) if c not in self._keep]

    def _apply_derive(self, src: pl.DataFrame) -> pl.DataFrame:
        assert self._derive_state is not None
        out = self._derive_state.apply(src)  # add_derived's own steps
        if self._alone_rules and self.alone.fold_cores:
            from reveal_lab.derive import fold_cores

            out = fold_cores(out)
        return out

    def _view_incremental(self, rows: pl.DataFrame) -> pl.DataFrame:
        """The detection view of new rows, computed with the look-back rows before them."""
        if not self.derive:
            return rows
        k = 0
        src = rows
        plan = self._derive_state
        assert plan is not None
        if plan.diff_exprs or plan.exprs:  # first differences need the previous row
            if self._tail is not None and self._tail.columns == rows.columns:
                k = self._tail.height
                src = self._tail.vstack(rows)
            self._tail = rows.tail(plan.lookback)
        out = self._apply_derive(src)
        if self._keep is not None:
            out = out.select(pl.col(self._keep))
        return out.slice(k) if k else out

    # -- streaming --------------------------------------------------------------------------
    def _window_bounds(self, k: int) -> tuple[int, int]:
        assert self._t0 is not None
        start = self._t0 + round(k * self.window.stride_s * 1000)
        return start, start + round(self.window.window_s * 1000)

    def _first_rows(self, rows: pl.DataFrame, t0: int) -> None:
        """The stream starts: a baseline is checked against its columns, its host named."""
        if self._baseline_columns is not None:
            self.check_baseline(metric_columns(rows))
        self._t0 = t0
        m = parse_metric_name(next((c for c in rows.columns if c != TIMESTAMP), ""))
        self.host = m.host if m is not None else None
        self._mem_total_kb = host_memory_kb(rows)  # a run alone's host-memory floors

    def push(self, rows: pl.DataFrame) -> list[Verdict]:
        """Add new rows (any number, in time order); return the verdicts of the windows they complete."""
        if rows.height == 0:
            return []
        if TIMESTAMP not in rows.columns:
            raise TelemetryError(f"live rows have no {TIMESTAMP!r} column")
        ts = rows.get_column(TIMESTAMP).dt.epoch("ms")
        if self._last_ts is not None:
            keep = ts > self._last_ts  # a re-read overlap is ignored
            if not keep.all():
                rows = rows.filter(keep)
                if rows.height == 0:
                    return []
                ts = rows.get_column(TIMESTAMP).dt.epoch("ms")
        if self._t0 is None:
            self._first_rows(rows, int(ts[0]))
        self._last_ts = int(ts[-1])
        if self.derive and self._derive_state is None:
            # hold the first stretch back until the derived-metric plan can be decided on it
            self._pending.append(rows)
            need_s = self.window.window_s if self.fitted else self.warmup_s
            if (self._last_ts - self._t0) / 1000.0 + self.window.interval_s < need_s:
                return []
            rows = pl.concat(self._pending, how="diagonal_relaxed")
            self._pending = []
            # decide on exactly the first ``need_s`` seconds, however the rows were batched
            cut = self._t0 + round(need_s * 1000)
            self._decide_derive(rows.filter(pl.col(TIMESTAMP).dt.epoch("ms") < cut))
        rows = self._view_incremental(rows)
        if rows.columns != self._plan_cols:
            if self._plan_cols is not None:
                log.warning(
                    "the stream's columns changed (%d -> %d); windows restart from here",
                    len(self._plan_cols),
                    len(rows.columns),
                )
                self._buf_t = np.empty(0, dtype=np.int64)
            self._plan(rows.columns)
        metrics = list(self._plan_state.metrics)
        t_new = rows.get_column(TIMESTAMP).dt.epoch("ms").to_numpy().astype(np.int64)
        v_new = (
            rows.select(pl.col(metrics)).to_numpy().astype(np.float64, copy=False)
            if metrics
            else np.empty((rows.height, 0))
        )
        self._append(t_new, v_new)
        out = []
        # the data end as make_windows sees it: the last timestamp plus one interval
        data_end = self._last_ts + round(self.window.interval_s * 1000)
        while True:
            start, end = self._window_bounds(self._next_id)
            if end > data_end:
                break
            out.append(self._close_window(self._next_id, start, end))
            self._next_id += 1
        nxt, _ = self._window_bounds(self._next_id)  # drop rows no future window needs
        cut = int(np.searchsorted(self._buf_t, nxt, side="left"))
        if cut:
            self._buf_t, self._buf_v = self._buf_t[cut:], self._buf_v[cut:]
        return out

    def _append(self, t_new: np.ndarray, v_new: np.ndarray) -> None:
        """New rows into the buffer (and counted for a run alone's sentinel rule)."""
        if self._alone_rules and self._lone is not None:
            self._lone.count(v_new)
        if self._buf_t.size:
            self._buf_t = np.concatenate([self._buf_t, t_new])
            self._buf_v = np.concatenate([self._buf_v, v_new], axis=0)
        else:
            self._buf_t, self._buf_v = t_new, v_new

    def _window_rows(self, start: int, end: int) -> np.ndarray:
        a = int(np.searchsorted(self._buf_t, start, side="left"))
        b = int(np.searchsorted(self._buf_t, end, side="left"))
        return self._buf_v[a:b]

    def _plan(self, cols: list[str]) -> None:
        """Which (metric, feature) pairs to compute for this column set (once per column set):
        the plan :func:`reveal_lab.features.window_features` makes."""
        self._plan_cols = cols
        self._plan_state = window_plan(cols)
        self._pairs_keys = pair_keys(self._plan_state.pairs)
        metrics = list(self._plan_state.metrics)
        self._silent_idx = np.array(silent_indices(metrics, self.silent), dtype=np.int64)
        self._silent_names = [metrics[i] for i in self._silent_idx]
        if self._lone is not None:
            self._lone.plan(metrics)

    def window_vector(self, values: np.ndarray) -> tuple[np.ndarray, pl.DataFrame]:
        """Features of one window from its rows (``values[n_samples, n_metrics]`` in the
        plan's metric order); only these rows are read."""
        plan = self._plan_state
        assert plan is not None
        return plan.features(values), plan.pairs

    def features_of(self, frame: pl.DataFrame) -> tuple[np.ndarray, pl.DataFrame]:
        """Features of ``frame`` taken as one window (its detection view is not applied)."""
        if frame.columns != self._plan_cols:
            self._plan(frame.columns)
        metrics = list(self._plan_state.metrics)
        return self.window_vector(frame.select(metrics).to_numpy().astype(np.float64, copy=False))

    def _align(self, x: np.ndarray, live_pairs: pl.DataFrame) -> np.ndarray:
        """``x`` in the fitted column order (NaN where this stream lacks a fitted pair)."""
        if self._align_cols is not self._plan_cols:
            assert self.keys is not None and self.pairs is not None
            pos = {k: i for i, k in enumerate(self._pairs_keys)}
            idx = np.array([pos.get(k, -1) for k in self.keys], dtype=np.int64)
            self._align_idx, self._align_cols = idx, self._plan_cols
            # evidence names this stream's columns (its host), the fitted ones where it lacks them
            fitted = self.pairs.select("metric", "feature", "subsystem")
            live = live_pairs.select("metric", "feature", "subsystem")
            take = np.where(idx >= 0, idx, 0)
            named = live[take.tolist()] if live.height else fitted
            self._align_pairs = pl.DataFrame(
                {
                    c: np.where(idx >= 0, named.get_column(c).to_numpy(), fitted.get_column(c).to_numpy())
                    for c in ("metric", "feature", "subsystem")
                }
            ).with_columns(host=pl.lit(self.host, dtype=pl.String))
        idx = self._align_idx
        assert idx is not None
        return np.where(idx >= 0, x[np.maximum(idx, 0)], np.nan) if x.size else np.full(idx.size, np.nan)

    def _close_window(self, k: int, start: int, end: int) -> Verdict:
        t_start = time.perf_counter()
        rows = self._window_rows(start, end)
        v = Verdict(k, _dt(start), _dt(end), self.host, "scored", n_samples=int(rows.shape[0]))
        expected = self.window.window_s / self.window.interval_s
        if rows.shape[0] < max(1.0, self.window.min_fill * expected) - 1e-9:
            v.phase = "gap"
        elif not self.fitted:
            v.phase = "warmup"
            x, pairs = self.window_vector(rows)
            if self.keep_features:
                self.history.append((k, x, pairs))
            if self._warm_cols is None:
                self._warm_cols, self._warm_pairs = self._plan_cols, pairs
            if self._plan_cols == self._warm_cols:
                self._warm_X.append(x)
            elapsed = (end - (self._t0 or 0)) / 1000.0
            if elapsed >= self.warmup_s and (
                len(self._warm_X) >= self.min_warmup_windows or elapsed >= self.warmup_s + self.warmup_wait_s
            ):
                self._fit(
                    np.vstack(self._warm_X),
                    self._warm_pairs,
                    f"warm-up ({len(self._warm_X)} windows, {elapsed:g} s)",
                )
                if self._alone_rules:
                    self._history = list(self._warm_X)
                    self._fitted_on_n = len(self._history)
                self._warm_X = []
        else:
            x, pairs = self.window_vector(rows)
            if self.keep_features:
                self.history.append((k, x, pairs))
            xa = self._align(x, pairs)
            lone = self._lone.window(rows) if self._alone_rules and self._lone is not None else None
            self._score(v, xa[None, :], self._sentinel(rows) if lone is None else lone, lone=lone is not None)
            if self._alone_rules:
                self._refit_on_history(xa)
        v.compute_ms = (time.perf_counter() - t_start) * 1e3
        v.decided_at = time.time()
        return v

    def _refit_on_history(self, xa: np.ndarray) -> None:
        """A run alone: keep ``xa`` and refit the detectors on every window so far (the last
        :data:`HISTORY_WINDOWS`) once the history has grown by a quarter since the last fit
        (at most every :data:`REFIT_MAX_WINDOWS` windows): the warm-up holds the stream's
        first seconds, often the collector's own start, and the stream's calm majority is the
        better reference, as the whole run is for ``detect_run``."""
        self._history.append(xa)
        if len(self._history) > HISTORY_WINDOWS:
            del self._history[: len(self._history) - HISTORY_WINDOWS]
        n = len(self._history)
        if n >= min(1.25 * self._fitted_on_n, self._fitted_on_n + REFIT_MAX_WINDOWS):
            assert self.pairs is not None
            self._fit(np.vstack(self._history), self.pairs, f"the stream so far ({n} windows)")
            self._align_cols = self._plan_cols  # the fitted columns are the aligned ones
            self._fitted_on_n = n

    def _sustained(self, res):  # noqa: ANN001, ANN202 - an EnsembleResult
        """``res`` with each detector's flag counted from the policy's ``min_run``-th window in
        a row over its threshold on (the live, causal form of ``detect_run``'s rule for a run
        alone: the first windows of an episode are not flagged, the rest are)."""
        from reveal_lab.detectors import EnsembleResult

        labels = {}
        for m, lab in res.labels.items():
            self._run_len[m] = self._run_len.get(m, 0) + 1 if lab[0] else 0
            labels[m] = np.array([int(self._run_len[m] >= self.alone.min_run)], dtype=lab.dtype)
        agreement = np.sum([labels[m] for m in res.methods], axis=0).astype(res.agreement.dtype)
        return EnsembleResult(res.scores, res.thresholds, labels, agreement, res.combined)

    def _sentinel(self, rows: np.ndarray) -> tuple[str, int] | None:
        """The silent counter non-zero in most of the window's rows, when in at least
        the policy's ``sentinel_samples`` of them (the sentinel rule), with how many."""
        k = self.sentinel_samples
        if not k or not self._silent_idx.size or not rows.shape[0]:
            return None
        sub = rows[:, self._silent_idx]
        n = moved_samples(sub).sum(axis=0)
        j = int(n.argmax())
        return (self._silent_names[j], int(n[j])) if n[j] >= k else None

    def _score(
        self, v: Verdict, xa: np.ndarray, sentinel: tuple[str, int] | None = None, *, lone: bool = False
    ) -> None:
        """Score one window; ``sentinel``: the counter the sentinel rule fired on, ``lone`` its
        form for a run alone (then the window is that counter's subsystem's, as ``detect_run``
        attributes it)."""
        assert self.fitted_detectors is not None
        res = self.fitted_detectors.score(xa)  # the ensemble's own scores, labels and combination
        if self._alone_rules and self.alone.by_subsystem:
            res = confirmed_result(res)
        if self._alone_rules and self.alone.min_run > 1:
            res = self._sustained(res)
        v.methods = [n for n in res.methods if res.labels[n][0]]
        v.agreement = int(res.agreement[0])
        v.scores = {n: float(s[0]) for n, s in res.scores.items()}
        v.score = float(res.combined[0])
        v.anomalous = v.agreement >= self.min_agreement
        if v.anomalous:
            win = pl.DataFrame(
                {"window_id": [v.window_id], "start": [v.start], "end": [v.end]},
                schema={"window_id": pl.Int64, "start": pl.Datetime("ms"), "end": pl.Datetime("ms")},
            )
            by_family = self._alone_rules and self.alone.by_subsystem  # as detect_run alone
            att = attribute(
                self.detectors, xa, self._align_pairs, win, res, top_k=self.detect.top_k, host=self.host,
                rule="shares" if by_family else "deviation",
            )
            if att.windows.height:
                w = att.windows.row(0, named=True)
                v.subsystems = w["subsystems"]
                v.shares = {k.removeprefix("share_"): float(x) for k, x in w.items() if k.startswith("share_") and x}
            v.evidence = [{k: r[k] for k in EVIDENCE_FIELDS} for r in att.evidence.iter_rows(named=True)]
        if sentinel is not None:  # the sentinel rule: anomalous whatever the detectors say
            metric, n = sentinel
            ev = {**sentinel_evidence(metric, n, lone_windows=self.alone.sentinel_min_run if lone else None),
                  "rank": len(v.evidence) + 1}
            v.sentinel = metric
            v.methods.append("sentinel")
            if lone:  # its counter, quiet in most of the stream, is more specific than the detectors' pairs
                v.evidence = [{**ev, "rank": 1}, *({**e, "rank": e["rank"] + 1} for e in v.evidence)]
            else:
                v.evidence.append(ev)
            if lone or not v.anomalous:
                v.subsystems, v.shares = ev["subsystem"], {ev["subsystem"]: 1.0}
            v.anomalous = True


class _LoneSentinel:
    """The sentinel rule of a run alone (:func:`reveal_lab.pipeline.lone_sentinel_windows`),
    one window at a time: a counter of the host (a per-interval difference, not the
    collector's own, not a per-CPU interrupt) that is 0 in at least
    :data:`~reveal_lab.pipeline.LONE_QUIET_SHARE` of the stream's samples so far and moved in
    :data:`~reveal_lab.pipeline.LONE_ACTIVE_SHARE` of a window's samples, ``min_run`` windows
    in a row, fires (from its ``min_run``-th window on: the causal form). Whether a counter is
    quiet is judged on the samples before its current active stretch began, as the pipeline
    judges it on the whole run, where a stretch is a minority."""

    def __init__(self, min_run: int | None) -> None:
        self.min_run = int(min_run or 1)
        self.names: list[str] = []
        self.idx = np.empty(0, dtype=np.int64)

    def plan(self, metrics: Sequence[str]) -> None:
        """The counters of a new column set (their counts start again)."""
        from reveal_lab.pipeline import lone_candidate

        keep = [i for i, m in enumerate(metrics) if lone_candidate(m)]
        self.idx = np.array(keep, dtype=np.int64)
        self.names = [metrics[i] for i in keep]
        n = len(keep)
        self.seen, self.moved = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        self.run = np.zeros(n, dtype=np.int64)
        self.quiet_at = np.zeros(n)  # each counter's quiet share when its active stretch began

    def count(self, values: np.ndarray) -> None:
        """New rows of the stream (in the plan's metric order)."""
        if self.idx.size and values.shape[0]:
            x = values[:, self.idx]
            self.seen += np.isfinite(x).sum(axis=0)
            self.moved += moved_samples(x).sum(axis=0)

    def window(self, rows: np.ndarray) -> tuple[str, int] | None:
        """The counter the rule fires on in this window (the rarest: the quietest, then the one
        that moved in most of its samples), with its samples moved; ``None``."""
        from reveal_lab.pipeline import LONE_ACTIVE_SHARE, LONE_QUIET_SHARE

        if not self.idx.size:
            return None
        n = moved_samples(rows[:, self.idx]).sum(axis=0) if rows.shape[0] else np.zeros(self.idx.size, int)
        active = n >= LONE_ACTIVE_SHARE * max(rows.shape[0], 1)
        quiet = 1.0 - self.moved / np.maximum(self.seen, 1)
        self.quiet_at = np.where(active & (self.run == 0), quiet, self.quiet_at)
        self.run = np.where(active, self.run + 1, 0)
        fired = (self.run >= self.min_run) & (self.quiet_at >= LONE_QUIET_SHARE)
        if not fired.any():
            return None
        j = max(np.flatnonzero(fired), key=lambda k: (self.quiet_at[k], n[k], -k))
        return self.names[j], int(n[j])


def _robust_thresholds(fitted: FittedDetectors, rate: float) -> None:
    """Each detector's threshold as a run alone's (``detect_run``, ``robust``): the Z-score by
    family at its per-family threshold (:func:`reveal_lab.pipeline.family_threshold`), every
    other at ``median + k·1.4826·MAD`` of its own scores of the windows it was fitted on
    (:func:`reveal_lab.pipeline.robust_threshold`), not the top share of them."""
    from reveal_lab.pipeline import family_threshold, robust_threshold

    res = fitted.ensemble.result_
    n_det = len(res.methods)
    for m in res.methods:
        det = fitted.ensemble.detectors_[m]
        groups = getattr(det, "groups", None)
        det.threshold_ = (
            family_threshold(rate, n_det, len(set(groups)))
            if groups is not None
            else robust_threshold(res.scores[m], rate, n_det)
        )
        fitted.detectors[m].threshold_ = det.threshold_


def _dt(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)
