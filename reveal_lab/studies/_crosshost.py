"""Cross-host deviation of one subsystem (Fig. 9: memory) over the hosts of a study.

Hosts are compared with :func:`reveal_lab.crosshost.deviation` (each host against
the cluster median, static metrics included, runs aligned by elapsed time). The hosts
come from the runs of one workload when it ran on at least ``min_hosts`` hosts
(the paper's setting: one job, several servers); otherwise from the first run of
every host of the study (a cluster-wide comparison), which the ``scope`` column says.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import polars as pl

from reveal_lab.telemetry import Run

__all__ = ["crosshost_subsystem"]


def _host_names(run: Run) -> list[str]:
    """The keys of ``run.split_hosts()``, in its order, without splitting the frame."""
    from reveal_lab.telemetry import frame_hosts

    return frame_hosts(run.frame) or ["unknown"]


def _one_run_per_host(runs: Sequence[Run], names: dict[int, list[str]]) -> list[Run]:
    """The first run of every host (its host's part), in run order; a run whose hosts
    (``names``: by ``id``) all came with earlier runs is not split (a lazily loaded run: not read)."""
    seen: dict[str, Run] = {}
    for r in runs:
        if all(h in seen for h in names[id(r)]):
            continue
        for h, sub in r.split_hosts().items():
            seen.setdefault(h, sub)
    return list(seen.values())


def crosshost_subsystem(
    runs: Sequence[Run],
    subsystem: str = "memory",
    *,
    min_hosts: int = 3,
    window_s: float = 3.0,
    k: float = 3.0,
) -> pl.DataFrame:
    """Deviation rows of ``subsystem`` (``reveal_lab.crosshost.DEVIATION_SCHEMA`` plus
    ``scope``), persistent deviations first; empty when fewer than 2 hosts exist."""
    from reveal_lab.crosshost import DEVIATION_SCHEMA, deviation

    by_workload: dict[str, list[Run]] = {}
    for r in runs:
        by_workload.setdefault(r.meta.workload or "", []).append(r)
    names = {id(r): _host_names(r) for r in runs}  # each run read once to name its hosts
    best = max(by_workload.items(), key=lambda kv: len({h for r in kv[1] for h in names[id(r)]}),
               default=("", []))
    chosen = _one_run_per_host(best[1], names)
    scope = f"workload {best[0]}"
    if len(chosen) < min_hosts:
        chosen, scope = _one_run_per_host(runs, names), "all workloads (first run per host)"
    if len(chosen) < 2:
        return pl.DataFrame(schema={**DEVIATION_SCHEMA, "scope": pl.String})
    with warnings.catch_warnings():  # the two-host caveat is visible in `scope`/`persistent`; others pass
        warnings.filterwarnings("ignore", message="with 2 hosts the cluster median", category=UserWarning)
        dev = deviation(chosen, window_s=window_s, k=k, align="elapsed")
    return dev.filter(pl.col("subsystem") == subsystem).with_columns(pl.lit(scope).alias("scope"))
