"""Whole-run labels scored by cross-host deviation against the job's fault-free runs.

A configuration difference (a host's CPU quota, its thread count, where its network
processing runs) lasts the whole run, so no window stands out against the host's own past;
the paper finds such differences by comparing hosts (§5.6, HugePages). On a real job the
hosts are not alike even when nothing is wrong (rank 0, a host with a core to itself), so
:func:`reveal_lab.crosshost.baseline_deviation` compares each host with the cluster *and*
with itself in the job's other fault-free runs, with a bar calibrated on those runs alone.

:func:`crosshost_deviations` runs it on every multi-host run of a labelled dataset, fault-free
runs included (each against the *other* fault-free runs), so the same rule that finds the
labelled hosts is also measured on hosts where nothing was wrong
(:func:`crosshost_false_alarms`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from reveal_lab.evaluation._score import episode_row
from reveal_lab.telemetry import TelemetryError

__all__ = ["crosshost_deviations", "crosshost_episodes", "crosshost_false_alarms"]

log = logging.getLogger(__name__)


def _job_refs(meta: pl.DataFrame, run: str) -> list[str]:
    """The fault-free runs of ``run``'s job (workload, phase, the same hosts), ``run`` left out."""
    rows = meta.filter(pl.col("run") == run)
    hosts = sorted(rows["host"].to_list())
    first = rows.row(0, named=True)
    cand = meta.filter(
        (pl.col("fault") == "none")
        & (pl.col("workload") == first["workload"])
        & (pl.col("phase") == first["phase"])
        & (pl.col("run") != run)
    )
    return [
        r
        for r in cand["run"].unique(maintain_order=True).to_list()
        if sorted(cand.filter(pl.col("run") == r)["host"].to_list()) == hosts
    ]


def crosshost_deviations(
    meta: pl.DataFrame,
    frame_of: Callable[[dict[str, Any]], pl.DataFrame],
    *,
    runs: Sequence[str] | None = None,
    k: float = 3.0,
    window_s: float = 3.0,
) -> tuple[pl.DataFrame, list[str]]:
    """Deviation rows of every multi-host run (``world_size`` > 1) of ``meta`` (``meta_lab.csv``)
    against the other fault-free runs of its job, with ``run`` and ``fault`` added; and the runs
    that could not be judged (fewer than two other fault-free runs of the job), with the reason.

    ``frame_of(row)`` gives the frame of one host of one run (a ``meta`` row): trimmed to the
    workload's span and with the host's own core and cgroup renamed to ``own``/``self``
    (:func:`reveal_lab.studies.own_core_view`), so that one key means the same on every host.
    Hosts of a run are aligned by wall-clock time. ``runs`` judges only these runs (their
    job's fault-free runs are still the references).
    """
    from reveal_lab.crosshost import deviation, judge_deviation

    need = ("run", "host", "fault", "workload", "phase", "world_size")
    missing = [c for c in need if c not in meta.columns]
    if missing:
        raise TelemetryError(f"meta_lab.csv lacks the column(s) {missing} that cross-host deviation needs")
    multi = meta.filter(pl.col("world_size").cast(pl.Int64, strict=False) > 1)
    cache: dict[str, pl.DataFrame] = {}

    def dev_of(run: str) -> pl.DataFrame:  # each run's hosts against each other, once
        if run not in cache:
            rows = multi.filter(pl.col("run") == run).iter_rows(named=True)
            frames = {r["host"]: frame_of(r) for r in rows}
            cache[run] = deviation(frames, window_s=window_s, k=k, align="time")
        return cache[run]

    parts, skipped = [], []
    for run in multi["run"].unique(maintain_order=True).to_list():
        if runs is not None and run not in set(runs):
            continue
        refs = _job_refs(multi, run)
        if len(refs) < 2:
            skipped.append(f"{run}: {len(refs)} other fault-free run(s) of its job; cross-host needs 2")
            continue
        dev = judge_deviation(dev_of(run), [dev_of(r) for r in refs], k=k)
        fault = multi.filter(pl.col("run") == run)["fault"][0]
        parts.append(dev.with_columns(run=pl.lit(run), fault=pl.lit(fault)))
        log.info("cross-host %s: %d persistent", run, int(dev["persistent"].sum()))
    if not parts:
        raise TelemetryError(f"no multi-host run could be judged by cross-host deviation: {skipped[:3]}")
    return pl.concat(parts, how="vertical"), skipped


def crosshost_episodes(deviations: pl.DataFrame, run_labels: pl.DataFrame) -> pl.DataFrame:
    """Score whole-run labels (``scope="run"``) by :func:`crosshost_deviations`' rows (rows shaped
    like :func:`reveal_lab.evaluation.score_episodes`, ``method="crosshost"``).

    A label is detected when its host has a persistent deviation; the ranking orders
    subsystems by the largest ``|excess|`` of that host's persistent deviations. Labels of runs
    that were not judged are left out.
    """
    rows = []
    judged = set(deviations["run"].unique().to_list())
    for lab in run_labels.iter_rows(named=True):
        if lab["run"] not in judged:
            continue
        mine = deviations.filter((pl.col("run") == lab["run"]) & (pl.col("host") == lab["host"]))
        d = mine.filter(pl.col("persistent"))
        ranked = (
            d.group_by("subsystem")
            .agg(pl.col("excess").abs().max().alias("a"))
            .sort(["a", "subsystem"], descending=[True, False], nulls_last=True)["subsystem"]
            .to_list()
        )
        n_windows = int(mine["n_windows"].max() or 0) if mine.height else 0
        row = episode_row(lab, "run", n_windows, d.height, bool(ranked), ranked)
        rows.append({**row, "method": "crosshost"})
    return pl.DataFrame(
        rows,
        schema_overrides={
            "start": pl.Datetime("ms"),
            "end": pl.Datetime("ms"),
            "magnitude": pl.Float64,
            "top1": pl.Boolean,
            "top3": pl.Boolean,
        },
    )


def crosshost_false_alarms(deviations: pl.DataFrame, run_labels: pl.DataFrame) -> dict[str, Any]:
    """How often the cross-host rule flags a host where nothing was wrong.

    ``fault_free_hosts`` / ``fault_free_flagged``: hosts of fault-free runs (each judged against
    the job's other fault-free runs) and those with a persistent deviation; ``share`` is the
    ratio. ``other_hosts`` / ``other_flagged``: the unlabelled hosts of runs with a whole-run
    label (a slow rank slows its peers, so these may be flagged for a real effect; they are
    reported, not counted as false alarms). ``flagged_runs`` names the fault-free hosts flagged.
    """
    per_host = deviations.group_by("run", "host", "fault").agg(flagged=pl.col("persistent").any())
    free = per_host.filter(pl.col("fault") == "none")
    labelled = run_labels.select("run", "host").unique()
    other = per_host.filter(pl.col("run").is_in(labelled["run"].to_list())).join(
        labelled, on=["run", "host"], how="anti"
    )
    hit = free.filter("flagged").select("run", "host").sort("run", "host").rows()
    n, f = free.height, int(free["flagged"].sum())
    return {
        "fault_free_hosts": n,
        "fault_free_flagged": f,
        "share": f / n if n else None,
        "other_hosts": other.height,
        "other_flagged": int(other["flagged"].sum()),
        "flagged_runs": [f"{r}/{h}" for r, h in hit],
    }
