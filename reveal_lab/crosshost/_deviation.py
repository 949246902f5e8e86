"""Cross-host deviation (the paper's HugePages case study): each host against the
cluster baseline, per metric, static metrics included."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from reveal_lab.attribution import format_value as _fmt
from reveal_lab.attribution import readable_metric
from reveal_lab.telemetry import TIMESTAMP, Run, classify, metric_columns, metric_key, split_hosts

__all__ = ["deviation", "DEVIATION_SCHEMA", "baseline_deviation", "judge_deviation", "BASELINE_COLUMNS"]

DEVIATION_SCHEMA: dict[str, pl.DataType] = {
    "key": pl.String,
    "host": pl.String,
    "subsystem": pl.String,
    "kind": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "cluster_median": pl.Float64,
    "z": pl.Float64,
    "deviating_share": pl.Float64,
    "n_windows": pl.Int64,
    "persistent": pl.Boolean,
    "claim": pl.String,
}


def _frames_by_host(
    data: Run | pl.DataFrame | Mapping[str, Run | pl.DataFrame] | Sequence[Run],
) -> dict[str, pl.DataFrame]:
    if isinstance(data, Run):
        return split_hosts(data.frame)
    if isinstance(data, pl.DataFrame):
        return split_hosts(data)
    if isinstance(data, Mapping):
        out = {}
        for h, v in data.items():
            f = v.frame if isinstance(v, Run) else v
            parts = split_hosts(f)
            out[str(h)] = parts[h] if h in parts else next(iter(parts.values())) if len(parts) == 1 else f
        return out
    out = {}
    for r in data:
        for h, f in split_hosts(r.frame).items():
            if h in out:
                raise ValueError(f"host {h!r} appears in several runs; pass one run per host")
            out[h] = f
    return out


def _bucket_means(frame: pl.DataFrame, window_s: float, align: str, t_ref: int | None) -> pl.DataFrame:
    """Mean of every metric per tumbling window, columns renamed to host-free keys."""
    ts = frame[TIMESTAMP].dt.epoch("ms")
    t0 = int(ts.min()) if align == "elapsed" or t_ref is None else t_ref
    ren = {c: metric_key(c) for c in metric_columns(frame)}
    width = int(round(window_s * 1000))
    return (
        frame.with_columns(_b=((ts - t0) // width).cast(pl.Int64))
        .group_by("_b")
        .agg(pl.exclude(TIMESTAMP, "_b").mean())
        .sort("_b")
        .rename(ren)
    )


def deviation(
    data: Run | pl.DataFrame | Mapping[str, Run | pl.DataFrame] | Sequence[Run],
    *,
    window_s: float | None = 3.0,
    k: float = 3.0,
    persist: float = 0.5,
    align: str = "elapsed",
    noise_floor: float = 1.0,
    rel_floor: float = 0.02,
) -> pl.DataFrame:
    """Compare every host with the cluster, per metric (host-free key).

    Per tumbling window of ``window_s`` seconds (``None``: the whole run as one window),
    each host's mean of a metric is compared with the cluster baseline, the median
    across hosts, in robust units: ``z = (x_host - median) / s`` with ``s`` the larger of
    1.4826·MAD across hosts (1.2533·mean absolute deviation where the MAD is 0),
    ``noise_floor`` × the metric's typical variation over
    time within a host and ``rel_floor`` × ``|median|`` (so hosts that agree closely are
    not flagged for noise or for differences of a few percent). A host
    deviates *persistently* when ``|z| > k`` in at least ``persist`` of the windows.
    Static metrics (configuration: ``HugePages_Total``, ``MemTotal``, link speed...) are
    compared as values: a host deviates when its value differs from the cluster median.
    The collector's own telemetry (kind ``instrument``) is not compared.

    Parameters
    ----------
    data : a multi-host run or frame, ``{host: run or frame}``, or runs of one host each.
    align : ``"elapsed"`` (time since each host's first sample: runs recorded at
        different times) or ``"time"`` (wall clock: hosts of one run).

    Returns
    -------
    polars.DataFrame
        One row per (metric key, host), :data:`DEVIATION_SCHEMA`, persistent
        deviations first. Needs at least three hosts to flag anything (with two the
        median cannot tell which one deviates); a warning says so.

    Examples
    --------
    >>> from reveal_lab.synth import Anomaly, make_run
    >>> run, _ = make_run(30, n_channels=80, hosts=["h1", "h2", "h3", "h4"], seed=0,
    ...                   anomalies=[Anomaly("memory", 0, 0, kind="static", host="h3", n_columns=1)])
    >>> dev = deviation(run)
    >>> dev.filter(pl.col("persistent")).select("host", "kind").rows()
    [('h3', 'static')]
    """
    if align not in ("elapsed", "time"):
        raise ValueError(f"align must be 'elapsed' or 'time', got {align!r}")
    frames = _frames_by_host(data)
    hosts = list(frames)
    if len(hosts) < 2:
        raise ValueError(f"cross-host deviation needs at least 2 hosts, got {hosts}")
    if len(hosts) < 3:
        warnings.warn(
            "with 2 hosts the cluster median cannot tell which one deviates; nothing is flagged", stacklevel=2
        )
    t_ref = min(int(f[TIMESTAMP].dt.epoch("ms").min()) for f in frames.values()) if align == "time" else None
    win = window_s if window_s is not None else 1e9
    buckets = {h: _bucket_means(f, win, align, t_ref) for h, f in frames.items()}
    keys, column_of = _keys(frames)
    key_list = list(keys)
    V = _value_cube(buckets, key_list, hosts)
    st = _robust_z(V, noise_floor, rel_floor, k)
    rows = []
    for i, key in enumerate(key_list):
        col = keys[key]
        info = classify(col)
        static = info.kind == "static"
        for j, h in enumerate(hosts):
            nvalid = int(st["valid"][:, i, j].sum())
            if nvalid == 0:
                continue
            x, c = float(st["host_val"][i, j]), float(st["cl_med"][i])
            if static:
                differs = bool(np.isfinite(x) and np.isfinite(c) and abs(x - c) > 1e-9 * max(1.0, abs(c)))
                share = float(np.mean(np.abs(np.nan_to_num(st["diff"][:, i, j])) > 1e-9 * max(1.0, abs(c))))
                persistent = differs and len(hosts) >= 3 and share >= persist
            else:
                share = float(st["dev_share"][i, j])
                persistent = len(hosts) >= 3 and share >= persist
            z = float(st["zmed"][i, j])
            rows.append(
                {
                    "key": key,
                    "host": h,
                    "subsystem": info.subsystem,
                    "kind": info.kind,
                    "metric": column_of.get((key, h), col),
                    "value": x,
                    "cluster_median": c,
                    "z": z,
                    "deviating_share": share,
                    "n_windows": nvalid,
                    "persistent": persistent,
                    "claim": _claim(col, h, x, c, z, share, static, persistent),
                }
            )
    out = pl.DataFrame(rows, schema=DEVIATION_SCHEMA)
    return out.sort(
        [pl.col("persistent"), pl.col("z").abs(), pl.col("key"), pl.col("host")],
        descending=[True, True, False, False],
        nulls_last=True,
    )


def _keys(frames: Mapping[str, pl.DataFrame]) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """The host-free metric keys (each with an example column, for words and kind) and each
    (key, host)'s column; the collector's own telemetry (kind ``instrument``) left out."""
    keys: dict[str, str] = {}
    column_of: dict[tuple[str, str], str] = {}
    for h, f in frames.items():
        for c in metric_columns(f):
            if classify(c).kind == "instrument":  # the collector's own lag, not the host's state
                continue
            kk = metric_key(c)
            keys.setdefault(kk, c)
            column_of[(kk, h)] = c
    return keys, column_of


def _value_cube(buckets: Mapping[str, pl.DataFrame], key_list: list[str], hosts: list[str]) -> np.ndarray:
    """Each host's window means as one ``windows × keys × hosts`` array (NaN where a host
    lacks a window or a metric)."""
    all_b = np.unique(np.concatenate([b["_b"].to_numpy() for b in buckets.values()]))
    V = np.full((all_b.size, len(key_list), len(hosts)), np.nan)
    for j, h in enumerate(hosts):
        b = buckets[h]
        rows = np.searchsorted(all_b, b["_b"].to_numpy())
        b_cols = set(b.columns)
        present = [c for c in key_list if c in b_cols]
        cols = [k for k, c in enumerate(key_list) if c in b_cols]
        if present:
            V[rows[:, None], np.array(cols)[None, :], j] = b.select(present).to_numpy().astype(np.float64)
    return V


def _robust_z(V: np.ndarray, noise_floor: float, rel_floor: float, k: float) -> dict[str, np.ndarray]:
    """Robust z of every host against the cluster median per window and key (see
    :func:`deviation`), with each host's share of windows beyond ``k``, its median z and
    value, and the cluster's median value."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: metrics a host lacks
        med = np.nanmedian(V, axis=2)  # nb × nk
        mad = 1.4826 * np.nanmedian(np.abs(V - med[:, :, None]), axis=2)
        # where most hosts agree exactly the MAD is 0; fall back to 1.2533 x the mean
        # absolute deviation (the usual modified-z rule) so one odd host gets a finite z
        meanad = 1.2533 * np.nanmean(np.abs(V - med[:, :, None]), axis=2)
        mad = np.where(mad > 0, mad, meanad)
        # typical variation over time within a host: median over hosts of the robust std over windows
        tmed = np.nanmedian(V, axis=0, keepdims=True)
        tsd = np.nanmedian(1.4826 * np.nanmedian(np.abs(V - tmed), axis=0), axis=1)  # nk
        host_val = np.nanmedian(V, axis=0)  # nk × nh
        cl_med = np.nanmedian(med, axis=0)  # nk
    scale = np.fmax(
        np.fmax(mad, noise_floor * np.nan_to_num(tsd, nan=0.0)[None, :]),
        rel_floor * np.abs(np.nan_to_num(med, nan=0.0)),
    )
    diff = V - med[:, :, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        Z = np.where(scale[:, :, None] > 0, diff / scale[:, :, None], np.where(np.abs(diff) > 0, np.inf, 0.0))
    valid = np.isfinite(V)
    dev_share = np.where(
        valid.sum(axis=0) > 0,
        (np.abs(np.nan_to_num(Z, nan=0.0)) > k).sum(axis=0) / np.maximum(valid.sum(axis=0), 1),
        0.0,
    )  # nk × nh
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        zmed = np.nanmedian(np.where(valid, Z, np.nan), axis=0)  # nk × nh
    return {
        "valid": valid,
        "diff": diff,
        "dev_share": dev_share,
        "zmed": zmed,
        "host_val": host_val,
        "cl_med": cl_med,
    }


def _claim(
    metric: str, host: str, x: float, c: float, z: float, share: float, static: bool, persistent: bool
) -> str:
    name = readable_metric(metric)
    if static:
        if persistent or (np.isfinite(x) and np.isfinite(c) and x != c):
            return f"{name} is {_fmt(x)} on {host} while the cluster median is {_fmt(c)}"
        return f"{name} is {_fmt(x)} on {host}, as on the rest of the cluster"
    side = "above" if z > 0 else "below"
    zt = f"{z:.1f}" if np.isfinite(z) else "inf"
    if persistent:
        return (
            f"{name} on {host} is {side} the cluster median in {100 * share:.0f} % of windows "
            f"(median z = {zt}; {_fmt(x)} vs {_fmt(c)})"
        )
    return f"{name} on {host} is in line with the cluster (median z = {zt}; {_fmt(x)} vs {_fmt(c)})"


#: the columns :func:`baseline_deviation` adds to :data:`DEVIATION_SCHEMA`
BASELINE_COLUMNS: dict[str, pl.DataType] = {
    "cluster_persistent": pl.Boolean,
    "baseline_z": pl.Float64,
    "baseline_spread": pl.Float64,
    "excess": pl.Float64,
    "threshold": pl.Float64,
    "baseline_runs": pl.Int64,
}


def _excess(dev: pl.DataFrame, refs: Sequence[pl.DataFrame], spread_floor: float) -> pl.DataFrame:
    """``dev`` with each (key, host)'s median ``z`` over the ``refs`` deviation frames, their
    spread (standard deviation, at least ``spread_floor``), the ``excess`` of ``z`` over that
    median in spreads, and whether ``z`` lies outside the range the refs span (``outside``)."""
    ref = (
        pl.concat([r.select("key", "host", "z") for r in refs], how="vertical")
        .filter(pl.col("z").is_finite())
        .group_by("key", "host")
        .agg(
            baseline_z=pl.col("z").median(),
            _sd=pl.col("z").std(),
            _lo=pl.col("z").min(),
            _hi=pl.col("z").max(),
            baseline_runs=pl.len().cast(pl.Int64),
        )
    )
    spread = pl.max_horizontal(pl.col("_sd").fill_null(0.0).fill_nan(0.0), pl.lit(spread_floor))
    return (
        dev.join(ref, on=["key", "host"], how="left")
        .with_columns(baseline_spread=spread)
        .with_columns(
            excess=(pl.col("z") - pl.col("baseline_z")) / pl.col("baseline_spread"),
            outside=(pl.col("z") > pl.col("_hi")) | (pl.col("z") < pl.col("_lo")),
        )
        .drop("_sd", "_lo", "_hi")
    )


def _beyond(frame: pl.DataFrame, persist_col: str) -> pl.Expr:
    """Rows that deviate from the cluster persistently and from the baseline runs' range."""
    return pl.col(persist_col) & pl.col("outside").fill_null(False) & pl.col("excess").is_finite()


def baseline_deviation(
    data: Run | pl.DataFrame | Mapping[str, Run | pl.DataFrame] | Sequence[Run],
    baseline: Sequence[Run | pl.DataFrame | Mapping[str, Run | pl.DataFrame] | Sequence[Run]],
    *,
    window_s: float | None = 3.0,
    k: float = 3.0,
    persist: float = 0.5,
    align: str = "time",
    spread_floor: float = 1.0,
    **kwargs: float,
) -> pl.DataFrame:
    """Cross-host deviation judged against fault-free runs of the same job.

    Hosts of a job often differ for good reason: rank 0 gathers, one host has a core to
    itself, one runs the job's collector. :func:`deviation` flags such a host in every run,
    faulty or not. Here each host is compared with *itself* in the ``baseline`` runs
    (fault-free runs of the same job, the same host names): for each metric and host, the
    host's median ``z`` against the cluster in ``data`` is set against its median ``z`` in
    each baseline run. A deviation is persistent when

    * it is persistent against the cluster (:func:`deviation`, ``k`` and ``persist``);
    * its ``z`` lies outside the range of the host's ``z`` over the baseline runs; and
    * its ``excess``, ``(z - median baseline z) / spread`` (``spread``: the standard deviation of
      the baseline ``z``, at least ``spread_floor``), exceeds ``threshold`` in magnitude; a
      static metric (a configuration value) needs no bar: differing from the cluster where the
      baseline runs did not is the change.

    ``threshold`` is calibrated on the baseline runs alone: each is scored in the same way
    against the others, and the largest ``|excess|`` any of them reaches (at least ``k``)
    becomes the bar, so a fault-free run like those in ``baseline`` is not flagged. Needs two
    or more baseline runs. A metric or host no baseline run has is judged by the cluster rule
    alone (``baseline_z`` null).

    Returns the rows of :func:`deviation` (``persistent`` redefined as above) with the columns
    :data:`BASELINE_COLUMNS`: ``cluster_persistent`` (the cluster rule alone), ``baseline_z``,
    ``baseline_spread``, ``excess``, ``threshold`` and ``baseline_runs``; persistent deviations
    first, then by ``|excess|``.

    Examples
    --------
    Host ``h2`` always runs 30 % busier than the others (its role); in the run under test
    ``h3`` also has twice the memory traffic. The cluster rule flags ``h2`` in every run; the
    baseline rule flags only ``h3``:

    >>> import numpy as np
    >>> from reveal_lab.telemetry import Run, RunMeta
    >>> def job(seed, h3_mem=1.0):
    ...     rng = np.random.default_rng(seed)
    ...     t = pl.datetime_range(pl.datetime(2025, 1, 1), pl.datetime(2025, 1, 1, 0, 0, 59),
    ...                           "1s", eager=True)
    ...     cols = {"timestamp": t}
    ...     for i, h in enumerate(["h1", "h2", "h3", "h4"]):
    ...         busy = 50 * (1.3 if h == "h2" else 1.0)
    ...         mem = 100 * (h3_mem if h == "h3" else 1.0)
    ...         cols[f"CPU:Busy%.0.{h}[%]"] = busy + rng.normal(0, 1, t.len())
    ...         cols[f"Memory:Dirty.{h}[kB]"] = mem + rng.normal(0, 2, t.len())
    ...     return Run(RunMeta(run_id=f"job{seed}"), pl.DataFrame(cols))
    >>> plain = deviation(job(9, h3_mem=2.0))
    >>> sorted(set(plain.filter(pl.col("persistent"))["host"]))
    ['h2', 'h3']
    >>> dev = baseline_deviation(job(9, h3_mem=2.0), [job(s) for s in range(4)])
    >>> dev.filter(pl.col("persistent")).select("host", "key").rows()
    [('h3', 'Memory:Dirty')]
    """
    base = list(baseline)
    if len(base) < 2:
        raise ValueError(f"baseline_deviation needs at least 2 baseline runs, got {len(base)}")
    opts = {"window_s": window_s, "k": k, "persist": persist, "align": align, **kwargs}
    return judge_deviation(
        deviation(data, **opts), [deviation(b, **opts) for b in base], k=k, spread_floor=spread_floor
    )


def judge_deviation(
    dev: pl.DataFrame, baseline_devs: Sequence[pl.DataFrame], *, k: float = 3.0, spread_floor: float = 1.0
) -> pl.DataFrame:
    """The rule of :func:`baseline_deviation` on deviations computed already: ``dev`` of the run
    and ``baseline_devs`` of the baseline runs (each a :func:`deviation` frame, with the same
    ``k``). Reuses the baseline runs' deviations when many runs are judged against them."""
    refs = list(baseline_devs)
    if len(refs) < 2:
        raise ValueError(f"judging a deviation needs at least 2 baseline runs, got {len(refs)}")
    static = pl.col("kind") == "static"
    threshold = float(k)
    for i, r in enumerate(refs):  # each baseline run against the others: the calibrated bar
        e = _excess(r, refs[:i] + refs[i + 1 :], spread_floor).filter(_beyond(r, "persistent") & ~static)
        if e.height:
            threshold = max(threshold, float(e["excess"].abs().max()))
    out = _excess(dev, refs, spread_floor).rename({"persistent": "cluster_persistent"})
    judged = pl.col("baseline_z").is_not_null()
    # a configuration value (static) that differs from the cluster where it did not in the
    # baseline runs is a change whatever its z (with 3 hosts one odd value has |z| 2.4)
    bar = static | (pl.col("excess").abs() > threshold)
    out = out.with_columns(
        persistent=pl.when(judged)
        .then(_beyond(out, "cluster_persistent") & bar)
        .otherwise(pl.col("cluster_persistent")),
        threshold=pl.lit(threshold),
        baseline_runs=pl.col("baseline_runs").fill_null(0),
    ).drop("outside")
    cols = [*DEVIATION_SCHEMA, *BASELINE_COLUMNS]
    return (
        out.select(cols)
        .cast({c: t for c, t in BASELINE_COLUMNS.items()})
        .sort(
            [pl.col("persistent"), pl.col("excess").abs(), pl.col("key"), pl.col("host")],
            descending=[True, True, False, False],
            nulls_last=True,
        )
    )
