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

__all__ = ["deviation", "DEVIATION_SCHEMA"]

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
    keys: dict[str, str] = {}  # key -> an example column (for words and kind)
    column_of: dict[tuple[str, str], str] = {}  # (key, host) -> that host's column
    for h, f in frames.items():
        for c in metric_columns(f):
            kk = metric_key(c)
            keys.setdefault(kk, c)
            column_of[(kk, h)] = c
    key_list = list(keys)
    all_b = np.unique(np.concatenate([b["_b"].to_numpy() for b in buckets.values()]))
    nb, nk, nh = all_b.size, len(key_list), len(hosts)
    V = np.full((nb, nk, nh), np.nan)
    for j, h in enumerate(hosts):
        b = buckets[h]
        rows = np.searchsorted(all_b, b["_b"].to_numpy())
        present = [c for c in key_list if c in b.columns]
        cols = [key_list.index(c) for c in present]
        if present:
            V[rows[:, None], np.array(cols)[None, :], j] = b.select(present).to_numpy().astype(np.float64)
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
    rows = []
    for i, key in enumerate(key_list):
        col = keys[key]
        info = classify(col)
        static = info.kind == "static"
        for j, h in enumerate(hosts):
            nvalid = int(valid[:, i, j].sum())
            if nvalid == 0:
                continue
            x, c = float(host_val[i, j]), float(cl_med[i])
            if static:
                differs = bool(np.isfinite(x) and np.isfinite(c) and abs(x - c) > 1e-9 * max(1.0, abs(c)))
                share = float(np.mean(np.abs(np.nan_to_num(diff[:, i, j])) > 1e-9 * max(1.0, abs(c))))
                persistent = differs and len(hosts) >= 3 and share >= persist
            else:
                share = float(dev_share[i, j])
                persistent = len(hosts) >= 3 and share >= persist
            z = float(zmed[i, j])
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
