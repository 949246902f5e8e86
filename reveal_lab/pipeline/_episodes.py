"""Anomalous episodes: what an operator counts (alerts, not windows), what moved in each, and
how much each slowed the job when its pace is known.

:func:`episodes_of` merges a host's anomalous windows less than ``gap_s`` apart into one
episode. :func:`what_moved` says in words which metrics of an episode's subsystem moved most
against the rest of the run (``GPU memory used (GPU 0) 14,400 → 53,100 MiB``).
:func:`episode_pace` sets each episode beside the job's step time (``--job-pace``): its
median step inside the episode over the median step outside every episode, with a bootstrap
interval, ranked by it; :func:`unexplained_slowdowns` lists where the job ran slow outside
every episode.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import numpy as np
import polars as pl

from reveal_lab.io import JobPace
from reveal_lab.telemetry import TIMESTAMP, UNSCORED_KINDS, classify, metric_columns

__all__ = [
    "EPISODE_GAP_S",
    "EPISODE_SCHEMA",
    "episodes_of",
    "what_moved",
    "episode_pace",
    "unexplained_slowdowns",
    "SLOW_FACTOR",
]

#: anomalous windows less than this many seconds apart are one episode
EPISODE_GAP_S = 10.0
#: a stretch of the job whose median step is this many times its median step outside every
#: episode is a slowdown (:func:`unexplained_slowdowns`)
SLOW_FACTOR = 1.1
EPISODE_SCHEMA: dict[str, pl.DataType] = {
    "host": pl.String,
    "episode": pl.Int64,
    "start": pl.Datetime("ms"),
    "end": pl.Datetime("ms"),
    "windows": pl.Int64,
    "subsystem": pl.String,
}


def _epoch(t: dt.datetime) -> float:
    """A naive UTC timestamp (the frames' clock) in epoch seconds."""
    return t.replace(tzinfo=dt.UTC).timestamp()


def episodes_of(windows: pl.DataFrame, gap_s: float = EPISODE_GAP_S) -> pl.DataFrame:
    """The episodes of ``windows`` (``host, start, end, anomalous, top_subsystem``): per host,
    anomalous windows less than ``gap_s`` seconds apart (one's start after the previous one's
    end) merged; each with its span, how many windows, and the subsystem most of them name.

    >>> t = [dt.datetime(2026, 1, 1, 0, 0, s) for s in (0, 1, 2, 30, 31)]
    >>> w = pl.DataFrame({"host": ["h"] * 5, "start": t, "end": [x + dt.timedelta(seconds=3) for x in t],
    ...                   "anomalous": [True, True, True, True, True], "top_subsystem": ["gpu"] * 3 + ["cpu"] * 2})
    >>> episodes_of(w).select("episode", "windows", "subsystem").rows()
    [(0, 3, 'gpu'), (1, 2, 'cpu')]
    """
    rows = []
    a = windows.filter(pl.col("anomalous")).sort("host", "start")
    for (host,), part in a.group_by("host", maintain_order=True):
        cur: dict | None = None
        for r in part.iter_rows(named=True):
            if cur is not None and (r["start"] - cur["end"]).total_seconds() < gap_s:
                cur["end"] = max(cur["end"], r["end"])
                cur["subs"].append(r["top_subsystem"])
                continue
            if cur is not None:
                rows.append(cur)
            cur = {"host": host, "start": r["start"], "end": r["end"], "subs": [r["top_subsystem"]]}
        if cur is not None:
            rows.append(cur)
    out = []
    for i, e in enumerate(rows):
        subs = [s for s in e["subs"] if s]
        top = max(set(subs), key=lambda s: (subs.count(s), s)) if subs else None
        out.append({"host": e["host"], "episode": i, "start": e["start"], "end": e["end"],
                    "windows": len(e["subs"]), "subsystem": top})
    return pl.DataFrame(out, schema=EPISODE_SCHEMA)


def what_moved(
    frame: pl.DataFrame, episode: dict, others: Sequence[dict], subsystem: str | None, k: int = 3
) -> str:
    """The ``k`` metrics of ``subsystem`` in ``frame`` (one host's raw values) whose median
    inside ``episode`` (``start``, ``end``) is farthest from their median outside every episode
    of ``others`` (in units of their spread there, at least 1 % of their level), in words:
    ``"GPU memory used (GPU 0) 14,400 → 53,100 MiB, ..."``; empty when nothing moved."""
    from reveal_lab.attribution import format_value, readable_metric

    if frame.is_empty() or subsystem is None:
        return ""
    ts = frame[TIMESTAMP]
    inside = ((ts >= episode["start"]) & (ts < episode["end"])).to_numpy()
    calm = np.ones(frame.height, dtype=bool)
    for o in others:
        calm &= ~((ts >= o["start"]) & (ts < o["end"])).to_numpy()
    if not inside.any() or not calm.any():
        return ""
    moved = []
    for c in metric_columns(frame):
        info = classify(c)
        if info.subsystem != subsystem or info.kind in UNSCORED_KINDS:
            continue
        x = frame[c].cast(pl.Float64, strict=False).to_numpy()
        a, b = x[inside], x[calm]
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        if not a.size or not b.size:
            continue
        ma, mb = float(np.median(a)), float(np.median(b))
        spread = max(1.4826 * float(np.median(np.abs(b - mb))), 0.01 * abs(mb), 1e-9)
        moved.append((abs(ma - mb) / spread, c, mb, ma))
    moved = [m for m in sorted(moved, key=lambda m: (-m[0], m[1])) if m[0] >= 3][:k]
    unit = {c: (c.rsplit("[", 1)[1].rstrip("]") if c.endswith("]") else "") for _, c, _, _ in moved}
    return ", ".join(
        f"{readable_metric(c)} {format_value(b)} → {format_value(a)}{(' ' + unit[c]) if unit[c] not in ('', '-') else ''}"
        for _, c, b, a in moved
    )


def _bootstrap_ratio(inside: np.ndarray, base: np.ndarray, n: int, seed: int) -> tuple[float, float]:
    """A 95 % percentile bootstrap interval of ``median(inside) / median(base)``."""
    rng = np.random.default_rng(seed)
    a = np.median(rng.choice(inside, size=(n, inside.size)), axis=1)
    b = np.median(rng.choice(base, size=(n, base.size)), axis=1)
    r = a / b
    return float(np.quantile(r, 0.025)), float(np.quantile(r, 0.975))


def _calm_steps(pace: JobPace, spans: Sequence[tuple[float, float]], within: tuple[float, float] | None) -> np.ndarray:
    """The steps that start outside every span of ``spans`` (and inside ``within``)."""
    keep = np.ones(pace.t.size, dtype=bool)
    if within is not None:
        keep &= (pace.t >= within[0]) & (pace.t < within[1])
    for s, e in spans:
        keep &= ~((pace.t >= s) & (pace.t < e))
    return pace.step_s[keep]


def episode_pace(
    episodes: pl.DataFrame,
    pace: JobPace,
    *,
    within: tuple[float, float] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> pl.DataFrame:
    """``episodes`` with the job's pace beside each: ``steps`` (the job's steps that start in
    it), ``step_s`` (their median), ``base_step_s`` (the median step outside every episode,
    within ``within`` epoch seconds when given), ``slowdown`` (their ratio) and its 95 %
    bootstrap interval (``slowdown_low``, ``slowdown_high``; ``n_boot`` resamples of each side,
    seeded), and ``rank`` (1: the largest slowdown; episodes without steps last).

    >>> t0 = dt.datetime(2026, 1, 1)
    >>> ep = pl.DataFrame({"host": ["h"], "episode": [0], "start": [t0 + dt.timedelta(seconds=10)],
    ...                    "end": [t0 + dt.timedelta(seconds=20)], "windows": [8], "subsystem": ["gpu"]})
    >>> t = _epoch(t0) + np.arange(0, 30, 0.5)
    >>> p = JobPace(t, np.where((t >= _epoch(t0) + 10) & (t < _epoch(t0) + 20), 0.2, 0.1))
    >>> episode_pace(ep, p).select("steps", "slowdown", "rank").rows()
    [(20, 2.0, 1)]
    """
    spans = [(_epoch(s), _epoch(e)) for s, e in zip(episodes["start"], episodes["end"], strict=True)]
    base = _calm_steps(pace, spans, within)
    base_med = float(np.median(base)) if base.size else float("nan")
    cols: dict[str, list] = {k: [] for k in ("steps", "step_s", "base_step_s", "slowdown", "slowdown_low", "slowdown_high")}
    for i, (s, e) in enumerate(spans):
        inside = pace.steps_between(s, e)
        med = float(np.median(inside)) if inside.size else float("nan")
        lo, hi = _bootstrap_ratio(inside, base, n_boot, seed + i) if inside.size and base.size else (np.nan, np.nan)
        for k, v in zip(cols, (inside.size, med, base_med, med / base_med, lo, hi), strict=True):
            cols[k].append(v)
    out = episodes.with_columns(
        pl.Series("steps", cols["steps"], dtype=pl.Int64),
        *[pl.Series(k, cols[k], dtype=pl.Float64) for k in list(cols)[1:]],
    )
    order = out.with_row_index("_i").sort("slowdown", descending=True, nulls_last=True)
    rank = {int(i): r + 1 for r, i in enumerate(order["_i"].to_list())}
    return out.with_columns(rank=pl.Series([rank[i] for i in range(out.height)], dtype=pl.Int64))


def unexplained_slowdowns(
    pace: JobPace,
    episodes: pl.DataFrame,
    *,
    within: tuple[float, float] | None = None,
    window_s: float = 5.0,
    factor: float = SLOW_FACTOR,
) -> list[tuple[float, float, float]]:
    """Where the job ran slow outside every episode: ``(start, end, ratio)`` in epoch seconds,
    stretches of ``window_s`` seconds whose median step is at least ``factor`` times the
    median step outside every episode (within ``within``), merged when they touch, none of
    them overlapping an episode."""
    spans = [(_epoch(s), _epoch(e)) for s, e in zip(episodes["start"], episodes["end"], strict=True)]
    base = _calm_steps(pace, spans, within)
    if not base.size or not pace.t.size:
        return []
    med = float(np.median(base))
    lo = pace.t[0] if within is None else max(within[0], pace.t[0])
    hi = pace.t[-1] if within is None else min(within[1], pace.t[-1])
    out: list[tuple[float, float, float]] = []
    for a in np.arange(lo, hi, window_s):
        b = a + window_s
        if any(a < e and b > s for s, e in spans):
            continue
        m = pace.median_between(a, b)
        if np.isfinite(m) and m >= factor * med:
            if out and abs(out[-1][1] - a) < 1e-9:
                s0, _, r0 = out[-1]
                out[-1] = (s0, b, max(r0, m / med))
            else:
                out.append((float(a), float(b), m / med))
    return out
