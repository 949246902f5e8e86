"""Lemon hosts from our own telemetry: hosts that deviate from their peers run after run.

The paper (Kokolis et al.) finds "lemon" nodes from failure logs; we have no failures,
only telemetry. A host is **flagged in a run** when, among the hosts of that run (a
multi-host job), the detectors flag a clearly larger share of its windows than of its
peers' (share ≥ ``ratio`` × the peers' median and at least ``min_gap`` above it), or
when cross-host deviation marks it persistent. Across runs, a host's *lemon share* is
the share of its runs in which it was flagged, with a Wilson 95 % interval; a host is
``persistent`` when the interval's lower end clears the share expected if flags fell
evenly on all hosts. With two or three hosts and a dozen runs the intervals are wide:
read the ranking as a lead to follow up, not as a verdict.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from reveal_lab.reliability._model import GPUS_PER_NODE, mttf_hours, resolve_failure_rate

__all__ = [
    "wilson_interval",
    "host_run_table",
    "flag_hosts",
    "lemon_hosts",
    "scan_lemon_hosts",
    "mttf_without_host",
    "lab_lemon_hosts",
    "LEMON_COLUMNS",
]

LEMON_COLUMNS = ("rank", "host", "n_runs", "n_flagged", "share", "ci_low", "ci_high", "chance", "persistent")


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial share k/n (``(0, 1)`` when n = 0).

    >>> [round(x, 3) for x in wilson_interval(1, 14)]
    [0.013, 0.315]
    """
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def host_run_table(
    windows: pl.DataFrame, *, run: str = "run", host: str = "host", flagged: str = "flagged"
) -> pl.DataFrame:
    """Per (run, host): ``n_windows``, ``n_flagged`` and their ``share`` from scored windows."""
    missing = [c for c in (run, host, flagged) if c not in windows.columns]
    if missing:
        raise ValueError(f"windows frame lacks column(s) {missing}; has {windows.columns}")
    return (
        windows.group_by(pl.col(run).alias("run"), pl.col(host).alias("host"))
        .agg(pl.len().alias("n_windows"), pl.col(flagged).cast(pl.Int64).sum().alias("n_flagged"))
        .with_columns((pl.col("n_flagged") / pl.col("n_windows")).alias("share"))
        .sort("run", "host")
    )


def flag_hosts(
    table: pl.DataFrame,
    *,
    ratio: float = 1.5,
    min_gap: float = 0.1,
    crosshost: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Mark, per run, the hosts whose flagged share stands out from their peers'.

    ``table`` has ``run``, ``host``, ``share`` (see :func:`host_run_table`); runs with a
    single host are left out (no peer to compare with). ``crosshost``: optional rows
    ``run``, ``host``, ``persistent`` (from :func:`reveal_lab.crosshost.deviation`, one
    per metric) that flag a host too. Adds ``peer_share``, ``by_detectors``,
    ``by_crosshost`` and ``flagged``.

    >>> t = pl.DataFrame({"run": ["r1", "r1", "r2", "r2"], "host": ["a", "b", "a", "b"],
    ...                   "share": [0.6, 0.1, 0.2, 0.2]})
    >>> flag_hosts(t).filter("flagged").select("run", "host").rows()
    [('r1', 'a')]
    """
    if ratio < 1 or min_gap < 0:
        raise ValueError(f"need ratio >= 1 and min_gap >= 0, got ratio={ratio}, min_gap={min_gap}")
    for c in ("run", "host", "share"):
        if c not in table.columns:
            raise ValueError(f"host table lacks column {c!r}; has {table.columns}")
    t = table.filter(pl.col("host").n_unique().over("run") >= 2)
    rows = []
    for (run,), grp in t.group_by(["run"], maintain_order=True):
        shares = dict(zip(grp["host"].to_list(), grp["share"].to_list(), strict=True))
        for h, s in shares.items():
            others = sorted(v for k, v in shares.items() if k != h)
            half = len(others) // 2
            mid = others[half] if len(others) % 2 else (others[half - 1] + others[half]) / 2
            rows.append({"run": run, "host": h, "peer_share": mid,
                         "by_detectors": bool(s >= ratio * mid and s - mid >= min_gap)})
    schema = {"run": pl.String, "host": pl.String, "peer_share": pl.Float64, "by_detectors": pl.Boolean}
    out = t.join(pl.DataFrame(rows, schema=schema), on=["run", "host"], how="left")
    if crosshost is not None and crosshost.height:
        ch = crosshost.group_by("run", "host").agg(pl.col("persistent").any().alias("by_crosshost"))
        out = out.join(ch, on=["run", "host"], how="left")
        out = out.with_columns(pl.col("by_crosshost").fill_null(False))
    else:
        out = out.with_columns(pl.lit(False).alias("by_crosshost"))
    out = out.with_columns((pl.col("by_detectors") | pl.col("by_crosshost")).alias("flagged"))
    return out.sort("run", "host")


def lemon_hosts(flags: pl.DataFrame, z: float = 1.96) -> pl.DataFrame:
    """Rank hosts by how persistently they are flagged across runs (:data:`LEMON_COLUMNS`).

    ``chance`` is the share of all (run, host) pairs that are flagged: what every host
    would show if flags fell evenly; ``persistent`` = the Wilson interval's lower end
    lies above it. Ranked by the lower end, then the share.

    >>> f = pl.DataFrame({"run": [f"r{i}" for i in range(10) for _ in range(2)],
    ...                   "host": ["a", "b"] * 10, "flagged": [True, False] * 9 + [False, False]})
    >>> lemon_hosts(f).select("host", "n_flagged", "persistent").rows()
    [('a', 9, True), ('b', 0, False)]
    """
    for c in ("run", "host", "flagged"):
        if c not in flags.columns:
            raise ValueError(f"flags lack column {c!r}; has {flags.columns}")
    if not flags.height:
        return pl.DataFrame(schema={c: pl.String for c in LEMON_COLUMNS})
    chance = float(flags["flagged"].cast(pl.Float64).mean())
    agg = flags.group_by("host").agg(
        pl.len().alias("n_runs"), pl.col("flagged").cast(pl.Int64).sum().alias("n_flagged")
    )
    rows = []
    for h, n, k in agg.select("host", "n_runs", "n_flagged").rows():
        lo, hi = wilson_interval(int(k), int(n), z)
        rows.append({"host": h, "n_runs": int(n), "n_flagged": int(k), "share": k / n, "ci_low": lo,
                     "ci_high": hi, "chance": chance, "persistent": lo > chance})
    out = pl.DataFrame(rows).sort(["ci_low", "share", "host"], descending=[True, True, False])
    out = out.with_row_index("rank", offset=1).with_columns(pl.col("rank").cast(pl.Int64))
    return out.select(LEMON_COLUMNS)


def scan_lemon_hosts(anomalies: pl.DataFrame, runs: pl.DataFrame, **kw: Any) -> pl.DataFrame:
    """:func:`lemon_hosts` from ``reveal-lab scan``'s outputs (``anomalies``, ``runs``).

    A job is a multi-host run, or the single-host runs whose ids differ only by a trailing
    ``_<host>`` (the lab dataset's DDP runs: one file per host). A host's windows are its
    run's windows over its hosts; its flagged windows, the distinct ``window_id`` of its
    evidence rows. Keyword arguments go to :func:`flag_hosts`.
    """
    need = {"run_id", "hosts", "n_windows"}
    if not runs.height or not need <= set(runs.columns):
        return lemon_hosts(pl.DataFrame(schema={"run": pl.String, "host": pl.String, "flagged": pl.Boolean}))
    rows = []
    for run_id, hosts, n_windows in runs.select("run_id", "hosts", "n_windows").rows():
        hs = [h for h in str(hosts or "").split(",") if h]
        if not hs or n_windows is None:
            continue
        job = run_id[: -len(hs[0]) - 1] if len(hs) == 1 and run_id.endswith(f"_{hs[0]}") else run_id
        for h in hs:
            rows.append({"run_id": run_id, "run": job, "host": h, "n_windows": int(n_windows) // len(hs)})
    if not rows:
        return lemon_hosts(pl.DataFrame(schema={"run": pl.String, "host": pl.String, "flagged": pl.Boolean}))
    table = pl.DataFrame(rows)
    if anomalies.height and {"run_id", "host", "window_id"} <= set(anomalies.columns):
        hit = anomalies.group_by("run_id", "host").agg(pl.col("window_id").n_unique().alias("n_flagged"))
        table = table.join(hit, on=["run_id", "host"], how="left")
    else:
        table = table.with_columns(pl.lit(0).alias("n_flagged"))
    table = table.with_columns(pl.col("n_flagged").fill_null(0)).filter(pl.col("n_windows") > 0)
    table = table.with_columns((pl.col("n_flagged") / pl.col("n_windows")).clip(0, 1).alias("share"))
    return lemon_hosts(flag_hosts(table, **kw))


def mttf_without_host(
    ranking: pl.DataFrame,
    gpus: int,
    failure_rate: float | str = "rsc1",
    host: str | None = None,
    gpus_per_node: int = GPUS_PER_NODE,
) -> dict[str, Any]:
    """Projected MTTF of a ``gpus``-GPU job before and after removing one host's kind of node.

    An assumption, not a measurement: each host stands for an equal share of the fleet,
    and its nodes fail at a rate proportional to its smoothed lemon share
    ``(n_flagged + 1) / (n_runs + 2)`` (so no host fails at rate 0), scaled so the
    fleet's mean stays ``failure_rate``. Removing the host (default: rank 1) leaves the
    others' mean rate. ``mttf_after_ci`` redoes it with the host's share at its Wilson
    bounds: when that interval spans "better than its peers", the removal may even
    shorten the projected MTTF, which is the honest reading of thin evidence.

    >>> rk = pl.DataFrame({"rank": [1, 2], "host": ["a", "b"], "n_runs": [10, 10], "n_flagged": [8, 0],
    ...                    "share": [0.8, 0.0], "ci_low": [0.49, 0.0], "ci_high": [0.94, 0.28]})
    >>> out = mttf_without_host(rk, 1024)
    >>> round(out["mttf_after_h"] / out["mttf_before_h"], 2)
    5.0
    """
    if not ranking.height:
        raise ValueError("empty lemon ranking: no multi-host runs to rank")
    r_f = resolve_failure_rate(failure_rate)
    row = ranking.filter(pl.col("host") == host) if host else ranking.sort("rank").head(1)
    if not row.height:
        raise ValueError(f"host {host!r} is not in the ranking {ranking['host'].to_list()}")
    h = row["host"][0]
    rest = ranking.filter(pl.col("host") != h)
    others = [(k + 1) / (n + 2) for k, n in rest.select("n_flagged", "n_runs").rows()]
    if not others:
        raise ValueError("need at least two hosts to remove one")

    def after(worst: float) -> float:
        mean = (worst + sum(others)) / (len(others) + 1)
        return r_f * (sum(others) / len(others)) / mean

    before = mttf_hours(gpus, r_f, gpus_per_node)
    bounds = [after(float(row[c][0])) for c in ("ci_low", "ci_high")]
    to_mttf = [mttf_hours(gpus, b, gpus_per_node) for b in bounds]
    point = after((int(row["n_flagged"][0]) + 1) / (int(row["n_runs"][0]) + 2))
    return {
        "host": h,
        "gpus": gpus,
        "n_hosts": len(others) + 1,
        "mttf_before_h": before,
        "mttf_after_h": mttf_hours(gpus, point, gpus_per_node),
        "mttf_after_ci": (min(to_mttf), max(to_mttf)),
        "assumption": "node failure rate proportional to the host's smoothed lemon share (k+1)/(n+2); each "
        "host an equal part of the fleet (illustrative, not measured)",
    }


def lab_lemon_hosts(
    root: str | Any,
    *,
    max_runs: int = 0,
    mode: str = "baseline",
    preset: str = "paper",
    **kw: Any,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Lemon hosts over a labelled lab dataset's multi-host runs (``world_size`` > 1).

    Each host file is scored with :func:`reveal_lab.evaluation.evaluate_dataset` (fit on
    the workload's fault-free runs by default, leaving the run itself out), the hosts of a
    run compared with :func:`flag_hosts` (keyword arguments go there). ``max_runs``: only
    the first multi-host runs of ``meta_lab.csv`` (0: all). Returns ``(flags, ranking)``.
    """
    from pathlib import Path

    from reveal_lab.evaluation import evaluate_dataset
    from reveal_lab.io import read_meta
    from reveal_lab.pipeline import POLICIES

    root = Path(root)
    meta = read_meta(root / "meta_lab.csv")
    if "world_size" not in meta.columns:
        raise ValueError(f"{root / 'meta_lab.csv'} has no world_size column: cannot tell multi-host runs")
    runs = meta.filter(pl.col("world_size") > 1)["run"].unique(maintain_order=True).to_list()
    if max_runs:
        runs = runs[:max_runs]
    if not runs:
        empty = pl.DataFrame(schema={"run": pl.String, "host": pl.String, "flagged": pl.Boolean})
        return empty, lemon_hosts(empty)
    # two detectors must agree in every mode, as the calibrated evaluation
    policy = POLICIES["default"].agreeing()
    ev = evaluate_dataset(root, mode=mode, preset=preset, policy=policy, runs=runs, crosshost=False)
    faults = ev.windows.group_by("run", "host").agg(pl.col("fault").first())
    flags = flag_hosts(host_run_table(ev.windows), **kw).join(faults, on=["run", "host"], how="left")
    return flags, lemon_hosts(flags)
