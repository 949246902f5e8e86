"""Which span of a run is scored: the trimming rule.

Trimming (:func:`trim_run`) leaves out only what is known to lie outside the workload;
``trim`` is one of :data:`TRIM_RULES`, the same for ``detect``, ``evaluate`` and every study:

* ``span``: the recorded workload span of a **lab run** (``meta_lab.csv`` with
  ``workload_start``/``workload_end`` beside the run file, or these keys in the run's
  metadata), from the workload's first step to its last progress line; the collector's
  start, the interpreter start-up and the process teardown are left out. A run without a
  recorded span is scored whole (and says so).
* ``none``: the whole recording.
* ``active``: the span where utilisation is high (GPU utilisation where some varies, else
  ``CPU:Busy%.-``), smoothed by a 1 s rolling median: from the first to the last sample
  above the midpoint between its 5th and 95th percentiles, when that spread is at least
  ``min_spread`` points (else the whole run), less ``margin_s`` seconds (default 3 s, one
  window) inside both ends. On a host with intermittent jobs this selects the busiest job
  and leaves out the others: only on request.
* ``auto`` (default, :func:`resolve_trim`): ``span`` for a lab run (it has a recorded
  span); a public-dataset run (each file is one workload run) and a host recording (a
  collector folder: no workload span) are scored as they are.

Nothing is trimmed when the trimmed span would be shorter than ``min_keep_s``. Every
:class:`Trim` says what was left out and why (:meth:`Trim.describe`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from reveal_lab.io import workload_spans
from reveal_lab.telemetry import TIMESTAMP, Run, metric_columns, parse_metric_name

__all__ = [
    "TrimRule",
    "Trim",
    "TRIM_RULES",
    "run_source",
    "resolve_trim",
    "trim_arguments",
    "trim_run",
    "recorded_span",
    "active_span",
]


@dataclass(frozen=True)
class TrimRule:
    """Parameters of the trimming rule (see the module doc)."""

    margin_s: float = 3.0
    min_spread: float = 10.0
    smooth_s: float = 1.0
    min_keep_s: float = 6.0


#: what ``trim`` may be (see the module doc)
TRIM_RULES = ("auto", "span", "active", "none")


def run_source(run: Run) -> str:
    """What kind of recording ``run`` is, for :func:`resolve_trim`: ``lab`` (it has a
    recorded workload span, :func:`recorded_span`), ``host`` (a collector folder: no
    workload span) or ``public`` (a public-dataset file: one workload run)."""
    if recorded_span(run) is not None:
        return "lab"
    return "host" if run.meta.platform == "collector" else "public"


_AUTO_TRIM = {
    "lab": ("span", "a lab run: its recorded workload span"),
    "public": ("none", "a public-dataset run: each file is one workload run, scored as it is"),
    "host": ("none", "a host recording has no workload span: scored whole"),
}


def resolve_trim(trim: str, source: str) -> tuple[str, str]:
    """The trimming mode ``trim`` (one of :data:`TRIM_RULES`) means for a recording of kind
    ``source`` (:func:`run_source`), and why.

    >>> resolve_trim("auto", "lab")
    ('span', 'a lab run: its recorded workload span')
    >>> resolve_trim("auto", "host")[0], resolve_trim("active", "host")
    ('none', ('active', 'asked: trim=active'))
    """
    if trim not in TRIM_RULES:
        raise ValueError(f"trim must be one of {TRIM_RULES}, got {trim!r}")
    if trim != "auto":
        return trim, f"asked: trim={trim}"
    if source not in _AUTO_TRIM:
        raise ValueError(f"source must be one of {sorted(_AUTO_TRIM)}, got {source!r}")
    return _AUTO_TRIM[source]


def trim_arguments(trim: bool | str | TrimRule | None) -> tuple[str, TrimRule | None]:
    """``(mode, rule)`` from the values ``trim`` arguments take: a mode of :data:`TRIM_RULES`,
    ``True`` (``auto``), ``False``/``None`` (``none``) or a :class:`TrimRule` (``auto`` with
    that rule's parameters for ``active``).

    >>> trim_arguments(True), trim_arguments(False), trim_arguments("active")
    (('auto', None), ('none', None), ('active', None))
    """
    if isinstance(trim, TrimRule):
        return "auto", trim
    if trim is True:
        return "auto", None
    if trim is False or trim is None:
        return "none", None
    if trim not in TRIM_RULES:
        raise ValueError(f"trim must be one of {TRIM_RULES} (or True/False), got {trim!r}")
    return str(trim), None


@dataclass(frozen=True)
class Trim:
    """What :func:`trim_run` did: the kept span, how it was found, seconds cut at each end,
    the mode in force and the recording's own first and last timestamps."""

    start: dt.datetime | None
    end: dt.datetime | None
    how: str
    cut_start_s: float
    cut_end_s: float
    mode: str = "span"
    recording_start: dt.datetime | None = None
    recording_end: dt.datetime | None = None

    @property
    def recording_s(self) -> float | None:
        if self.recording_start is None or self.recording_end is None:
            return None
        return (self.recording_end - self.recording_start).total_seconds()

    def describe(self) -> str:
        """One sentence: what was scored, what was left out and why.

        >>> a = dt.datetime(2026, 1, 1)
        >>> print(Trim(a, a + dt.timedelta(seconds=90), "recorded workload span", 4.0, 2.0, "span",
        ...            a - dt.timedelta(seconds=4), a + dt.timedelta(seconds=92)).describe())
        ... # doctest: +NORMALIZE_WHITESPACE
        Scored 90.0 s of the 96.0 s recording: left out 4.0 s at the start and 2.0 s at the end
        (recorded workload span).
        """
        total = self.recording_s
        if self.cut_start_s + self.cut_end_s <= 0:
            whole = f"the whole {total:.1f} s recording" if total is not None else "the whole recording"
            return f"Scored {whole}: nothing left out ({self.how})."
        kept = (total or 0.0) - self.cut_start_s - self.cut_end_s
        of = f" of the {total:.1f} s recording" if total is not None else ""
        return (
            f"Scored {kept:.1f} s{of}: left out {self.cut_start_s:.1f} s at the start and "
            f"{self.cut_end_s:.1f} s at the end ({self.how})."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": None if self.start is None else str(self.start),
            "end": None if self.end is None else str(self.end),
            "how": self.how,
            "mode": self.mode,
            "cut_start_s": round(self.cut_start_s, 3),
            "cut_end_s": round(self.cut_end_s, 3),
            "recording_start": None if self.recording_start is None else str(self.recording_start),
            "recording_end": None if self.recording_end is None else str(self.recording_end),
            "left_out": self.describe(),
        }


def _parse_stamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.strip()).replace(tzinfo=None)


def recorded_span(run: Run) -> tuple[dt.datetime, dt.datetime] | None:
    """The recorded workload span of a lab run: ``workload_start``/``workload_end`` from
    the run's metadata or from a ``meta_lab.csv`` in the run file's folder or its parent."""
    ex = run.meta.extra or {}
    if ex.get("workload_start") and ex.get("workload_end"):
        return _parse_stamp(str(ex["workload_start"])), _parse_stamp(str(ex["workload_end"]))
    src = run.meta.source_path
    if not src or "::" in src:
        return None
    p = Path(src)
    for folder in (p.parent, p.parent.parent):
        csv = folder / "meta_lab.csv"
        if csv.is_file():
            span = workload_spans(csv).get(p.stem)
            if span is not None:
                return span
    return None


def _utilisation(frame: pl.DataFrame) -> pl.Series | None:
    gpu, cpu = [], []
    for c in metric_columns(frame):
        m = parse_metric_name(c)
        if m is None:
            continue
        f = m.field.lower()
        if m.source.upper().startswith("GPU") and "util" in f and "mem" not in f:
            gpu.append(c)
        elif m.source == "CPU" and m.field == "Busy%" and m.instance in ("-", None):
            cpu.append(c)
    for cols in (gpu, cpu):
        cols = [c for c in cols if (frame[c].drop_nulls().std() or 0.0) > 0]
        if cols:
            return frame.select(pl.mean_horizontal(cols)).to_series()
    return None


def active_span(frame: pl.DataFrame, rule: TrimRule | None = None) -> tuple[int, int, str]:
    """Row range ``[i, j)`` of the active span from utilisation (module doc), and how it was found."""
    rule = rule or TrimRule()
    n = frame.height
    u = _utilisation(frame)
    if u is None or n < 3:
        return 0, n, "no utilisation metric: whole run"
    ts = frame[TIMESTAMP]
    step = ts.diff().dt.total_milliseconds().median() or 100.0
    k = max(1, round(rule.smooth_s * 1000.0 / float(step)))
    s = u.fill_null(strategy="forward").fill_null(strategy="backward")
    s = s.rolling_median(k, min_samples=1, center=True).to_numpy()
    lo, hi = np.nanpercentile(s, [5, 95])
    if not hi - lo >= rule.min_spread:
        return 0, n, f"utilisation spread {hi - lo:.1f} < {rule.min_spread}: no idle phase, whole run"
    on = np.flatnonzero(s > (lo + hi) / 2)
    return int(on[0]), int(on[-1]) + 1, f"utilisation above {(lo + hi) / 2:.1f}"


def trim_run(
    run: Run,
    rule: TrimRule | None = None,
    *,
    span: tuple | None = None,
    mode: str = "auto",
    reason: str | None = None,
) -> tuple[Run, Trim]:
    """The run restricted to what ``mode`` keeps (one of :data:`TRIM_RULES`, module doc),
    and what was cut and why.

    ``span`` (start, end) overrides the mode (e.g. a span read elsewhere). ``reason``: why
    ``mode`` is in force, when the caller resolved it (default: :func:`resolve_trim`'s).

    Examples
    --------
    >>> from reveal_lab.synth import make_run
    >>> run = make_run(30, n_channels=20, seed=1).run
    >>> kept, trim = trim_run(run)
    >>> trim.mode, trim.cut_start_s, kept.frame.height == run.frame.height
    ('none', 0.0, True)
    >>> kept, trim = trim_run(run, mode="active")
    >>> trim.how.startswith("active span"), trim.cut_start_s >= 3.0, trim.cut_end_s >= 3.0
    (True, True, True)
    """
    rule = rule or TrimRule()
    f = run.frame
    if f.height < 2:
        return run, Trim(None, None, "too short to trim", 0.0, 0.0, "none")
    ts = f[TIMESTAMP]
    t0, t1 = ts.min(), ts.max()

    def whole(how: str, used: str) -> tuple[Run, Trim]:
        return run, Trim(t0, t1, how, 0.0, 0.0, used, t0, t1)

    if span is not None:
        how, used = "given span", "span"
    else:
        used, why = resolve_trim(mode, run_source(run) if mode == "auto" else "")
        why = reason or why
        if used == "none":
            return whole(why, "none")
        if used == "span":
            span = recorded_span(run)
            if span is None:
                return whole("no recorded workload span: the whole recording", "span")
            how = "recorded workload span"
    if span is not None:
        a, b = span
        if getattr(t0, "tzinfo", None) is None:
            a, b = a.replace(tzinfo=None), b.replace(tzinfo=None)
    else:
        i, j, how = active_span(f, rule)
        a = ts[i] + dt.timedelta(seconds=rule.margin_s)
        b = ts[j - 1] - dt.timedelta(seconds=rule.margin_s)
        how = f"active span ({how}), {rule.margin_s:g} s margin; asked: trim=active"
    a, b = max(a, t0), min(b, t1)
    if (b - a).total_seconds() < rule.min_keep_s:
        return whole(f"not trimmed: {how} keeps < {rule.min_keep_s:g} s", used)
    kept = f.filter(pl.col(TIMESTAMP).is_between(a, b))
    trim = Trim(a, b, how, (a - t0).total_seconds(), (t1 - b).total_seconds(), used, t0, t1)
    return Run(run.meta, kept, list(run.warnings)), trim
