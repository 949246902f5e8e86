"""From a run's telemetry to scored, attributed windows.

derive → detection view (selected metrics, static ones out) → time windows →
window features → the three detectors (fit on the run itself, as the paper, or on
baseline runs) → agreement and combined score → attribution (pairs, subsystems,
host, claims). Multi-host runs are split per host, scored per host, then joined.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from reveal_lab.attribution import EVIDENCE_SCHEMA, WINDOW_SCHEMA
from reveal_lab.config import Preset, get_preset
from reveal_lab.pipeline._baseline_check import BaselineMismatch, check_metric_overlap
from reveal_lab.pipeline._pruning import Pruning, load_pruning
from reveal_lab.pipeline._trim import trim_arguments, trim_run
from reveal_lab.pipeline._policy import POLICIES, DetectionPolicy, ResolvedPolicy, run_source
from reveal_lab.pipeline._result import Detection
from reveal_lab.pipeline._score import ScoreSettings, score_host
from reveal_lab.pipeline._episodes import episodes_of
from reveal_lab.pipeline._startup import collector_startup, without_startup
from reveal_lab.pipeline._sentinel import (
    SENTINEL_WINDOW_SCHEMA,
    lone_sentinel_windows,
    per_interval_counts,
    sentinel_counters,
    sentinel_evidence,
    sentinel_windows,
)
from reveal_lab.pipeline._view import baseline_features, baseline_silent, fitted_space
from reveal_lab.telemetry import SUBSYSTEMS, TIMESTAMP, Run, TelemetryError, metric_columns, metric_key

__all__ = ["detect_run", "detect_many"]

log = logging.getLogger(__name__)

def detect_run(
    run: Run,
    baseline: Sequence[Run] | None = None,
    preset: Preset | None = None,
    selected: Iterable[str] | Any | None = None,
    *,
    policy: DetectionPolicy | None = None,
    derive: bool = True,
    blas_threads: int | None = None,
    # folded into the one policy at this entry, before any step reads it; no layer forwards it
    **changes: Any,
) -> Detection:
    """Detect and explain anomalous windows of one run.

    Parameters
    ----------
    run : the run to examine (single- or multi-host).
    baseline : reference runs to fit the detectors on; ``None`` fits on the run itself.
    preset : windows and detector settings (default ``get_preset("paper")``).
    selected : the diagnostic space (metric names, host-free keys, or a pruning result
        with ``.selected``); overrides the policy's ``prune``.
    policy : which windows are anomalous (:class:`DetectionPolicy`, default
        ``POLICIES["default"]``), resolved for this run and its baseline runs
        (:meth:`DetectionPolicy.resolve`; the result is ``config["policy"]``). With
        baseline runs, a window is anomalous also when a counter 0 in every sample of every
        baseline run is non-zero in at least ``sentinel_samples`` of its samples
        (:func:`sentinel_windows`), whatever the detectors say: such counters (a receiver's
        out-of-order queue, a sender's fast retransmits under packet loss) are pruned as
        constant and seen by one detector at most. A run alone (``robust`` thresholds) with
        ``lone_sentinel``: a counter 0 in at least half of the run's own samples that moves in
        90 % of a window's samples, :func:`past_a_spike` windows in a row
        (:func:`lone_sentinel_windows`), and the window is attributed to that counter's
        subsystem; ``config["sentinel_rule"]`` says which form decided.
    changes : policy fields to replace (:meth:`DetectionPolicy.with_`), e.g. ``min_run=1``;
        ``trim`` also takes ``True`` (``auto``) and ``False`` (``none``).
    blas_threads : BLAS threads for the detectors' linear algebra (default
        ``$REVEAL_LAB_BLAS_THREADS`` or 1). One thread per run is the safe default: on a
        busy machine (or under Dask, one run per worker) OpenBLAS's spinning threads
        made the Mahalanobis eigendecomposition up to 8× slower than one thread.

    Raises
    ------
    TelemetryError
        when the run is shorter than one window, or has nothing to score.
    ValueError
        when the policy cannot apply (see :meth:`DetectionPolicy.resolve`).
    """
    from threadpoolctl import threadpool_limits

    preset = preset or get_preset("paper")
    if "trim" in changes:
        changes["trim"] = trim_arguments(changes["trim"])[0]
    policy = (policy or POLICIES["default"]).with_(**changes)
    n_base = len(baseline) if baseline else 0
    resolved = policy.resolve(baseline_runs=n_base, source=run_source(run), preset=preset)
    if blas_threads is None:
        blas_threads = int(os.environ.get("REVEAL_LAB_BLAS_THREADS", "1"))
    with threadpool_limits(limits=blas_threads, user_api="blas"):
        return _detect_run(run, baseline if resolved.fit_on == "baseline" else None, preset, selected, resolved, derive)


def _detect_run(
    run: Run,
    baseline: Sequence[Run] | None,
    preset: Preset,
    selected: Any,
    policy: ResolvedPolicy,
    derive: bool,
) -> Detection:
    """The steps of :func:`detect_run`, in order, under the resolved ``policy``."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    run, baseline, trim_info = _trim(run, baseline, policy, preset.window.window_s)
    run, baseline = _fold(run, baseline, policy)
    pre_notes, prune = _check_baseline_runs(run, baseline, policy)
    selected, prune_info = _metric_space(run, baseline, preset, selected, prune, timings, policy.prune_method)
    parts = run.split_hosts()
    windows, evidence, host_results = _score_hosts(parts, baseline, preset, selected, derive, policy, timings)
    windows, sentinels = _sentinel_rule(windows, parts, baseline, policy, derive, timings)
    evidence = pl.concat(
        [evidence, _sentinel_evidence(windows, evidence, lone_windows=policy.sentinel_min_run)],
        how="vertical_relaxed",
    ).sort(
        ["agreement", "combined", "window_id", "host", "rank"], descending=[True, True, False, False, False]
    )
    crosshost = _crosshost(parts, baseline, preset, timings)
    timings["total"] = time.perf_counter() - t0
    det = Detection(
        run_id=run.run_id,
        meta=run.meta.to_dict(),
        windows=windows,
        evidence=evidence,
        methods=host_results.methods,
        thresholds=host_results.thresholds,
        fit_mode=policy.thresholds,
        min_agreement=policy.min_agreement,
        config=_config(preset, policy, trim_info, prune_info),
        excluded=pl.concat(host_results.excluded, how="vertical") if host_results.excluded else pl.DataFrame(),
        warnings=list(run.warnings) + pre_notes + host_results.notes,
        timings=timings,
        crosshost=crosshost,
        sentinels=sentinels,
    )
    det.episodes = episodes_of(windows)
    det.summary = det.make_summary()
    log.info(
        "%s: %d windows, %d anomalous (agreement >= %d), %.1f s",
        run.run_id,
        windows.height,
        det.summary["anomalous"],
        policy.min_agreement,
        timings["total"],
    )
    return det


def _trim(
    run: Run, baseline: Sequence[Run] | None, policy: ResolvedPolicy, window_s: float
) -> tuple[Run, list[Run] | None, dict[str, Any]]:
    """The run (and the baseline runs) cut to the policy's span; what was left out and why,
    always (``trim_info["run"]``). A collector's start-up that leaves less than one window
    (``window_s``) of a short recording is kept, and said."""
    startup = collector_startup(run.frame) if policy.skip_startup else None  # on the whole recording
    run, tr = trim_run(run, mode=policy.trim, reason=policy.reasons.get("trim"))
    trim_info: dict[str, Any] = {"applied": tr.cut_start_s + tr.cut_end_s > 0, "mode": tr.mode, "run": tr.to_dict()}
    if startup is not None and startup.end is not None:
        trim_info["startup"] = startup.to_dict()
        if run.frame.height and run.frame[TIMESTAMP][0] < startup.end:  # the kept span starts inside it
            after = without_startup(run, startup)
            ts = after.frame[TIMESTAMP]
            if after.frame.height and (ts[-1] - ts[0]).total_seconds() >= window_s:
                run = Run(run.meta, after.frame, [*run.warnings, f"{run.run_id}: {startup.describe()}"])
            else:
                trim_info["startup"]["kept"] = True
                run = Run(run.meta, run.frame, [*run.warnings, (
                    f"{run.run_id}: {startup.describe()}; kept: less than one {window_s:g} s window of the "
                    "recording follows it")])
    if policy.trim != "none" and baseline:
        trimmed = [trim_run(b, mode=policy.trim) for b in baseline]
        baseline = [b for b, _ in trimmed]
        trim_info["baseline"] = [t.to_dict() for _, t in trimmed]
    return run, list(baseline) if baseline else None, trim_info


def _fold(run: Run, baseline: list[Run] | None, policy: ResolvedPolicy) -> tuple[Run, list[Run] | None]:
    """The run (and the baseline runs) with per-core families folded into host-level metrics
    when the policy says so (:func:`~reveal_lab.derive.fold_cores`)."""
    if not policy.fold_cores:
        return run, baseline
    from reveal_lab.derive import fold_cores

    def fold(r: Run) -> Run:
        return Run(r.meta, fold_cores(r.frame), list(r.warnings))

    return fold(run), [fold(b) for b in baseline] if baseline else baseline


def _check_baseline_runs(run: Run, baseline: list[Run] | None, policy: ResolvedPolicy) -> tuple[list[str], Any]:
    """Notes on how many metrics run and baseline share (refused below the overlap bar
    unless ``force_baseline``), and the pruning to use: none when the baseline never moves
    (a pruned space fitted on constants would be empty). Before pruning: a space fitted on
    the baseline would hide what it lacks."""
    prune = policy.prune
    if not baseline:
        return [], prune
    force = policy.force_baseline
    base_columns = [c for b in baseline for c in metric_columns(b.frame)]
    notes = check_metric_overlap(metric_columns(run.frame), base_columns, where=run.run_id, force=force)
    moving = any(
        b.frame.get_column(c).drop_nulls().n_unique() > 1 for b in baseline for c in metric_columns(b.frame)
    )
    if not moving:  # nothing to prune on or fit to: the per-host check's rule, before pruning
        msg = f"{run.run_id}: the baseline is degenerate: none of its metrics varies (all constant)"
        if not force:
            raise BaselineMismatch(msg + "; give a baseline that moves, or --force to use it anyway")
        notes.append(msg + "; used because of --force")
        if prune is True:
            prune = False
    return notes, prune


def _metric_space(
    run: Run, baseline: list[Run] | None, preset: Preset, selected: Any, prune: Any, timings: dict[str, float],
    method: str = "complete",
) -> tuple[Any, dict[str, Any]]:
    """The metrics scored (``selected`` as given, else the pruned space: given, loaded from a
    path, or fitted on the baseline runs or the run itself) and how it was chosen."""
    if selected is not None:
        n_sel = len(set(getattr(selected, "selected", selected)))
        return selected, {"applied": True, "source": "selected", "n_selected": n_sel}
    if prune is False or prune is None:
        return None, {"applied": False}
    t = time.perf_counter()
    if isinstance(prune, Pruning):
        pr, src = prune, "given"
    elif isinstance(prune, str | os.PathLike):
        pr, src = load_pruning(prune), str(prune)
    else:
        pr = fitted_space(list(baseline) if baseline else [run], preset.prune.threshold, method)
        src = "fitted on the baseline runs" if baseline else "fitted on the run itself"
    info = {"applied": True, "source": src, "n_selected": len(pr.selected), **pr.params}
    info.pop("fitted_on", None)
    timings["pruning"] = time.perf_counter() - t
    return pr.selected, info


@dataclass
class _HostResults:
    """What :func:`_score_hosts` gathers besides windows and evidence."""

    methods: list[str] = field(default_factory=list)
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)
    excluded: list[pl.DataFrame] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _score_hosts(
    parts: dict[str, Run],
    baseline: list[Run] | None,
    preset: Preset,
    selected: Any,
    derive: bool,
    policy: ResolvedPolicy,
    timings: dict[str, float],
) -> tuple[pl.DataFrame, pl.DataFrame, _HostResults]:
    """Every host scored (:func:`score_host`); windows with their attribution, and the
    evidence of the windows that reach ``min_agreement``."""
    base_feats = None
    if baseline:
        t = time.perf_counter()
        base_feats = baseline_features(baseline, preset, selected, derive)
        timings["baseline_features"] = time.perf_counter() - t
    res = _HostResults()
    win_frames, evid, wattr = [], [], []
    for host, part in parts.items():
        try:
            w, att, thr, excl, n, er = score_host(
                part, host, preset, base_feats, selected, derive, timings, ScoreSettings.of(policy)
            )
        except TelemetryError as exc:
            if len(parts) == 1:
                raise
            raise TelemetryError(f"host {host!r}: {exc}") from exc
        res.methods = er.methods
        win_frames.append(w)
        evid.append(att.evidence)
        wattr.append(att.windows)
        res.thresholds[host] = thr
        res.excluded.append(excl.with_columns(host=pl.lit(host)))
        res.notes.extend(n)
    windows = pl.concat(win_frames, how="vertical")
    wat = pl.concat(wattr, how="vertical") if wattr else pl.DataFrame(schema=WINDOW_SCHEMA)
    share_cols = [f"share_{s}" for s in SUBSYSTEMS]
    windows = windows.join(
        wat.select("window_id", "host", "subsystems", "top_subsystem", "top_share", *share_cols),
        on=["window_id", "host"],
        how="left",
    )
    evidence = pl.concat(evid, how="vertical") if evid else pl.DataFrame(schema=EVIDENCE_SCHEMA)
    return windows, evidence.filter(pl.col("agreement") >= policy.min_agreement), res


def _sentinel_rule(
    windows: pl.DataFrame,
    parts: dict[str, Run],
    baseline: list[Run] | None,
    policy: ResolvedPolicy,
    derive: bool,
    timings: dict[str, float],
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """The windows with the sentinel rule's columns and the decision (``anomalous``), and the
    sentinel counters: with baseline runs, the counters 0 in every baseline sample that move
    here (decisive when the policy's rule is ``baseline``); a run alone under the ``lone``
    rule, its own quiet counters continuously active ``sentinel_min_run`` windows in a row."""
    sentinels = None
    rule = policy.sentinel_rule
    if baseline:
        t = time.perf_counter()
        # per-interval counts: a collector's cumulative counters become their differences
        # (``_diff``) as in the detectors' view; lab and public frames hold them already
        silent = baseline_silent(list(baseline), derive)
        counts = {h: per_interval_counts(p, derive) for h, p in parts.items()}
        sentinels = sentinel_counters(counts, silent)
        if rule == "baseline":
            windows = windows.join(
                sentinel_windows(windows, counts, silent, int(policy.sentinel_samples)),
                on=["window_id", "host"],
                how="left",
            )
        timings["sentinels"] = time.perf_counter() - t
    if rule == "lone":
        t = time.perf_counter()
        counts = {h: per_interval_counts(p, derive) for h, p in parts.items()}
        lone = lone_sentinel_windows(windows, counts, policy.sentinel_min_run)
        windows = windows.join(lone, on=["window_id", "host"], how="left")
        fired = {metric_key(m) for m in lone.filter("sentinel")["sentinel_metric"].to_list()}
        sentinels = sentinel_counters(counts, fired)
        timings["sentinels"] = time.perf_counter() - t
    if rule is None:
        windows = windows.with_columns(
            *[pl.lit(None, dtype=d).alias(c) for c, d in SENTINEL_WINDOW_SCHEMA.items()]
        )
    windows = _with_sentinel_decision(
        windows.with_columns(pl.col("sentinel").fill_null(False)), policy.min_agreement, lone=rule == "lone"
    )
    return windows, sentinels


def _crosshost(
    parts: dict[str, Run], baseline: list[Run] | None, preset: Preset, timings: dict[str, float]
) -> pl.DataFrame | None:
    """Cross-host deviation for runs with 3+ hosts; each host also judged against itself in
    2+ baseline runs of the same hosts."""
    if len(parts) < 3:
        return None
    from reveal_lab.crosshost import baseline_deviation, deviation

    t = time.perf_counter()
    hosts = {h: p.frame for h, p in parts.items()}
    split = [{h: p.frame for h, p in b.split_hosts().items()} for b in (baseline or [])]
    same = [b for b in split if set(b) == set(parts)]
    if len(same) >= 2:
        out = baseline_deviation(hosts, same, window_s=preset.window.window_s)
    else:
        out = deviation(hosts, window_s=preset.window.window_s, align="time")
    timings["crosshost"] = time.perf_counter() - t
    return out


def _config(
    preset: Preset, policy: ResolvedPolicy, trim_info: dict[str, Any], prune_info: dict[str, Any]
) -> dict[str, Any]:
    """``Detection.config``: the windows, the detectors' settings and every decision in force."""
    mode = policy.thresholds
    return {
        "preset": preset.name,
        "window_s": preset.window.window_s,
        "stride_s": preset.window.stride_s,
        "interval_s": preset.window.interval_s,
        **{k: getattr(preset.detect, k) for k in preset.detect.__dataclass_fields__},
        "false_alarm_rate": policy.false_alarm_rate,
        "thresholds": mode,
        **({"calibration": policy.calibration} if mode == "calibrated" else {}),
        # the clip in force (it acts on calibrated thresholds only)
        "z_clip": policy.z_clip,
        "min_run_windows": policy.min_run,
        "sentinel_samples": policy.sentinel_samples,
        # which form of the sentinel rule decided: against the baseline runs' silent counters,
        # or a run alone's quiet counters (lone_sentinel_windows); None: off
        "sentinel_rule": policy.sentinel_rule,
        "sentinel_min_run": policy.sentinel_min_run,  # windows in a row (lone)
        "trim": trim_info,
        "pruning": prune_info,
        "force_baseline": policy.force_baseline,
        "policy": policy.to_dict(),
    }


def _with_sentinel_decision(windows: pl.DataFrame, min_agreement: int, *, lone: bool = False) -> pl.DataFrame:
    """``anomalous`` (agreement reaches ``min_agreement`` or the sentinel rule fires); a window
    the sentinel rule flags alone is attributed to its counter's subsystem (share 1). Under the
    rule's form for a run alone (``lone``) every window it fires on is: its counter, quiet in
    most of the run and busy through the window, is more specific than the detectors' pairs,
    which on the host recordings name the page cache for a disk write and for a network send
    (``docs/host_recordings.md``)."""
    alone = pl.col("sentinel") if lone else pl.col("sentinel") & (pl.col("agreement") < min_agreement)
    sub = pl.col("sentinel_subsystem")
    return windows.with_columns(
        anomalous=(pl.col("agreement") >= min_agreement) | pl.col("sentinel"),
        subsystems=pl.when(alone).then(sub).otherwise(pl.col("subsystems")),
        top_subsystem=pl.when(alone).then(sub).otherwise(pl.col("top_subsystem")),
        top_share=pl.when(alone).then(pl.lit(1.0)).otherwise(pl.col("top_share")),
        **{
            f"share_{s}": pl.when(alone).then((sub == s).cast(pl.Float64)).otherwise(pl.col(f"share_{s}"))
            for s in SUBSYSTEMS
        },
    )


def _sentinel_evidence(
    windows: pl.DataFrame, evidence: pl.DataFrame, *, lone_windows: int | None = None
) -> pl.DataFrame:
    """One evidence row per window the sentinel rule fires on, ranked after the window's
    detector evidence (first when there is none); ``lone_windows``: the rule's form for a run
    alone (:func:`sentinel_evidence`)."""
    w = windows.filter(pl.col("sentinel"))
    if w.is_empty():
        return pl.DataFrame(schema=EVIDENCE_SCHEMA)
    last = evidence.group_by("window_id", "host").agg(pl.col("rank").max().alias("_last"))
    w = w.join(last, on=["window_id", "host"], how="left")
    rows = [
        {
            **{k: r[k] for k in ("window_id", "start", "end", "host", "agreement", "combined")},
            "methods": "sentinel",
            "rank": (r["_last"] or 0) + 1,
            **sentinel_evidence(r["sentinel_metric"], r["sentinel_samples"], lone_windows=lone_windows),
        }
        for r in w.iter_rows(named=True)
    ]
    return pl.DataFrame(rows, schema=EVIDENCE_SCHEMA)


def detect_many(
    runs: Iterable[Run],
    baseline: Sequence[Run] | None = None,
    preset: Preset | None = None,
    selected: Iterable[str] | Any | None = None,
    **kwargs: Any,
) -> list[Detection]:
    """:func:`detect_run` over several runs (one at a time, lazily loaded runs welcome)."""
    return [detect_run(r, baseline=baseline, preset=preset, selected=selected, **kwargs) for r in runs]
