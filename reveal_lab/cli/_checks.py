"""Checks ``detect`` makes on its inputs before and after a detection: the run in its own
baseline, a saved pruning that barely overlaps the run, workloads that differ, too few
windows for thresholds fit on the run itself; and the names of the files a report folder
holds (for :class:`reveal_lab.io.StagedFolder`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = [
    "REPORT_OUTPUTS",
    "MIN_SELF_WINDOWS",
    "without_own_run",
    "check_pruning_overlap",
    "workload_warning",
    "few_windows_warning",
    "check_enough_samples",
    "check_writable_folder",
    "keep_inputs_in_report",
    "check_stride",
    "check_warmup",
]

#: every file ``detect`` writes into its report folder (glob patterns)
REPORT_OUTPUTS = (
    "anomalies.csv",
    "summary.json",
    "report.md",
    "report.html",
    "sentinels.csv",
    "crosshost.csv",
    "episodes.csv",
    "pruning.json",
    "pruning_*.json",
)
#: thresholds fit on the run itself (``--thresholds self``) need at least this many windows:
#: with fewer, "the top share of the run's windows" is one window or none, so the windows
#: flagged say nothing about the run
MIN_SELF_WINDOWS = 20


def without_own_run(path: str, baseline_paths: Sequence[str] | None, baseline: list | None):  # noqa: ANN201
    """``(baseline runs other than the run at path, a note or None)``: a run is never part of
    its own baseline (same file by content, however it is spelled)."""
    if not baseline or not baseline_paths:
        return baseline, None
    from reveal_lab.io import run_identity

    me = run_identity(path)
    keep = [b for p, b in zip(baseline_paths, baseline, strict=True) if run_identity(p) != me]
    if len(keep) == len(baseline):
        return baseline, None
    note = (
        f"{path} is also a --baseline run: left out of its own baseline "
        f"({len(keep)} other baseline run(s) remain"
        + ("; the run is detected alone)" if not keep else ")")
    )
    return (keep or None), note


def check_pruning_overlap(pruning: Any, run: Any, source: str, *, force: bool) -> str | None:  # noqa: ANN401
    """A note saying how many of a saved pruning's metrics the run has; refuses (``ValueError``)
    below :data:`reveal_lab.pipeline.MIN_BASELINE_OVERLAP` of them unless ``force``."""
    from reveal_lab.derive import add_derived
    from reveal_lab.pipeline import MIN_BASELINE_OVERLAP, select_metrics
    from reveal_lab.telemetry import metric_columns, metric_key

    sel = set(pruning.selected)
    if not sel:
        raise ValueError(f"--pruning {source}: 'selected' is empty, so there is no metric to score")
    cols = select_metrics(metric_columns(add_derived(run.frame)), sel)
    have = {c if c in sel else metric_key(c) for c in cols} & sel
    share = len(have) / len(sel)
    note = (
        f"{run.run_id}: the run has {len(have)} of the {len(sel)} metrics of --pruning {source} "
        f"({100 * share:.0f} %)"
    )
    if share < MIN_BASELINE_OVERLAP:
        missing = sorted(sel - have)[:3]
        if not force:
            raise ValueError(
                f"{note}, under {100 * MIN_BASELINE_OVERLAP:.0f} %: the file was fitted on other "
                f"metrics (missing e.g. {missing}); fit a pruning on this kind of run, give --no-prune, "
                "or --force to score the few it has"
            )
        return note + " (--force: scored anyway)"
    return note if have != sel else None


def _workload(run: Any) -> str | None:  # noqa: ANN401 - a Run
    m = run.meta
    if not m.workload:
        return None
    prefix = (m.extra or {}).get("prefix")
    return f"{prefix} {m.workload}" if prefix else str(m.workload)


def workload_warning(run: Any, baseline: Sequence | None) -> str | None:  # noqa: ANN401
    """A warning when the run's workload (phase and model/task/data, from the file name or
    ``meta_lab.csv``) differs from a baseline run's: its windows are then compared with
    another program's normal behaviour."""
    mine = _workload(run)
    if mine is None or not baseline:
        return None
    other = sorted({w for b in baseline if (w := _workload(b)) is not None and w != mine})
    if not other:
        return None
    return (
        f"{run.run_id}: workload {mine!r} differs from the baseline's {other[:3]}: a window that "
        "looks anomalous may only be the other workload's normal behaviour; give baseline runs of "
        "the same workload"
    )


def check_writable_folder(path: str, flag: str = "--out", *, make: bool = True) -> None:
    """Refuse (``ValueError``) an output folder that cannot be made or written, before any work.

    With ``make=False`` nothing is made or written: the first folder on the way that exists is
    looked at, and a file there, or a folder this user cannot write, is refused (a first look a
    command can take before its slow imports; the full check follows)."""
    import errno
    import os
    from pathlib import Path

    def refuse(why: object) -> ValueError:
        return ValueError(f"{flag} {path}: cannot write there ({why}); give a folder you can write")

    p = Path(path)
    if not make:
        there = p.absolute()
        while not there.exists() and there.parent != there:
            there = there.parent
        if not there.is_dir():
            raise refuse(os.strerror(errno.ENOTDIR))
        if not os.access(there, os.W_OK | os.X_OK):
            raise refuse(os.strerror(errno.EACCES))
        return
    probe = p / f".reveal-lab-write-check-{os.getpid()}"
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise refuse(exc.strerror or exc) from None


def keep_inputs_in_report(target: str, stage: Any, inputs: dict[str, Sequence[str | None]]) -> list[str]:  # noqa: ANN401
    """Copy into the new report folder ``stage`` every input file that lies directly in the
    report folder ``target`` under a name the report writes (:data:`REPORT_OUTPUTS`, e.g. a
    ``--pruning reveal-report/pruning.json`` of an earlier report): moving the new report into
    place would replace or remove it. ``inputs`` maps a flag to the paths given with it;
    returns a note per file kept.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "rep").mkdir(), (d / "new").mkdir(), (d / "rep" / "pruning.json").write_text("{}")
    >>> keep_inputs_in_report(str(d / "rep"), d / "new", {"--pruning": [str(d / "rep" / "pruning.json")]})[0][-59:]
    'lies in the report folder: kept in the new report as it was'
    >>> (d / "new" / "pruning.json").read_text()
    '{}'
    """
    import fnmatch
    import shutil
    from pathlib import Path

    folder = Path(target).resolve()
    notes = []
    for flag, paths in inputs.items():
        for given in filter(None, paths):
            p = Path(str(given).split("::", 1)[0])
            if not p.is_file() or p.resolve().parent != folder:
                continue
            name = p.resolve().name
            if any(fnmatch.fnmatch(name, pattern) for pattern in REPORT_OUTPUTS) and not (stage / name).exists():
                shutil.copy2(p, stage / name)
                notes.append(f"{flag} {given} lies in the report folder: kept in the new report as it was")
    return notes


def check_stride(window: Any) -> None:  # noqa: ANN401 - a WindowConfig
    """Refuse (``ValueError``) a stride longer than the window (``detect`` and ``watch``)."""
    if window.stride_s > window.window_s:
        raise ValueError(
            f"--stride {window.stride_s:g}s is longer than --window {window.window_s:g}s: the samples between "
            "windows would never be scored; give a stride no longer than the window"
        )


def check_warmup(warmup_s: float, window: Any) -> None:  # noqa: ANN401 - a WindowConfig
    """Refuse (``ValueError``) a ``watch --warmup`` that holds fewer than
    :data:`MIN_SELF_WINDOWS` windows: thresholds fit on so few flag the stream's ordinary
    windows (the same bound ``detect --thresholds self`` warns at).

    >>> from reveal_lab.config import WindowConfig
    >>> check_warmup(30.0, WindowConfig())
    >>> check_warmup(1.0, WindowConfig())
    Traceback (most recent call last):
    ...
    ValueError: --warmup 1s holds 0 complete windows of 3s every 1s, fewer than 20: thresholds fit on them would flag ordinary windows; give --warmup 22s or longer, or fit on a --baseline run
    """
    w = window
    held = max(0, math.floor((warmup_s - w.window_s) / w.stride_s + 1e-9) + 1) if warmup_s >= w.window_s else 0
    if held < MIN_SELF_WINDOWS:
        need = w.window_s + (MIN_SELF_WINDOWS - 1) * w.stride_s
        raise ValueError(
            f"--warmup {warmup_s:g}s holds {held} complete windows of {w.window_s:g}s every {w.stride_s:g}s, fewer "
            f"than {MIN_SELF_WINDOWS}: thresholds fit on them would flag ordinary windows; give --warmup "
            f"{need:g}s or longer, or fit on a --baseline run"
        )


def check_enough_samples(run: Any, window: Any) -> None:  # noqa: ANN401 - a Run, a WindowConfig
    """Refuse (``ValueError``) a run shorter than one window: there is nothing to score."""
    need = max(2, math.ceil(window.window_s / window.interval_s - 1e-9))
    n = run.frame.height
    if n < need:
        raise ValueError(
            f"{run.run_id}: {n} sample(s), fewer than one {window.window_s:g} s window holds "
            f"({need} at {window.interval_s * 1000:g} ms): nothing to score; give a longer run or a "
            "shorter --window"
        )


def few_windows_warning(run_id: str, windows: int, thresholds: str, rate: float | None) -> str | None:
    """A warning when thresholds fit on the run itself rest on fewer than
    :data:`MIN_SELF_WINDOWS` windows."""
    if thresholds != "self" or windows >= MIN_SELF_WINDOWS:
        return None
    r = rate or 0.01
    return (
        f"{run_id}: {windows} windows are too few for thresholds fit on the run itself (fewer than "
        f"{MIN_SELF_WINDOWS}; the top {100 * r:g} % of the windows is {math.ceil(r * windows)} window(s)): "
        "the windows flagged say nothing about the run; record a longer run or give --baseline runs"
    )
