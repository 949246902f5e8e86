"""The evaluation as one JSON object (``reveal-lab evaluate --json FILE``).

``overall`` and each fault type get the same fields (:data:`JSON_FIELDS`), and so does
``overall_by_method`` when whole-run labels were also scored by cross-host deviation (each
label counted once, by the method meant for it), and ``overall_detectors_only`` when the
sentinel rule flagged windows (the same windows by the detectors' agreement alone); when the labels
carry magnitudes, ``by_magnitude`` repeats them per fault type and magnitude (detection
versus magnitude). ``settings`` is the configuration the evaluation ran with; ``crosshost_false_alarms`` says how
often the cross-host rule flagged a host of a fault-free run
(:func:`reveal_lab.evaluation.crosshost_false_alarms`).

Per fault type, ``false_alarm_share`` is the flagged share of the fault-free windows of
the workloads that fault type's runs use (the overall one: of every fault-free window).

Per magnitude, the windows that overlap an episode of *another* magnitude (v2 runs
alternate magnitudes inside one run) are left out, so they count neither as hits nor as
misses of this magnitude.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from reveal_lab.evaluation._score import OVERALL_BY_METHOD, OVERALL_DETECTORS_ONLY, summarize
from reveal_lab.jsonsafe import json_safe, write_json

__all__ = ["JSON_FIELDS", "evaluation_json", "write_evaluation_json"]

#: the fields of ``overall``, of each fault type and of each magnitude
JSON_FIELDS = (
    "episodes",
    "episode_recall",
    "window_precision",
    "false_alarm_share",
    "top1_accuracy",
    "top3_accuracy",
    "score_auc",
)


def _row(table_row: Mapping, false_alarm: float | None) -> dict:
    out = {k: json_safe(table_row.get(k)) for k in JSON_FIELDS}
    out["false_alarm_share"] = json_safe(false_alarm)
    out["detected"] = table_row.get("detected")
    out["flagged_windows"] = table_row.get("flagged_windows")
    return out


def _fa_share(windows: pl.DataFrame, workloads: list[str] | None) -> float | None:
    if "baseline" not in windows.columns:
        return None
    b = windows.filter(pl.col("baseline"))
    if workloads is not None and "workload" in b.columns:
        b = b.filter(pl.col("workload").is_in(workloads))
    return float(b["flagged"].mean()) if b.height else None


def _workloads_of(windows: pl.DataFrame, runs: list[str]) -> list[str] | None:
    if "workload" not in windows.columns:
        return None
    return windows.filter(pl.col("run").is_in(runs))["workload"].unique().to_list()


def _without_other_episodes(windows: pl.DataFrame, other: pl.DataFrame) -> pl.DataFrame:
    """``windows`` less those of a labelled (run, host) that overlap an episode in ``other``."""
    drop = pl.lit(False)
    ep = other
    if "scope" in other.columns:
        ep = other.filter(pl.col("scope").fill_null("episode") == "episode")
    for r in ep.iter_rows(named=True):
        drop = drop | (
            (pl.col("run") == r["run"])
            & (pl.col("host") == r["host"])
            & (pl.col("start") < r["end"])
            & (pl.col("end") > r["start"])
        )
    return windows.filter(~drop)


_LABEL_COLS = ("run", "host", "fault_type", "start", "end", "expected_subsystem", "magnitude", "scope")


def evaluation_json(
    episodes: pl.DataFrame,
    windows: pl.DataFrame,
    table: pl.DataFrame,
    settings: Mapping[str, Any] | None = None,
    *,
    grace_s: float = 0.0,
) -> dict:
    """The JSON object of an evaluation (see the module doc).

    ``episodes``, ``windows`` and ``table`` are an :class:`~reveal_lab.evaluation.Evaluation`'s
    (the scored labels are the episodes' rows, one per label).
    """
    labels = episodes
    if "in_overall" in episodes.columns:  # cross-host rows score the same labels a second time
        labels = episodes.filter(pl.col("in_overall").fill_null(True))
    labels = labels.select([c for c in _LABEL_COLS if c in episodes.columns])
    rows = {r["fault_type"]: r for r in table.iter_rows(named=True)}
    out: dict[str, Any] = {"settings": dict(settings or {})}
    out["overall"] = _row(rows.get("overall", {}), _fa_share(windows, None))
    if OVERALL_BY_METHOD in rows:
        out["overall_by_method"] = _row(rows[OVERALL_BY_METHOD], _fa_share(windows, None))
    if OVERALL_DETECTORS_ONLY in rows:  # its false alarms are the table's (agreement alone)
        r = rows[OVERALL_DETECTORS_ONLY]
        out["overall_detectors_only"] = _row(r, r.get("false_alarm_share"))
    fault_types: dict[str, dict] = {}
    by_mag: dict[str, dict[str, dict]] = {}
    for ft, row in rows.items():
        if ft in ("overall", OVERALL_BY_METHOD, OVERALL_DETECTORS_ONLY):
            continue
        runs = episodes.filter(pl.col("fault_type") == ft)["run"].unique().to_list()
        fault_types[ft] = _row(row, _fa_share(windows, _workloads_of(windows, runs)))
    has_mag = "magnitude" in labels.columns and "magnitude" in episodes.columns
    if has_mag:
        for ft in sorted(set(episodes["fault_type"].to_list())):
            ep_ft = episodes.filter(pl.col("fault_type") == ft)
            mags = sorted(m for m in ep_ft["magnitude"].unique().to_list() if m is not None and m == m)
            if not mags:
                continue
            base_ft = ft.removesuffix(" [cross-host]")
            lab_ft = labels.filter(pl.col("fault_type") == base_ft)
            for m in mags:
                ep_m = ep_ft.filter(pl.col("magnitude") == m)
                lab_m = lab_ft.filter(pl.col("magnitude") == m)
                other = labels.filter(
                    pl.col("run").is_in(lab_m["run"].unique().to_list())
                    & ~((pl.col("fault_type") == base_ft) & (pl.col("magnitude") == m))
                )
                win_m = _without_other_episodes(windows, other)
                lab_m = lab_m.with_columns(fault_type=pl.lit(ft))
                t = summarize(ep_m, win_m, lab_m, grace_s=grace_s)
                trow = next(r for r in t.iter_rows(named=True) if r["fault_type"] == ft)
                runs = ep_m["run"].unique().to_list()
                by_mag.setdefault(ft, {})[f"{m:g}"] = {
                    "magnitude": m,
                    **_row(trow, _fa_share(windows, _workloads_of(windows, runs))),
                }
    out["fault_types"] = fault_types
    if by_mag:
        out["by_magnitude"] = by_mag
    return out


def write_evaluation_json(evaluation, path: str | Path) -> Path:  # noqa: ANN001
    """Write :func:`evaluation_json` of an :class:`~reveal_lab.evaluation.Evaluation` to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    obj = evaluation_json(
        evaluation.episodes,
        evaluation.windows,
        evaluation.table,
        {**evaluation.config, "failures": list(evaluation.failures)},
        grace_s=float(evaluation.config.get("grace_s", 0.0) or 0.0),
    )
    by_repeat = evaluation.false_alarms_by_repeat
    if by_repeat is not None:
        obj["false_alarm_share_by_repeat"] = {
            str(r["repeat"]): r["false_alarm_share"] for r in by_repeat.iter_rows(named=True)
        }
    fa = getattr(evaluation, "crosshost_false_alarms", None)
    if fa is not None:  # the cross-host rule on hosts where nothing was wrong
        obj["crosshost_false_alarms"] = fa
    return write_json(path, obj, indent=1, default=str)
