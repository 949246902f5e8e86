"""Was a fault visible at all, and where? The raw evidence of each labelled episode.

A missed episode has two possible reasons: the telemetry never showed the fault, or it did
and the detectors (their features, the pruned space, their agreement) did not pick it up.
:func:`episode_evidence` tells them apart without any detector. For each episode label and
each host of its run (the fault's host and its peers: a packet lost on one host's link is
retransmitted by the host that sent it), every metric's mean over the episode is set beside
the means of the same metric over every span of the same length in the workload's
fault-free runs on that host (sliding by one second). A metric is *beyond* when the episode
mean lies outside the whole fault-free range; its ``exceedance`` is how far, in units of that
range (``(mean - max) / max(max - min, floor)``, or below the minimum alike; ``floor`` is
1 % of the metric's typical level, or 10⁻⁹: a counter that never moved in any fault-free
span and moves in the episode is beyond by orders of magnitude).

A fault run can differ from the fault-free runs before its fault starts (another recording
slot, another machine state), so the run's own calm span is the control: the equally long
span that ends where the run's first episode starts (when the run has that much calm after
its workload started). A metric already beyond its fault-free range there is not evidence of
the episode. ``n_beyond`` counts the metrics beyond in the episode and not in the calm span;
``calm_beyond`` counts those beyond in the calm span (what differs without the fault).
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from reveal_lab.evaluation._evaluate import fault_free_refs
from reveal_lab.io import load_run, read_labels, read_meta
from reveal_lab.telemetry import TIMESTAMP, TelemetryError, classify, metric_columns

__all__ = ["EVIDENCE_COLUMNS", "episode_evidence", "evidence_summary", "span_envelope"]

#: the columns of :func:`episode_evidence`'s frame (one row per label × host × top metric)
EVIDENCE_COLUMNS = (
    "run",
    "host",
    "start",
    "fault_type",
    "magnitude",
    "expected_subsystem",
    "evidence_host",
    "rank",
    "metric",
    "subsystem",
    "episode_mean",
    "faultfree_min",
    "faultfree_max",
    "exceedance",
    "n_beyond",
    "calm_beyond",
)


def span_envelope(X: np.ndarray, length: int, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column of ``X`` (samples × metrics): min, max and median of the means over every
    ``length``-sample span, spans starting every ``step`` samples (NaN samples ignored).

    >>> lo, hi, med = span_envelope(np.array([[0.0], [0.0], [3.0], [0.0]]), 2, 1)
    >>> lo.tolist(), hi.tolist(), med.tolist()  # span means 0, 1.5, 1.5
    ([0.0], [1.5], [1.5])
    """
    return _envelope(_prefix_sums(X), length, step)


def _prefix_sums(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``X``, the running sums of its finite samples and their running counts,
    each with a leading row of zeros (what :func:`_envelope` takes the span means from)."""
    ok = np.isfinite(X)
    cs = np.vstack([np.zeros((1, X.shape[1])), np.cumsum(np.where(ok, X, 0.0), axis=0)])
    cn = np.vstack([np.zeros((1, X.shape[1])), np.cumsum(ok, axis=0)])
    return cs, cn


def _envelope(sums: tuple[np.ndarray, np.ndarray], length: int, step: int) -> tuple[np.ndarray, ...]:
    """:func:`span_envelope` from ``X``'s :func:`_prefix_sums`."""
    cs, cn = sums
    if cs.shape[0] - 1 < length or length < 1:
        n = cs.shape[1]
        return np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    starts = np.arange(0, cs.shape[0] - length, max(step, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (cs[starts + length] - cs[starts]) / (cn[starts + length] - cn[starts])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmin(means, axis=0), np.nanmax(means, axis=0), np.nanmedian(means, axis=0)


def _stamp(v: object) -> dt.datetime:
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=None)
    return dt.datetime.fromisoformat(str(v).strip()).replace(tzinfo=None)


def _values(frame: pl.DataFrame, cols: Sequence[str]) -> np.ndarray:
    """``frame``'s ``cols`` as float samples × metrics (a column the frame lacks is NaN)."""
    have = set(frame.columns)
    return np.column_stack(
        [
            frame[c].cast(pl.Float64, strict=False).to_numpy() if c in have else np.full(frame.height, np.nan)
            for c in cols
        ]
    ) if cols else np.empty((frame.height, 0))


def _between(frame: pl.DataFrame, a: dt.datetime, b: dt.datetime) -> pl.DataFrame:
    return frame.filter((pl.col(TIMESTAMP) >= a) & (pl.col(TIMESTAMP) <= b))


def _beyond(m: np.ndarray, lo: np.ndarray, hi: np.ndarray, med: np.ndarray) -> np.ndarray:
    """Exceedance of each mean beyond [lo, hi] in units of the range (0 inside, NaN unknown)."""
    floor = np.maximum(0.01 * np.abs(med), 1e-9)
    width = np.maximum(hi - lo, floor)
    with np.errstate(invalid="ignore"):
        out = np.where(m > hi, (m - hi) / width, np.where(m < lo, (lo - m) / width, 0.0))
    return np.where(np.isfinite(m) & np.isfinite(lo) & np.isfinite(hi), out, np.nan)


def episode_evidence(
    root: str | Path | None = None,
    *,
    top: int = 3,
    step_s: float = 1.0,
    trim: bool = True,
    runs: Sequence[str] | None = None,
) -> pl.DataFrame:
    """The strongest raw evidence of every episode label of a lab dataset (see the module doc).

    ``root``: a dataset folder with ``meta_lab.csv`` and ``labels.csv`` (``reveal-lab record``'s
    layout; default: the bundled ``data/lab``, as :func:`~reveal_lab.evaluation.evaluate_dataset`).
    For each label of scope ``episode`` (optionally only of ``runs``) and each host of its run,
    the ``top`` metrics by exceedance among those beyond their fault-free range (none when
    nothing is beyond: one row with ``metric`` null). Fault-free runs are those of the
    same workload, phase and host with ``fault == "none"``, each cut to its recorded workload
    span when ``trim`` (``workload_start``/``workload_end``).
    """
    from reveal_lab.pipeline import trim_run

    from reveal_lab.config import data_dir

    root = Path(root) if root is not None else data_dir()
    meta = read_meta(root / "meta_lab.csv")
    labels = read_labels(root / "labels.csv")
    if "scope" in labels.columns:
        labels = labels.filter(pl.col("scope").fill_null("episode") == "episode")
    if runs is not None:
        labels = labels.filter(pl.col("run").is_in(list(runs)))
    for col in ("run", "host", "fault", "workload", "phase", "source_file"):
        if col not in meta.columns:
            raise TelemetryError(f"meta lacks the lab column {col!r}", path=str(root / "meta_lab.csv"))
    cache: dict[str, pl.DataFrame] = {}

    def frame(row: dict) -> pl.DataFrame:
        sf = row["source_file"]
        if sf not in cache:
            path = root / sf.removeprefix("./")
            if not path.exists():
                raise TelemetryError("run file listed in meta_lab.csv is missing", path=str(path))
            run = load_run(path)
            if trim and row.get("workload_start") and row.get("workload_end"):
                run, _ = trim_run(run, span=(_stamp(row["workload_start"]), _stamp(row["workload_end"])))
            cache[sf] = run.frame
        return cache[sf]

    first_start = labels.group_by("run").agg(pl.col("start").min().alias("first"))
    firsts = dict(zip(first_start["run"].to_list(), first_start["first"].to_list(), strict=True))
    tasks = []  # (label, its base row, a host's meta row of its run), in the output's order
    for lab in labels.iter_rows(named=True):
        base_row = {
            "run": lab["run"],
            "host": lab["host"],
            "start": _stamp(lab["start"]),
            "fault_type": lab["fault_type"],
            "magnitude": lab.get("magnitude"),
            "expected_subsystem": lab.get("expected_subsystem"),
        }
        hosts = meta.filter(pl.col("run") == lab["run"]).sort("host")
        tasks += [(lab, base_row, row) for row in hosts.iter_rows(named=True)]
    # the hosts judged against the same fault-free runs one after another, so that each of those
    # runs' running sums (:func:`_prefix_sums`) is computed once per set of metrics and kept only
    # while they are in use
    group = [(row["workload"], row["phase"], row["host"]) for _, _, row in tasks]
    rank = {g: i for i, g in reversed(list(enumerate(group)))}
    rows_of: list[list[dict]] = [[] for _ in tasks]
    sums: dict[tuple[str, tuple[str, ...]], tuple[np.ndarray, np.ndarray]] = {}

    def ref_sums(row: dict, cols: list[str]) -> tuple[np.ndarray, np.ndarray]:
        key = (row["source_file"], tuple(cols))
        if key not in sums:
            sums[key] = _prefix_sums(_values(frame(row), cols))
        return sums[key]

    current = None
    for i in sorted(range(len(tasks)), key=lambda i: rank[group[i]]):
        if group[i] != current:
            current = group[i]
            sums.clear()
        lab, base_row, row = tasks[i]
        first = firsts.get(lab["run"])
        rows_of[i] = _host_evidence(lab, base_row, row, frame, ref_sums, meta, first, top, step_s)
    out = [r for rows in rows_of for r in rows]
    return pl.DataFrame(out, schema=_EVIDENCE_SCHEMA, strict=False).select(EVIDENCE_COLUMNS)


#: the columns of :func:`episode_evidence` before :data:`EVIDENCE_COLUMNS` orders them
_EVIDENCE_SCHEMA = {
    "run": pl.String,
    "host": pl.String,
    "start": pl.Datetime("ms"),
    "fault_type": pl.String,
    "magnitude": pl.Float64,
    "expected_subsystem": pl.String,
    "evidence_host": pl.String,
    "rank": pl.Int64,
    "metric": pl.String,
    "subsystem": pl.String,
    "episode_mean": pl.Float64,
    "faultfree_min": pl.Float64,
    "faultfree_max": pl.Float64,
    "exceedance": pl.Float64,
    "n_beyond": pl.Int64,
    "calm_beyond": pl.Int64,
}


def _host_evidence(lab, base_row, row, frame, ref_sums, meta, first, top, step_s):  # noqa: ANN001, ANN202
    """The evidence rows of label ``lab`` on the host of meta row ``row``: its ``top`` metrics
    beyond the fault-free range and not already beyond it in the run's calm span (``first``:
    the run's first label start), or one row with no metric; none when the host has no
    samples in the episode or no fault-free run. ``ref_sums(meta row, columns)``: a
    fault-free run's :func:`_prefix_sums` of those columns."""
    a, b = _stamp(lab["start"]), _stamp(lab["end"])
    f = frame(row)  # the fault run, cut to its workload span like the fault-free ones
    cols = metric_columns(f)
    ep = _values(_between(f, a, b), cols)
    if ep.shape[0] == 0:
        return []
    length = ep.shape[0]
    interval = max((b - a).total_seconds() / max(length - 1, 1), 1e-3)
    step = max(int(round(step_s / interval)), 1)
    refs = fault_free_refs(meta, row)
    envs = [_envelope(ref_sums(r, cols), length, step) for r in refs.iter_rows(named=True)]
    envs = [e for e in envs if np.isfinite(e[0]).any()]
    if not envs:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = np.nanmin(np.vstack([e[0] for e in envs]), axis=0)
        hi = np.nanmax(np.vstack([e[1] for e in envs]), axis=0)
        med = np.nanmedian(np.vstack([e[2] for e in envs]), axis=0)
        m = np.nanmean(ep, axis=0)
    ex = _beyond(m, lo, hi, med)
    calm_ex = None
    if first is not None:
        before = f.filter(pl.col(TIMESTAMP) < _stamp(first))
        if row.get("workload_start"):
            before = before.filter(pl.col(TIMESTAMP) >= _stamp(row["workload_start"]))
        if before.height >= length:
            calm_ex = _beyond(np.nanmean(_values(before.tail(length), cols), axis=0), lo, hi, med)
    # evidence of the episode: beyond the fault-free range, and not already beyond it in
    # the run's own calm span (that is this run, not the fault)
    specific = (ex > 0) & ~(calm_ex > 0) if calm_ex is not None else ex > 0
    n_beyond = int(specific.sum())
    calm = None if calm_ex is None else int(np.nansum(calm_ex > 0))
    order = [i for i in np.argsort(-np.nan_to_num(ex, nan=-1.0)) if specific[i]][:top]
    common = {**base_row, "evidence_host": row["host"], "n_beyond": n_beyond, "calm_beyond": calm}
    if not order:
        return [{**common, "rank": None, "metric": None}]
    return [
        {
            **common,
            "rank": k,
            "metric": cols[i],
            "subsystem": classify(cols[i]).subsystem,
            "episode_mean": float(m[i]),
            "faultfree_min": float(lo[i]),
            "faultfree_max": float(hi[i]),
            "exceedance": float(ex[i]),
        }
        for k, i in enumerate(order, 1)
    ]


def evidence_summary(evidence: pl.DataFrame, episodes: pl.DataFrame | None = None) -> dict:
    """Per episode label of :func:`episode_evidence`: was anything specific beyond its fault-free
    range, on its own host, or only on a peer? With ``episodes`` (``score_episodes``' frame,
    ``detected`` per label), also the labels the detectors missed although the telemetry
    showed them, each with its strongest metric.

    Returns ``{"episodes", "visible", "visible_at_host", "visible_only_on_peers", "missed_visible"}``.
    """
    key = ["run", "host", "start", "fault_type"]
    top = evidence.filter(pl.col("rank") == 1)
    labs = evidence.select(key).unique()
    at_host = top.filter(pl.col("evidence_host") == pl.col("host")).select(key).unique()
    anywhere = top.select(key).unique()
    out = {
        "episodes": labs.height,
        "visible": anywhere.height,
        "visible_at_host": at_host.height,
        "visible_only_on_peers": anywhere.join(at_host, on=key, how="anti").height,
    }
    if episodes is not None and {"detected", *key} <= set(episodes.columns):
        ep = episodes.with_columns(pl.col("start").cast(pl.Datetime("ms")))
        missed = ep.filter(~pl.col("detected").cast(pl.Boolean)).select(key)
        best = (
            top.sort("exceedance", descending=True)
            .group_by(key, maintain_order=True)
            .first()
            .join(missed, on=key, how="semi")
            .sort("run", "start")
        )
        out["missed_visible"] = [
            {
                "run": r["run"],
                "host": r["host"],
                "fault_type": r["fault_type"],
                "magnitude": r["magnitude"],
                "evidence_host": r["evidence_host"],
                "metric": r["metric"],
                "episode_mean": r["episode_mean"],
                "faultfree_max": r["faultfree_max"],
            }
            for r in best.iter_rows(named=True)
        ]
    return out
