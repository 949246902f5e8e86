"""``watch``: follow a collector directory and report every window's verdict as it happens."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from reveal_lab.config import Preset, WindowConfig, get_preset
from reveal_lab.live._engine import LiveDetector, Verdict
from reveal_lab.live._follow import CollectorFollower
from reveal_lab.pipeline import DetectionPolicy
from reveal_lab.telemetry import Run

__all__ = ["watch", "WatchSummary"]

log = logging.getLogger(__name__)


@dataclass
class WatchSummary:
    """What a :func:`watch` session saw."""

    windows: int = 0
    warmup_windows: int = 0
    scored: int = 0
    anomalies: int = 0
    gaps: int = 0
    rows: int = 0
    seconds: float = 0.0
    compute_ms: list[float] = field(default_factory=list)
    #: time to read and decode each batch of new rows, and to push it (derive, windows, verdicts)
    poll_ms: list[float] = field(default_factory=list)
    push_ms: list[float] = field(default_factory=list)
    follow: dict[str, int] = field(default_factory=dict)
    fitted_on: str | None = None
    #: the metric space scored: {"applied", "source", "n_selected"} (paper §4.1: pruned by default)
    pruning: dict[str, Any] = field(default_factory=dict)
    #: why the watch ended (finished run, idle, duration, max windows, interrupted)
    stopped: str | None = None
    #: when no window was scored: why not
    nothing_scored: str | None = None

    def as_dict(self) -> dict[str, Any]:
        import numpy as np

        c = np.asarray(self.compute_ms) if self.compute_ms else None
        return {
            "windows": self.windows,
            "warmup_windows": self.warmup_windows,
            "scored": self.scored,
            "anomalies": self.anomalies,
            "gaps": self.gaps,
            "rows": self.rows,
            "seconds": round(self.seconds, 3),
            "fitted_on": self.fitted_on,
            "pruning": self.pruning,
            "follow": self.follow,
            "stopped": self.stopped,
            "nothing_scored": self.nothing_scored,
            "compute_ms_median": float(np.median(c)) if c is not None else None,
            "compute_ms_p95": float(np.percentile(c, 95)) if c is not None else None,
        }


def _load_baseline(baseline: Run | str | Path | None) -> Run | None:
    if baseline is None or isinstance(baseline, Run):
        return baseline
    from reveal_lab.io import load_run

    p = Path(baseline)
    if not p.exists():
        raise FileNotFoundError(f"baseline run {p} does not exist (a collector directory, .txt or .parquet)")
    return load_run(p)


def watch(
    directory: str | Path,
    *,
    baseline: Run | str | Path | None = None,
    warmup_s: float = 30.0,
    window: WindowConfig | None = None,
    preset: str | Preset = "paper",
    policy: DetectionPolicy | None = None,
    jsonl: str | Path | None = None,
    duration_s: float | None = None,
    max_windows: int | None = None,
    idle_exit_s: float | None = None,
    poll_s: float = 0.1,
    wait_s: float = 30.0,
    from_start: bool = True,
    show: str = "anomalies",
    echo: Callable[[str], None] | None = print,
    on_verdict: Callable[[Verdict], None] | None = None,
) -> WatchSummary:
    """Follow the collector output ``directory`` and score each window as it completes.

    Parameters
    ----------
    baseline : a reference run (``Run`` or a path ``load_run`` reads) to fit the
        detectors on; without it the first ``warmup_s`` seconds of the stream are used.
    window : windowing (default: the preset's, 3 s windows every 1 s).
    preset : window and detector settings (a name or a :class:`~reveal_lab.config.Preset`).
    policy : which windows are anomalous (:class:`~reveal_lab.pipeline.DetectionPolicy`,
        default ``POLICIES["default"]``; see :class:`LiveDetector`): its ``prune`` is the
        metric space (fitted on the baseline or on the warm-up; a ``pruning.json`` path
        reuses a saved one, e.g. ``reveal-lab detect``'s; ``False`` scores every metric), its
        ``sentinel_samples`` the sentinel rule's with a baseline.
    jsonl : append one JSON object per scored window (and per warm-up fit) to this file.
    duration_s, max_windows, idle_exit_s : stop after this long / this many windows /
        this long without new data (counted from the start while the run has not
        appeared yet, too). The watch also stops by itself once the collector has
        finished (its ``meta.json`` status is no longer ``running``), was killed (the
        status still ``running`` but nobody holds the run's ``.lock``) or its folder was
        deleted, and everything it wrote was read. Without any, runs until interrupted or
        the run ends.
    wait_s : how long ``directory`` may take to appear (or, existing but empty, to
        hold a run) before :class:`FileNotFoundError`; a path that is a file, or a folder
        holding something else than a collector run, raises at once. Also how many seconds
        of stream the warm-up goes on past ``warmup_s`` while it holds fewer complete
        windows than :attr:`LiveDetector.min_warmup_windows` (gap windows of a collector
        that starts late or misses ticks).
    show : what ``echo`` prints: ``"anomalies"`` (default), ``"all"`` (every
        window) or ``"none"``.
    on_verdict : called with every :class:`Verdict` (warm-up ones included).
    """
    if show not in ("anomalies", "all", "none"):
        raise ValueError(f"show must be 'anomalies', 'all' or 'none', got {show!r}")
    directory = Path(directory)
    check_run_folder(directory)
    p = preset if isinstance(preset, Preset) else get_preset(preset)
    cfg = window or p.window
    det = LiveDetector(
        cfg,
        p.detect,
        warmup_s=warmup_s,
        warmup_wait_s=wait_s,
        baseline=_load_baseline(baseline),
        policy=policy,
        prune_threshold=p.prune.threshold,
    )
    summary = WatchSummary(fitted_on=det.fitted_on)
    out: IO[str] | None = None
    if jsonl is not None:
        Path(jsonl).parent.mkdir(parents=True, exist_ok=True)
        out = open(jsonl, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - closed in finally
    say = echo or (lambda _msg: None)
    t_begin = time.monotonic()
    # whether the run has started is settled before "watching" is said: a folder deleted
    # after that line is then always named as deleted, however soon it goes
    started = (directory / "meta.json").exists()
    if det.fitted:
        say(f"watching {directory}")
        _announce_fit(det, out, say)
    else:
        say(
            f"watching {directory}: warm-up {warmup_s:g} s, then scoring {cfg.window_s:g} s windows "
            f"every {cfg.stride_s:g} s"
        )
    try:
        with CollectorFollower(directory, from_start=from_start) as follower:
            try:
                _follow(
                    follower,
                    det,
                    summary,
                    out,
                    say,
                    show,
                    on_verdict,
                    t_begin,
                    duration_s,
                    idle_exit_s,
                    max_windows,
                    poll_s,
                    directory,
                    wait_s,
                    started,
                )
            except KeyboardInterrupt:
                summary.stopped = "interrupted"
                say("interrupted")
            summary.follow = follower.stats.as_dict()
        summary.pruning = _pruning_info(det, det.policy.prune)
        if summary.scored == 0:
            summary.nothing_scored = _why_nothing(summary, det, warmup_s, directory)
            say(f"scored no window: {summary.nothing_scored}")
    finally:
        if out is not None:
            out.close()
        summary.seconds = time.monotonic() - t_begin
    return summary


def _follow(
    follower: CollectorFollower,
    det: LiveDetector,
    summary: WatchSummary,
    out: IO[str] | None,
    say: Callable[[str], None],
    show: str,
    on_verdict: Callable[[Verdict], None] | None,
    t_begin: float,
    duration_s: float | None,
    idle_exit_s: float | None,
    max_windows: int | None,
    poll_s: float,
    directory: Path,
    wait_s: float,
    seen_run: bool,
) -> None:
    last_data = t_begin  # --idle-exit holds in every state, before the first data too
    announced = det.fitted
    finished_polls = 0
    while True:
        now = time.monotonic()
        if duration_s is not None and now - t_begin >= duration_s:
            summary.stopped = f"--duration {duration_s:g} s reached"
            return
        if idle_exit_s is not None and now - last_data >= idle_exit_s:
            summary.stopped = f"no new data for {idle_exit_s:g} s (--idle-exit)"
            return
        if not seen_run:
            seen_run = _run_started(directory, now - t_begin, wait_s)
        t_poll = time.perf_counter()
        rows = follower.poll()
        if rows is None:
            ended = _collector_ended(directory) if seen_run else None
            if ended is not None:
                # the collector has stopped: stop once a further poll finds nothing new
                finished_polls += 1
                if finished_polls >= 2:
                    summary.stopped = ended
                    say(f"{directory}: {ended}; everything it wrote was read")
                    return
            time.sleep(poll_s)
            continue
        finished_polls = 0
        t_push = time.perf_counter()
        summary.poll_ms.append((t_push - t_poll) * 1e3)
        last_data = time.monotonic()
        summary.rows += rows.height
        verdicts = det.push(rows)
        summary.push_ms.append((time.perf_counter() - t_push) * 1e3)
        for v in verdicts:
            summary.windows += 1
            if on_verdict is not None:
                on_verdict(v)
            if v.phase == "warmup":
                summary.warmup_windows += 1
            elif v.phase == "gap":
                summary.gaps += 1
            else:
                summary.scored += 1
                summary.compute_ms.append(v.compute_ms)
                summary.anomalies += int(v.anomalous)
                if out is not None:
                    out.write(json.dumps({"event": "window", **v.to_dict()}, default=float) + "\n")
            if show == "all" or (show == "anomalies" and v.anomalous):
                say(v.line())
            if det.fitted and not announced:
                announced = True
                # the first fit (the warm-up): a refit may follow it within the same rows
                summary.fitted_on = det.fits[0]
                _announce_fit(det, out, say, det.fits[0])
        last_data = time.monotonic()  # idle time counts from when this data was handled
        if max_windows is not None and summary.scored >= max_windows:
            summary.stopped = f"--max-windows {max_windows} reached"
            return


#: what a collector run folder may hold (see collect/FORMAT.md)
_RUN_FILE = re.compile(
    r"^(meta\.json|channels\.json)(\.tmp)?$"
    r"|^(journal-\d{6}\.bin|segment-\d{6}\.parquet(\.tmp)?)$"
    r"|^\.(lock|reserve)$"
)


def _announce_fit(
    det: LiveDetector, out: IO[str] | None, say: Callable[[str], None], on: str | None = None
) -> None:
    """Say what the detectors were fitted ``on`` (default: their last fit's) and in which metric
    space (and log it to the JSONL)."""
    on = on or det.fitted_on
    space = _pruning_info(det, det.pruning is not None)
    where = f"pruned space of {space['n_selected']} metrics ({space['source']})" if space["applied"] else "every metric"
    say(f"detectors fitted on {on}; {len(det.keys or [])} features; {where}")
    if out is not None:
        event = {"event": "fitted", "on": on, "n_features": len(det.keys or []), "pruning": space}
        out.write(json.dumps(event) + "\n")


def _pruning_info(det: LiveDetector, prune: Any) -> dict[str, Any]:
    if det.pruning is None:
        why = (
            "every metric (prune=False)"
            if prune is False
            else "every metric (a stream alone is not pruned; prune=True fits a space on its warm-up)"
            if prune is None
            else "not fitted yet (the warm-up did not complete)"
        )
        return {"applied": False, "source": why}
    return {"applied": True, "source": det.pruning_source, "n_selected": len(det.pruning.selected)}


def check_run_folder(directory: Path) -> None:
    """Raise at once when ``directory`` cannot become a collector run: a file, or a
    folder holding other things than a run's files (e.g. a dataset folder)."""
    if directory.exists() and not directory.is_dir():
        raise NotADirectoryError(
            f"{directory} is a file; watch needs a collector run folder (reveal-lab collect --out DIR)"
        )
    if directory.is_dir():
        names = [p.name for p in directory.iterdir()]
        other = [n for n in names if not _RUN_FILE.match(n)]
        if other and "meta.json" not in names:
            raise ValueError(
                f"{directory} is not a collector run folder: no meta.json, and it holds "
                f"{len(other)} other entries (e.g. {', '.join(sorted(other)[:3])})"
            )


def _run_started(directory: Path, waited_s: float, wait_s: float) -> bool:
    """Whether the run's ``meta.json`` exists; raises once ``wait_s`` passed without it."""
    if (directory / "meta.json").exists():
        return True
    if waited_s >= wait_s:
        if not directory.exists():
            raise FileNotFoundError(
                f"{directory} does not exist: no collector started writing into it within {wait_s:g} s "
                "(start `reveal-lab collect --out DIR` first, or wait longer with --wait)"
            )
        raise FileNotFoundError(
            f"{directory} holds no collector run (no meta.json) after {wait_s:g} s "
            "(is a collector writing into it? --wait waits longer)"
        )
    return False


def _collector_ended(directory: Path) -> str | None:
    """Why no more data will come from the run in ``directory``, or ``None`` while its
    collector may still write: its ``meta.json`` status is no longer ``running``; the
    folder was deleted; or the status still says ``running`` but nobody holds the run's
    ``.lock`` (the collector holds an ``flock`` on it for its whole life: it was killed,
    e.g. ``kill -9``, or its machine restarted)."""
    if not directory.is_dir():
        return "the run folder was deleted while it was watched"
    status = _run_status(directory)
    if status is not None and status != "running":
        return f"the collector finished (status {status})"
    if status == "running" and not _lock_held(directory / ".lock"):
        pid = _lock_pid(directory / ".lock")
        return (
            f"the collector ({pid}) is no longer running, though meta.json still says 'running' "
            "(it was killed, e.g. with kill -9, or its machine restarted)"
        )
    return None


def _lock_held(path: Path) -> bool:
    """Whether a process holds the collector's ``flock`` on ``path`` (``True`` when that
    cannot be told: no lock file, or one this user cannot open)."""
    import fcntl
    import os

    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # a file system without flock: cannot tell
        return True
    finally:
        os.close(fd)  # releases the shared lock, if it was taken
    return False


def _lock_pid(path: Path) -> str:
    try:
        pid = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid.isdigit() else "its pid unknown"


def _run_status(directory: Path) -> str | None:
    try:
        return json.loads((directory / "meta.json").read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        return None


def _why_nothing(summary: WatchSummary, det: LiveDetector, warmup_s: float, directory: Path) -> str:
    if summary.rows == 0:
        return f"no data arrived from {directory} ({summary.stopped or 'stopped'})"
    if not det.fitted:
        return (
            f"the stream ended during the {warmup_s:g} s warm-up ({summary.warmup_windows} warm-up "
            f"window(s), {summary.rows} samples; {summary.stopped or 'stopped'}): give a shorter --warmup "
            "or fit on a --baseline run"
        )
    return f"no window completed after the fit ({summary.rows} samples; {summary.stopped or 'stopped'})"
