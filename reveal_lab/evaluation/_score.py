"""Scoring flagged windows against ground-truth fault labels.

Everything here is a plain function over two frames, so it can be checked on hand-made
detections with known answers:

``windows``
    one row per scored window: ``run, host, window_id, start, end, flagged`` (bool) and,
    for attribution, ``share_<subsystem>`` columns (the window's evidence share per
    subsystem, null when not flagged) and/or ``top_subsystem``; ``baseline`` (bool) marks
    windows of fault-free runs.
``labels``
    ``run, host, fault_type, start, end, expected_subsystem`` and optionally ``scope``
    (``episode`` | ``run``) and ``magnitude`` (:func:`reveal_lab.io.read_labels`).

Definitions (per fault type and overall):

* **episode recall** -- an episode is detected when at least one flagged window of the
  *labelled host* overlaps ``[start, end)`` (windows are ``[start, end)`` too). A
  ``scope="run"`` label (a configuration difference lasting the whole run) is detected
  when at least ``run_min_share`` of the host's windows are flagged; overlap alone would
  be trivially true.
* **window precision** -- of the flagged windows of labelled hosts in faulted runs, the
  share that overlaps an episode of that host (``grace_s`` widens episodes at the end to
  allow for after-effects such as writeback; default 0).
* **top-1 / top-3 attribution** -- on detected episodes: subsystems ranked by their summed
  evidence share over the flagged windows overlapping the episode (ties and missing
  shares fall back to counting ``top_subsystem``); correct when the expected subsystem is
  first / among the first three.
* **false-alarm share** -- flagged windows / all windows of fault-free (baseline) runs.
* **score AUC** -- threshold-free: the ROC AUC of the windows' ``combined`` score for
  telling windows that overlap an episode from the other windows of the labelled hosts of
  the same runs (0.5 = no signal); empty without a ``combined`` column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import polars as pl

from reveal_lab.numeric import sustained
from reveal_lab.telemetry import SUBSYSTEMS, TelemetryError

__all__ = [
    "score_episodes",
    "summarize",
    "false_alarms",
    "persistent",
    "EPISODE_COLUMNS",
    "TABLE_COLUMNS",
    "OVERALL_BY_METHOD",
    "OVERALL_DETECTORS_ONLY",
]

EPISODE_COLUMNS = (
    "run",
    "host",
    "fault_type",
    "magnitude",
    "scope",
    "start",
    "end",
    "expected_subsystem",
    "n_windows",
    "n_flagged",
    "detected",
    "ranking",
    "top1",
    "top3",
)
TABLE_COLUMNS = (
    "fault_type",
    "episodes",
    "detected",
    "episode_recall",
    "flagged_windows",
    "window_precision",
    "top1_accuracy",
    "top3_accuracy",
    "baseline_windows",
    "false_alarm_share",
    "score_auc",
)


def _check(frame: pl.DataFrame, cols: tuple[str, ...], what: str) -> None:
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise TelemetryError(f"{what} lacks columns {missing}", column=missing[0])


def _ranking(w: pl.DataFrame) -> list[str]:
    """Subsystems of flagged windows ranked by summed share (then by top-subsystem count)."""
    score = {s: 0.0 for s in SUBSYSTEMS}
    count = {s: 0 for s in SUBSYSTEMS}
    for s in SUBSYSTEMS:
        col = f"share_{s}"
        if col in w.columns:
            score[s] = float(w[col].fill_null(0.0).fill_nan(0.0).sum())
    if "top_subsystem" in w.columns:
        for s in w["top_subsystem"].drop_nulls().to_list():
            if s in count:
                count[s] += 1
    ranked = sorted(SUBSYSTEMS, key=lambda s: (-score[s], -count[s], s))
    return [s for s in ranked if score[s] > 0 or count[s] > 0]


def persistent(windows: pl.DataFrame, k: int) -> pl.DataFrame:
    """Keep a window flagged only inside a run of at least ``k`` consecutive flagged
    windows (consecutive ``window_id`` of the same ``run`` and ``host``:
    :func:`reveal_lab.numeric.sustained` with the window ids); ``k=1`` changes nothing. An isolated flagged window between unflagged ones is dropped; every window
    of a long enough run stays flagged (its first ones included).

    Examples
    --------
    >>> w = pl.DataFrame({"run": ["r"] * 7, "host": ["a"] * 7, "window_id": range(7),
    ...                   "flagged": [True, False, True, True, False, True, True]})
    >>> persistent(w, 2)["flagged"].to_list()
    [False, False, True, True, False, True, True]
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    _check(windows, ("run", "host", "window_id", "flagged"), "windows")
    if k == 1 or windows.height == 0:
        return windows
    w = windows.with_columns(pl.int_range(pl.len()).alias("_row")).sort("run", "host", "window_id")
    # ids that jump wherever (run, host) changes: a run of windows never spans two hosts
    new_key = (pl.col("run") != pl.col("run").shift(1)) | (pl.col("host") != pl.col("host").shift(1))
    step = int(w["window_id"].max() or 0) - int(w["window_id"].min() or 0) + 2
    ids = w.select(pl.col("window_id") + step * new_key.fill_null(False).cast(pl.Int64).cum_sum())
    kept = sustained(w["flagged"].to_numpy(), k, ids=ids.to_series().to_numpy())
    return w.with_columns(flagged=pl.Series(kept)).sort("_row").drop("_row")


def episode_row(
    label: Mapping[str, Any], scope: str, n: int, k: int, detected: bool, ranking: Sequence[str]
) -> dict[str, Any]:
    """One scored label (a row of :data:`EPISODE_COLUMNS`' shape): ``n`` windows looked at,
    ``k`` flagged, the subsystems ranked (most anomalous first)."""
    exp = label["expected_subsystem"]
    return {
        "run": label["run"],
        "host": label["host"],
        "fault_type": label["fault_type"],
        "magnitude": label.get("magnitude"),
        "scope": scope,
        "start": label["start"],
        "end": label["end"],
        "expected_subsystem": exp,
        "n_windows": n,
        "n_flagged": k,
        "detected": detected,
        "ranking": ">".join(ranking),
        "top1": (bool(ranking) and ranking[0] == exp) if detected else None,
        "top3": (exp in ranking[:3]) if detected else None,
    }


def score_episodes(
    windows: pl.DataFrame, labels: pl.DataFrame, *, run_min_share: float = 0.5
) -> pl.DataFrame:
    """One row per label: was it detected, and which subsystems did the evidence point to.

    Examples
    --------
    >>> import datetime as dt
    >>> t = lambda s: dt.datetime(2026, 1, 1) + dt.timedelta(seconds=s)
    >>> w = pl.DataFrame({"run": ["r"] * 4, "host": ["a"] * 4, "window_id": [0, 1, 2, 3],
    ...                   "start": [t(0), t(1), t(2), t(3)], "end": [t(3), t(4), t(5), t(6)],
    ...                   "flagged": [False, False, True, False],
    ...                   "share_cpu": [None, None, 0.8, None], "share_memory": [None, None, 0.2, None]})
    >>> lab = pl.DataFrame({"run": ["r"], "host": ["a"], "fault_type": ["cpu_contention"],
    ...                     "start": [t(4.5)], "end": [t(6)], "expected_subsystem": ["cpu"]})
    >>> ep = score_episodes(w, lab)
    >>> ep.select("detected", "top1", "ranking").row(0)
    (True, True, 'cpu>memory')
    """
    _check(windows, ("run", "host", "start", "end", "flagged"), "windows")
    _check(labels, ("run", "host", "fault_type", "start", "end", "expected_subsystem"), "labels")
    rows = []
    for lab in labels.iter_rows(named=True):
        scope = lab.get("scope") or "episode"
        w = windows.filter((pl.col("run") == lab["run"]) & (pl.col("host") == lab["host"]))
        if scope == "run":
            ov = w
        else:
            ov = w.filter((pl.col("start") < lab["end"]) & (pl.col("end") > lab["start"]))
        fl = ov.filter(pl.col("flagged"))
        n, k = ov.height, fl.height
        if scope == "run":
            detected = n > 0 and k / n >= run_min_share
        else:
            detected = k > 0
        rows.append(episode_row(lab, scope, n, k, detected, _ranking(fl) if detected else []))
    schema = {
        "run": pl.String,
        "host": pl.String,
        "fault_type": pl.String,
        "magnitude": pl.Float64,
        "scope": pl.String,
        "start": pl.Datetime("ms"),
        "end": pl.Datetime("ms"),
        "expected_subsystem": pl.String,
        "n_windows": pl.Int64,
        "n_flagged": pl.Int64,
        "detected": pl.Boolean,
        "ranking": pl.String,
        "top1": pl.Boolean,
        "top3": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def _precision_counts(windows: pl.DataFrame, labels: pl.DataFrame, grace_s: float) -> pl.DataFrame:
    """Per fault type: flagged windows on labelled hosts of faulted runs, and how many hit an episode.

    A flagged window of a run whose labels are all of one fault type counts for that type;
    in a run mixing types, a window counts for each type whose episode it overlaps (windows
    that overlap none count as misses of every type in the run).
    """
    out = []
    ep = (
        labels.filter(pl.col("scope").fill_null("episode") == "episode")
        if "scope" in labels.columns
        else labels
    )
    grace = timedelta(seconds=grace_s)
    for (run, host), lab in ep.group_by(["run", "host"], maintain_order=True):
        fl = windows.filter((pl.col("run") == run) & (pl.col("host") == host) & pl.col("flagged"))
        starts, ends = fl["start"].to_list(), fl["end"].to_list()
        spans = list(lab.select("fault_type", "start", "end").iter_rows())
        hit_any = [
            any(ws < e + grace and we > s for _, s, e in spans) for ws, we in zip(starts, ends, strict=True)
        ]
        for ft in sorted({t for t, _, _ in spans}):
            hit_ft = [
                any(ws < e + grace and we > s for t, s, e in spans if t == ft)
                for ws, we in zip(starts, ends, strict=True)
            ]
            flagged = sum(1 for h_ft, h in zip(hit_ft, hit_any, strict=True) if h_ft or not h)
            out.append({"fault_type": ft, "flagged": flagged, "hits": sum(hit_ft)})
        out.append({"fault_type": "overall", "flagged": fl.height, "hits": sum(hit_any)})
    return pl.DataFrame(out, schema={"fault_type": pl.String, "flagged": pl.Int64, "hits": pl.Int64})


def false_alarms(windows: pl.DataFrame, by: str | None = None) -> pl.DataFrame:
    """Flagged share of baseline windows (``windows['baseline']``), overall or per ``by``."""
    _check(windows, ("flagged", "baseline"), "windows")
    b = windows.filter(pl.col("baseline"))
    keys = [by] if by else []
    agg = [pl.len().alias("baseline_windows"), pl.col("flagged").sum().alias("flagged")]
    if not keys:
        res = b.select(agg)
    else:
        res = b.group_by(keys, maintain_order=True).agg(agg).sort(keys)
    return res.with_columns(
        false_alarm_share=pl.when(pl.col("baseline_windows") > 0)
        .then(pl.col("flagged") / pl.col("baseline_windows"))
        .otherwise(None)
    )


def _auc(windows: pl.DataFrame, labels: pl.DataFrame) -> float | None:
    """ROC AUC of ``combined`` for episode-overlapping vs other windows of the labelled (run, host)s."""
    if "combined" not in windows.columns or labels.height == 0:
        return None
    ep = (
        labels.filter(pl.col("scope").fill_null("episode") == "episode")
        if "scope" in labels.columns
        else labels
    )
    ys, ss = [], []
    for (run, host), lab in ep.group_by(["run", "host"], maintain_order=True):
        w = windows.filter((pl.col("run") == run) & (pl.col("host") == host))
        if w.height == 0:
            continue
        hit = pl.lit(False)
        for r in lab.iter_rows(named=True):
            hit = hit | ((pl.col("start") < r["end"]) & (pl.col("end") > r["start"]))
        w = w.select(hit.alias("y"), pl.col("combined").cast(pl.Float64))
        ys += w["y"].to_list()
        ss += w["combined"].to_list()
    pairs = [(y, s) for y, s in zip(ys, ss, strict=True) if s is not None and s == s]
    if not pairs or all(y for y, _ in pairs) or not any(y for y, _ in pairs):
        return None
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score([y for y, _ in pairs], [s for _, s in pairs]))


#: the table row that scores each label by the method meant for it: episodes by windows,
#: whole-run configuration differences by cross-host deviation (the paper's tool for them)
OVERALL_BY_METHOD = "overall [each label by its method]"
#: the table row of ``overall`` scored from the same windows by the detectors' agreement alone,
#: without the sentinel rule (added by :func:`reveal_lab.evaluation.evaluate_dataset`)
OVERALL_DETECTORS_ONLY = "overall [detectors only, the paper's rule]"


def _by_method(episodes: pl.DataFrame) -> pl.DataFrame | None:
    """Each label once: whole-run labels as cross-host deviation scored them, the rest (and a
    whole-run label cross-host deviation did not score) as windows scored them; ``None`` when
    no label was scored by cross-host deviation."""
    if "method" not in episodes.columns or "scope" not in episodes.columns:
        return None
    method = pl.col("method").fill_null("windows")
    cross = episodes.filter(method == "crosshost")
    if cross.height == 0:
        return None
    win = episodes.filter(method == "windows")
    run_scope = pl.col("scope").fill_null("episode") == "run"
    keep = win.filter(~run_scope)
    rest = win.filter(run_scope).join(cross.select("run", "host").unique(), on=["run", "host"], how="anti")
    return pl.concat([keep, rest, cross], how="diagonal_relaxed")


def summarize(
    episodes: pl.DataFrame, windows: pl.DataFrame, labels: pl.DataFrame, *, grace_s: float = 0.0
) -> pl.DataFrame:
    """The evaluation table: one row per fault type, then ``overall`` (columns :data:`TABLE_COLUMNS`).

    ``overall`` pools all episodes (``scope="episode"`` and ``"run"``) except rows with
    ``in_overall`` false (a second scoring of the same labels); its false-alarm share is
    over every baseline window (per-fault-type rows leave it empty). When some whole-run
    labels were also scored by cross-host deviation (``method="crosshost"``), a last row
    :data:`OVERALL_BY_METHOD` scores each label once, by the method meant for it: episodes
    by windows, whole-run labels by cross-host deviation (precision, false alarms and AUC
    as ``overall``: they are the windows').
    """
    prec = _precision_counts(windows, labels, grace_s)
    rows = []
    groups = sorted(episodes["fault_type"].unique().to_list())
    fa = false_alarms(windows) if "baseline" in windows.columns else None
    by_method = _by_method(episodes)
    for ft in [*groups, "overall", *([OVERALL_BY_METHOD] if by_method is not None else [])]:
        pooled = ft in ("overall", OVERALL_BY_METHOD)  # every label, the windows' precision and false alarms
        if ft == "overall":
            ep = (
                episodes.filter(pl.col("in_overall").fill_null(True))
                if "in_overall" in episodes.columns
                else episodes
            )
        elif ft == OVERALL_BY_METHOD:
            ep = by_method
        else:
            ep = episodes.filter(pl.col("fault_type") == ft)
        pr = prec.filter(pl.col("fault_type") == ("overall" if pooled else ft))
        det = ep.filter(pl.col("detected"))
        flagged = int(pr["flagged"].sum()) if pr.height else 0
        hits = int(pr["hits"].sum()) if pr.height else 0
        row = {
            "fault_type": ft,
            "episodes": ep.height,
            "detected": det.height,
            "episode_recall": det.height / ep.height if ep.height else None,
            "flagged_windows": flagged,
            "window_precision": hits / flagged if flagged else None,
            "top1_accuracy": float(det["top1"].mean()) if det.height else None,
            "top3_accuracy": float(det["top3"].mean()) if det.height else None,
            "baseline_windows": None,
            "false_alarm_share": None,
            "score_auc": _auc(
                windows, labels if pooled else labels.filter(pl.col("fault_type") == ft)
            ),
        }
        if pooled and fa is not None and fa.height:
            row["baseline_windows"] = int(fa["baseline_windows"][0])
            row["false_alarm_share"] = fa["false_alarm_share"][0]
        rows.append(row)
    schema = {
        "fault_type": pl.String,
        "episodes": pl.Int64,
        "detected": pl.Int64,
        "episode_recall": pl.Float64,
        "flagged_windows": pl.Int64,
        "window_precision": pl.Float64,
        "top1_accuracy": pl.Float64,
        "top3_accuracy": pl.Float64,
        "baseline_windows": pl.Int64,
        "false_alarm_share": pl.Float64,
        "score_auc": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")
