"""The hot loop: sample the open probes at absolute deadlines and write records."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from reveal_lab.collect._compiled import Upgrade, burst_ticks
from reveal_lab.collect._probe import MISSING_INT, Probe
from reveal_lab.collect._writer import DiskFull, RunWriter

__all__ = ["run_loop"]

log = logging.getLogger("reveal_lab.collect")


def run_loop(
    writer: RunWriter,
    plan: list[tuple[Probe, np.ndarray, np.ndarray, int]],
    row_i: np.ndarray,
    row_f: np.ndarray,
    self_probe: Probe | None,
    stop: dict[str, Any],
    interval_s: float,
    duration_s: float | None,
    mono0: int,
    batch: Any = None,
    batch_of: list[Any] | None = None,
    direct: list[bool] | None = None,
    stats: dict[str, int] | None = None,
    hot: Any = None,
    upgrade: Upgrade | None = None,
    build: Any = None,
) -> tuple[str, str | None, int]:
    """Sample at ``mono0 + k * interval``; skip (and count) deadlines already past or
    closer than half an interval to the previous sample. A probe with divisor ``d > 1``
    is sampled at the first tick with ``k >= `` its next multiple of ``d`` (so a missed
    tick delays it, never drops its period) and reads as missing on the other ticks.

    Runs of ticks on which only direct table probes (and ``self``) are due go to the
    compiled :func:`~reveal_lab.collect._burst.burst`, with the same rules; the other
    ticks run here. ``stats`` (if given) receives the number of ticks of each kind.
    ``upgrade`` (an :class:`Upgrade`, told to load after the first sample) and ``build``
    (what makes the batch and the compiled loop): until the upgrade is ready the ticks run
    here without batch or compiled loop, then they switch to them."""
    interval_ns = int(round(interval_s * 1e9))
    n_ticks = None if duration_s is None else max(1, int(round(duration_s / interval_s)))
    mono, wall, sleep = time.monotonic_ns, time.time_ns, time.sleep
    k = 0
    missed = 0
    seq = 0
    due = [0] * len(plan)  # next deadline index at which each probe is sampled
    blank = [False] * len(plan)  # its row slice already holds missing values
    slow_batched = _slow_batched(plan, batch_of)
    bu = hot
    python_set = bu.python_set if bu is not None else set()
    if stats is not None:
        stats.update(python_ticks=0, compiled_ticks=0, partial_ticks=0, burst_calls=0)
        if upgrade is not None:
            stats["ticks_before_compiled"] = 0
    preset: tuple[int, int] | None = None  # timestamps of a tick the compiled loop began
    while not stop["flag"]:
        if upgrade is not None and upgrade.ready():
            batch, batch_of, direct, bu = upgrade.take(build)
            upgrade = None
            python_set = bu.python_set if bu is not None else set()
            slow_batched = _slow_batched(plan, batch_of)
        deadline = mono0 + k * interval_ns
        partial = False  # the compiled loop did all of this tick but its Python probes
        if bu is not None and preset is None and bu.batch is batch:
            r, k, missed, seq, preset = burst_ticks(
                bu, writer, plan, due, blank, k, missed, seq, n_ticks, mono0, interval_ns, row_i, row_f, stats
            )
            if r == "disk-full":
                return "disk-full", preset, missed  # type: ignore[return-value]
            if r == "done":
                break
            if r == "again":
                continue
            partial = r == "partial"
            python_set = bu.python_set  # (rebuilt after a layout change)
            deadline = mono0 + k * interval_ns  # "python" / "partial": this tick runs here
        if preset is not None:
            t_mono, t_wall = preset
            preset = None
        else:
            now = mono()
            if deadline > now:
                sleep((deadline - now) / 1e9)
                if stop["flag"]:
                    break
            t_mono = mono()
            t_wall = wall()
        if stats is not None:
            stats["partial_ticks" if partial else "python_ticks"] += 1
        if self_probe is not None:
            self_probe.lag_us = (t_mono - deadline) // 1000  # type: ignore[attr-defined]
            self_probe.missed = missed  # type: ignore[attr-defined]
        batch_ok = False  # the direct probes' values are in the row already
        if not partial and batch is not None:
            batch, batch_ok = _run_batch(batch, slow_batched, k, due)
        _sample_plan(plan, k, due, blank, python_set if partial else None, direct if batch_ok else None)
        try:
            writer.append(seq, t_wall, t_mono, row_i, row_f)
            if upgrade is not None:
                upgrade.start()  # after the first sample (no-op once started)
                if stats is not None:
                    stats["ticks_before_compiled"] += 1
            writer.tick(mono())
        except DiskFull as exc:
            log.error("%s", exc)
            return "disk-full", str(exc), missed
        seq += 1
        k, missed = _next_deadline(k, missed, mono0, interval_ns, t_mono, mono())
        if n_ticks is not None and k >= n_ticks:
            if k > n_ticks:
                missed -= k - n_ticks  # deadlines past the end were never due
            break
    return "complete", None, missed


def _slow_batched(plan: list, batch_of: list | None) -> list[tuple[int, int, Any]]:
    """Probes sampled every ``d > 1`` ticks that own batched tables: ``(plan index, divisor,
    table indices)``."""
    if not batch_of:
        return []
    return [(j, d, batch_of[j]) for j, (_, _, _, d) in enumerate(plan) if d > 1 and batch_of[j] is not None]


def _run_batch(batch: Any, slow_batched: list, k: int, due: list[int]) -> tuple[Any, bool]:
    """One batched read of the direct probes' tables (the slow ones only when due):
    ``(batch, whether their values are in the row)``; on failure the batch is detached
    and ``None`` is returned, and the probes read on their own from then on."""
    for j, _, idx in slow_batched:
        batch.active[idx] = k >= due[j]
    try:
        return batch, batch.run()
    except Exception as exc:  # noqa: BLE001 - fall back to per-probe reads for good
        log.warning("batched proc reads failed (%s: %s); probes read on their own", type(exc).__name__, exc)
        batch.detach()
        return None, False


def _sample_plan(  # noqa: PLR0913
    plan: list, k: int, due: list[int], blank: list[bool], only: set | None, direct: list[bool] | None
) -> None:
    """Sample each probe of ``plan`` due at tick ``k`` into its row slice (a probe not due
    reads as missing); ``only``: the plan indices this tick still runs (the compiled loop did
    the rest); ``direct``: probes whose values the batched read put in the row already. A
    probe that fails costs its own values only."""
    for j, (p, vi, vf, d) in enumerate(plan):
        if only is not None and j not in only:
            continue  # the compiled part of the tick filled (or blanked) its slice
        if d > 1:
            if k < due[j]:
                if not blank[j]:
                    vi[:] = MISSING_INT
                    vf[:] = np.nan
                    blank[j] = True
                continue
            due[j] = (k // d + 1) * d
            blank[j] = False
        if direct is not None and direct[j]:
            continue
        try:
            p.sample(vi, vf)
        except Exception as exc:  # noqa: BLE001 - one probe's failure costs its values only
            p.errors = getattr(p, "errors", 0) + 1  # type: ignore[attr-defined]
            if p.errors == 1:  # type: ignore[attr-defined]
                why = f"{type(exc).__name__}: {exc}"
                log.warning("probe %s failed to sample (%s); its values are missing", p.name, why)
            vi[:] = MISSING_INT
            vf[:] = np.nan


def _next_deadline(  # noqa: PLR0913
    k: int, missed: int, mono0: int, interval_ns: int, t_mono: int, now: int
) -> tuple[int, int]:
    """``(k, missed)`` of the next deadline: the first at least half an interval after this
    sample (taken at ``t_mono``) and not already half an interval past ``now``; the
    deadlines skipped are counted as missed."""
    k += 1
    floor_ns = t_mono + interval_ns // 2
    late_ns = now - interval_ns // 2
    while (d := mono0 + k * interval_ns) < floor_ns or d < late_ns:
        k += 1
        missed += 1
    return k, missed
