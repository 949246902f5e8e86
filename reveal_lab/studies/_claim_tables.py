"""Tables the paper's claims read that no figure draws: how long each metric family is
part of a run's anomalous windows (§5.6, §6 packet loss), and the correlation of the
metric groups §4.1 names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import polars as pl

from reveal_lab.studies._intervals import merge_intervals

__all__ = [
    "ANOMALOUS_TIME_COLUMNS",
    "LABEL_DETECTION_COLUMNS",
    "PAPER_GROUPS",
    "anomalous_time",
    "correlation_groups",
    "label_detection",
    "metric_family",
]

ANOMALOUS_TIME_COLUMNS = (
    "run_id", "workload", "fault", "host", "subsystem", "family", "n_windows", "seconds", "longest_s",
                          "scored_s",
)

#: §4.1's two named groups of correlated metrics: each member a pattern on the metric's
#: field (case-insensitive)
PAPER_GROUPS: dict[str, tuple[str, ...]] = {
    "microarchitecture": ("stallratio|stall_ratio", "occupancyratio|occupancy_ratio", "cycle_activity",
                          "cache_misses|cache-misses"),
    "storage": ("^sectors_read$", "^reads_completed", "^reads_merged$"),
}


def metric_family(metric: str) -> str:
    """A channel's ``Source:field`` without instance, host, unit or the ``_diff`` suffix
    (the paper's "metric type").

    >>> metric_family("Disk_diff:sectors_read.vda.labA[sectors]"), metric_family("CPU:Busy%.0.labA[%]")
    ('Disk:sectors_read', 'CPU:Busy%')
    >>> metric_family("plain")
    'plain'
    """
    head = metric.split("[", 1)[0]
    if ":" not in head:
        return head
    source, rest = head.split(":", 1)
    return f"{source.removesuffix('_diff')}:{rest.split('.', 1)[0]}"


def _seconds(starts: np.ndarray, ends: np.ndarray) -> tuple[float, float]:
    merged = merge_intervals(np.column_stack([starts, ends]))
    if len(merged) == 0:
        return 0.0, 0.0
    lengths = merged[:, 1] - merged[:, 0]
    return float(lengths.sum()), float(lengths.max())


def _as_seconds(df: pl.DataFrame, col: str) -> np.ndarray:
    s = df[col]
    if s.dtype.is_temporal():
        return s.dt.epoch("ms").to_numpy().astype(np.float64) / 1000.0
    return s.to_numpy().astype(np.float64)


def anomalous_time(
    windows: pl.DataFrame, evidence: pl.DataFrame, faults: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """Per run and host: seconds covered by anomalous windows (family ``(any)``) and, per
    metric family (:func:`metric_family`) in the evidence of those windows, seconds covered
    by the windows it explains (``seconds``, the union of their spans), the longest
    unbroken stretch (``longest_s``) and the windows (``n_windows``); ``scored_s``: the
    run's scored span on that host. Every scored run and host has an ``(any)`` row, 0 s
    when nothing was flagged. ``faults``: run id -> injected fault (``none`` otherwise).

    >>> import datetime as dt
    >>> t = [dt.datetime(2026, 1, 1, 0, 0, s) for s in range(6)]
    >>> w = pl.DataFrame({"run_id": ["r"] * 4, "workload": ["w"] * 4, "host": ["h"] * 4,
    ...                   "start": t[:4], "end": t[2:6], "anomalous": [True, True, False, False]})
    >>> ev = w.head(2).with_columns(subsystem=pl.lit("storage"),
    ...                             metric=pl.lit("Disk_diff:sectors_read.vda.h[s]"))
    >>> anomalous_time(w, ev).select("family", "n_windows", "seconds", "longest_s", "scored_s").rows()
    [('(any)', 2, 3.0, 3.0, 5.0), ('Disk:sectors_read', 2, 3.0, 3.0, 5.0)]
    """
    faults = faults or {}
    rows: list[dict[str, object]] = []
    if windows.height == 0:
        return pl.DataFrame(schema=dict(zip(ANOMALOUS_TIME_COLUMNS, _SCHEMA, strict=True)))
    ev = evidence.filter(pl.col("metric").is_not_null()) if evidence.height else evidence
    if ev.height:
        ev = ev.with_columns(pl.col("metric").map_elements(metric_family,
                                                           return_dtype=pl.String).alias("family"))
    for (run_id, host), w in windows.group_by(["run_id", "host"], maintain_order=True):
        s, e = _as_seconds(w, "start"), _as_seconds(w, "end")
        scored, _ = _seconds(s, e)
        flag = w["anomalous"].fill_null(False).to_numpy()
        base = {"run_id": run_id, "workload": w["workload"][0], "fault": faults.get(str(run_id), "none"),
                "host": host, "scored_s": scored}
        tot, longest = _seconds(s[flag], e[flag])
        rows.append({**base, "subsystem": "(any)", "family": "(any)", "n_windows": int(flag.sum()),
                     "seconds": tot, "longest_s": longest})
        if not ev.height:
            continue
        mine = ev.filter((pl.col("run_id") == run_id) & (pl.col("host") == host))
        for (sub, fam), g in mine.group_by(["subsystem", "family"], maintain_order=True):
            g = g.unique(["window_id"] if "window_id" in g.columns else ["start"])
            tot, longest = _seconds(_as_seconds(g, "start"), _as_seconds(g, "end"))
            rows.append({**base, "subsystem": sub, "family": fam, "n_windows": g.height, "seconds": tot,
                         "longest_s": longest})
    return pl.DataFrame(rows, schema=dict(zip(ANOMALOUS_TIME_COLUMNS, _SCHEMA, strict=True))).sort(
        "run_id", "host", "n_windows", "family", descending=[False, False, True, False]
    )


_SCHEMA = (pl.String, pl.String, pl.String, pl.String, pl.String, pl.String, pl.Int64, pl.Float64, pl.Float64,
           pl.Float64)


def correlation_groups(
    spaces: Mapping[str, object], groups: Mapping[str, tuple[str, ...]] = PAPER_GROUPS
) -> pl.DataFrame:
    """|r| between the members of each named group in each workload's metric space
    (:attr:`reveal_lab.pruning.PruneResult.spaces`: the mean correlation over the
    workload's runs): one row per group, workload and pair of metrics matching two
    different members' patterns (``group, workload, metric_a, metric_b, abs_r``). A group
    none of whose pairs exists in the data has no rows.

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> sp = SimpleNamespace(keys=["Disk_diff:sectors_read.vda", "Disk_diff:reads_merged.vda", "CPU:Busy%"],
    ...                      corr=np.array([[1, .9, .1], [.9, 1, .2], [.1, .2, 1]]))
    >>> correlation_groups({"w": sp}).rows()
    [('storage', 'w', 'Disk_diff:reads_merged.vda', 'Disk_diff:sectors_read.vda', 0.9)]
    """
    rows = []
    for group, members in groups.items():
        pats = [re.compile(p, re.IGNORECASE) for p in members]
        for wl, sp in spaces.items():
            keys = list(sp.keys)  # type: ignore[attr-defined]
            corr = np.asarray(sp.corr)  # type: ignore[attr-defined]
            field = [k.split(":", 1)[-1].split(".", 1)[0] for k in keys]
            member = [next((i for i, p in enumerate(pats) if p.search(f)), None) for f in field]
            for a in range(len(keys)):
                for b in range(a + 1, len(keys)):
                    if member[a] is None or member[b] is None or member[a] == member[b]:
                        continue
                    r = corr[a, b]
                    if np.isfinite(r):
                        x, y = sorted((keys[a], keys[b]))
                        rows.append({"group": group, "workload": wl, "metric_a": x, "metric_b": y,
                                     "abs_r": round(abs(float(r)), 6)})
    return pl.DataFrame(
        rows, schema={"group": pl.String, "workload": pl.String, "metric_a": pl.String, "metric_b": pl.String,
                      "abs_r": pl.Float64}
    )


LABEL_DETECTION_COLUMNS = (
    "fault_type", "runs", "episodes", "detected", "recall", "anomalous", "in_episode", "precision",
)


def label_detection(windows: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Detection against ``labels.csv`` (:func:`reveal_lab.io.read_labels`): per labelled fault
    kind (``fault_type``) the episodes of the detected runs (``episodes``), those that at least
    one anomalous window of the same run and host overlaps (``detected``, ``recall``), and the
    anomalous windows of the runs with that kind (``anomalous``) of which ``in_episode`` overlap
    one of its episodes (``precision``); a last row ``(all)`` over every run detected, fault-free
    ones included (their anomalous windows are false alarms). A study's run id may carry the
    host (``<run>_<host>``). Recall is null without episodes, precision without anomalous
    windows or without any label (the public dataset: nothing says which windows are false).

    >>> import datetime as dt
    >>> t = lambda s: dt.datetime(2026, 1, 1) + dt.timedelta(seconds=s)
    >>> w = pl.DataFrame({"run_id": ["r1"] * 3 + ["r2"], "host": ["h"] * 4,
    ...                   "start": [t(0), t(10), t(30), t(0)], "end": [t(3), t(13), t(33), t(3)],
    ...                   "anomalous": [False, True, True, True]})
    >>> lab = pl.DataFrame({"run": ["r1", "r1"], "host": ["h", "h"], "fault_type": ["disk", "disk"],
    ...                     "start": [t(9), t(50)], "end": [t(20), t(60)]})
    >>> label_detection(w, lab).select("fault_type", "episodes", "detected", "recall", "anomalous",
    ...                                "in_episode", "precision").rows()
    [('disk', 2, 1, 0.5, 2, 1, 0.5), ('(all)', 2, 1, 0.5, 3, 1, 0.3333333333333333)]
    """
    schema = {"fault_type": pl.String, "runs": pl.Int64, "episodes": pl.Int64, "detected": pl.Int64,
              "recall": pl.Float64, "anomalous": pl.Int64, "in_episode": pl.Int64, "precision": pl.Float64}
    if windows.height == 0:
        return pl.DataFrame(schema=schema)
    runs = windows["run_id"].unique().to_list()
    eps = []
    for lab in labels.iter_rows(named=True) if labels.height else []:
        for r in runs:
            if r in (lab["run"], f"{lab['run']}_{lab['host']}"):
                eps.append({"run_id": r, "host": lab["host"], "fault_type": lab["fault_type"],
                            "e_start": _stamp(lab["start"]), "e_end": _stamp(lab["end"])})
    ep = pl.DataFrame(eps, schema={"run_id": pl.String, "host": pl.String, "fault_type": pl.String,
                                   "e_start": pl.Float64, "e_end": pl.Float64})
    w = windows.select("run_id", "host", "anomalous", w_start=_as_seconds(windows, "start"),
                       w_end=_as_seconds(windows, "end")).with_row_index("_w")
    hits = w.join(ep.with_row_index("_e"), on=["run_id", "host"]).filter(
        (pl.col("w_start") < pl.col("e_end")) & (pl.col("w_end") > pl.col("e_start"))
    )
    found = set(hits.filter("anomalous")["_e"].to_list())
    inside = set(hits.filter("anomalous")["_w"].to_list())
    kind_of_run = ep.group_by("run_id").agg(pl.col("fault_type").first())
    rows = []
    for kind in sorted(ep["fault_type"].unique().to_list()) + ["(all)"]:
        every = kind == "(all)"
        e = ep.with_row_index("_e")
        e = e if every else e.filter(pl.col("fault_type") == kind)
        kruns = runs if every else kind_of_run.filter(pl.col("fault_type") == kind)["run_id"].to_list()
        a = w.filter(pl.col("anomalous") & pl.col("run_id").is_in(kruns))
        n_det = sum(1 for i in e["_e"].to_list() if i in found)
        n_in = sum(1 for i in a["_w"].to_list() if i in inside)
        judged = a.height and labels.height
        rows.append({"fault_type": kind, "runs": len(kruns), "episodes": e.height, "detected": n_det,
                     "recall": n_det / e.height if e.height else None, "anomalous": a.height,
                     "in_episode": n_in, "precision": n_in / a.height if judged else None})
    return pl.DataFrame(rows, schema=schema)


def _stamp(v: object) -> float:
    """Epoch seconds of a label's time (a datetime, or its text as ``labels.csv`` writes it)."""
    import datetime as dt

    if isinstance(v, str):
        v = dt.datetime.fromisoformat(v)
    if isinstance(v, dt.datetime):
        return (v.replace(tzinfo=dt.UTC) if v.tzinfo is None else v).timestamp()
    return float(v)  # type: ignore[arg-type]
