"""Case studies on the bundled lab dataset (``data/lab``): tidy frames for the case-study notebook.

Public names (re-exported by :mod:`reveal_lab.studies`):

* :func:`packet_loss_study` -- §6 of the paper on our DDP runs: TCP retransmissions per
  second on baseline runs (workload-intrinsic) and inside packet-loss episodes
  (fault-induced), beside the CPU/IRQ effects on the host's own core (softirq ``NET_RX``,
  busy %, softirq %), per 1 s bin; :func:`packet_loss_summary` condenses it into
  rate, correlation and co-occurrence per condition.
* :func:`storage_burst_example` -- the storage-burst micro-example: the storage and
  pressure series around one ``storage_read`` episode (long format) and the pipeline's
  windows for that run (scores, flags, top subsystem).
* :func:`crosshost_study` -- the cross-host configuration difference: each DDP run with
  ``labB`` limited by a CPU quota next to a fault-free DDP run, compared with
  :func:`reveal_lab.crosshost.deviation` (four "hosts": both hosts of both runs, aligned
  by elapsed time), plus a per-host summary (own-core busy, cgroup CPU, throughput).

Each host of the lab is pinned to one core (``meta_lab.csv``'s ``core``); ``/proc/stat``
and ``/proc/softirqs`` are global, so "own core" columns are the host's core's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import polars as pl

from reveal_lab.crosshost import own_core_view
from reveal_lab.telemetry import (
    TIMESTAMP,
    TelemetryError,
    format_metric_name,
    metric_columns,
    parse_metric_name,
)

__all__ = [
    "packet_loss_study",
    "packet_loss_summary",
    "storage_burst_example",
    "crosshost_study",
]


def _root(root: str | Path | None) -> Path:
    from reveal_lab.config import data_dir

    return Path(root) if root is not None else data_dir()


def _tables(root: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    from reveal_lab.io import read_labels, read_meta

    return read_meta(root / "meta_lab.csv"), read_labels(root / "labels.csv")


def _frame(root: Path, source_file: str) -> pl.DataFrame:
    from reveal_lab.io import load_run

    return load_run(root / source_file.removeprefix("./")).frame


def _col(frame: pl.DataFrame, source: str, field: str, instance: str | None = None) -> str | None:
    """The column of ``source:field[.instance]`` in a one-host frame (``None`` when absent).

    Instances are matched on the name itself (``own``/``self`` from :func:`own_core_view`
    are not numeric, so the grammar would read them as part of the field).
    """
    for c in metric_columns(frame):
        if instance is not None:
            if c.startswith(f"{source}:{field}.{instance}."):
                return c
            continue
        m = parse_metric_name(c)
        if m is not None and m.full_source == source and m.field == field:
            return c
    return None


# -- §6: packet loss ---------------------------------------------------------------------------
PACKET_COLUMNS = (
    ("retrans", "NetworkTCPRetrans_diff", "TcpRetransSegs", None),
    ("net_rx", "Softirqs_diff", "NET_RX", "own"),
    ("net_tx", "Softirqs_diff", "NET_TX", "own"),
    ("busy_pct", "CPU", "Busy%", "own"),
    ("softirq_pct", "CPU", "Softirq%", "own"),
    ("tx_bytes", "NetworkInterStat_diff", "tx_bytes", None),
    ("ctx_switches", "Perf", "Context_Switches", "own"),
    ("cgroup_cpu_us", "Cgroup_diff", "cpu_usage_usec", "self"),
)
#: per-bin means (the rest are summed)
_MEANS = ("busy_pct", "softirq_pct")


def packet_loss_study(root: str | Path | None = None, *, bin_s: float = 1.0) -> pl.DataFrame:
    """Per DDP run, host and ``bin_s`` bin: retransmissions and CPU/IRQ signals of the own core.

    Columns: ``run, host, fault, loss, condition, bin_start, in_episode, labelled_host,
    retrans, net_rx, net_tx, busy_pct, softirq_pct, tx_bytes, ctx_switches,
    cgroup_cpu_us`` (own-core softirqs, busy and softirq %, perf context switches; the
    host cgroup's CPU time). ``condition`` is
    ``baseline`` (fault-free DDP run), ``loss_episode`` (a bin overlapping a packet-loss
    episode of that run, on either host: drops on ``labB``'s link hit both ends) or
    ``loss_calm`` (the calm part of a packet-loss run). Counters are summed per bin,
    percentages averaged. Only the DDP training runs are used.
    """
    root = _root(root)
    meta, labels = _tables(root)
    ddp = meta.filter(
        (pl.col("world_size") > 1)
        & ((pl.col("fault") == "none") | pl.col("fault").str.starts_with("packet_loss"))
    )
    if ddp.height == 0:
        raise TelemetryError("no two-host DDP runs in the dataset", path=str(root / "meta_lab.csv"))
    out = []
    width = f"{int(bin_s * 1000)}ms"
    for row in ddp.iter_rows(named=True):
        f = own_core_view(_frame(root, row["source_file"]), row["host"], row["core"])
        sel, names = [], []
        for name, src, field, inst in PACKET_COLUMNS:
            c = _col(f, src, field, inst)
            if c is not None:
                sel.append(pl.col(c).alias(name))
                names.append(name)
        sums = [n for n in names if n not in _MEANS]
        g = (
            f.select(TIMESTAMP, *sel)
            .sort(TIMESTAMP)
            .group_by_dynamic(TIMESTAMP, every=width)
            .agg(*[pl.col(n).sum() for n in sums], *[pl.col(n).mean() for n in names if n not in sums])
            .rename({TIMESTAMP: "bin_start"})
        )
        eps = labels.filter((pl.col("run") == row["run"]) & (pl.col("fault_type") == "packet_loss"))
        end = g["bin_start"] + timedelta(seconds=bin_s)
        inside = np.zeros(g.height, dtype=bool)
        # each bin's loss is that of the episode it overlaps (v2 runs grade it: 0.1, 0.2, 1 %)
        loss = np.zeros(g.height)
        for e in eps.iter_rows(named=True):
            hit = ((g["bin_start"] < e["end"]) & (end > e["start"])).to_numpy()
            inside |= hit
            mag = e.get("magnitude")
            loss = np.where(hit & (loss == 0), float(mag) if mag is not None else np.nan, loss)
        cond = np.where(inside, "loss_episode", "loss_calm") if eps.height else np.full(g.height, "baseline")
        g = g.with_columns(
            run=pl.lit(row["run"]),
            host=pl.lit(row["host"]),
            fault=pl.lit(row["fault"]),
            loss=pl.Series(loss),
            condition=pl.Series(cond),
            in_episode=pl.Series(inside),
            labelled_host=pl.lit(bool(eps.filter(pl.col("host") == row["host"]).height)),
        )
        for n, _, _, _ in PACKET_COLUMNS:
            if n not in g.columns:
                g = g.with_columns(pl.lit(None, dtype=pl.Float64).alias(n))
        out.append(g)
    cols = [
        "run",
        "host",
        "fault",
        "loss",
        "condition",
        "bin_start",
        "in_episode",
        "labelled_host",
        *[n for n, _, _, _ in PACKET_COLUMNS],
    ]
    return pl.concat([g.select(cols) for g in out], how="vertical_relaxed").sort("run", "host", "bin_start")


def packet_loss_summary(study: pl.DataFrame, *, quantile: float = 0.9) -> pl.DataFrame:
    """Retransmission rate, and how retransmissions co-occur with CPU/IRQ effects, per condition.

    Per ``condition`` and ``loss``: bins, retransmissions per second, share of bins with
    retransmissions, Pearson correlation of ``retrans`` with ``net_rx`` and with
    ``busy_pct``, ``ctx_switches`` and ``cgroup_cpu_us`` over the bins, and
    ``cooccur_share``: of the bins with retransmissions, the share whose own-core
    ``net_rx``, ``softirq_pct`` or ``ctx_switches`` exceeds the baseline bins'
    ``quantile`` -- how §6 tells workload-intrinsic retransmissions from fault-induced
    ones: by whether they come with CPU/IRQ effects on the host.
    """
    base = study.filter(pl.col("condition") == "baseline")
    thr = {
        c: (base[c].quantile(quantile) if base.height and base[c].null_count() < base.height else None)
        for c in ("net_rx", "softirq_pct", "ctx_switches")
    }

    def corr(a: pl.Series, b: pl.Series) -> float | None:
        x, y = a.to_numpy().astype(float), b.to_numpy().astype(float)
        ok = np.isfinite(x) & np.isfinite(y)
        if ok.sum() < 3 or np.std(x[ok]) == 0 or np.std(y[ok]) == 0:
            return None
        return float(np.corrcoef(x[ok], y[ok])[0, 1])

    rows = []
    for (cond, loss), g in study.group_by(["condition", "loss"], maintain_order=True):
        has = g.filter(pl.col("retrans") > 0)
        co = None
        if has.height and any(v is not None for v in thr.values()):
            hit = pl.Series([False] * has.height)
            for c, v in thr.items():
                if v is not None:
                    hit = hit | (has[c] > v).fill_null(False)
            co = float(hit.mean())
        secs = g.height  # one bin = one second by default; the rate is per bin
        rows.append(
            {
                "condition": cond,
                "loss": loss,
                "bins": g.height,
                "retrans_per_bin": float(g["retrans"].sum()) / secs if secs else None,
                "bins_with_retrans": has.height,
                "share_bins_with_retrans": has.height / secs if secs else None,
                "corr_retrans_net_rx": corr(g["retrans"], g["net_rx"]),
                "corr_retrans_busy": corr(g["retrans"], g["busy_pct"]),
                "corr_retrans_ctx": corr(g["retrans"], g["ctx_switches"]),
                "corr_retrans_cgroup_cpu": corr(g["retrans"], g["cgroup_cpu_us"]),
                "cooccur_share": co,
            }
        )
    return pl.DataFrame(rows).sort("condition", "loss")


# -- storage burst micro-example -----------------------------------------------------------------
STORAGE_SERIES = (
    ("Storage_diff", "sectors_read"),
    ("Storage_diff", "reads_completed"),
    ("Storage_diff", "time_spent_reading_(ms)"),
    ("Storage", "ios_in_progress"),
    ("PSI_diff", "io_some_total"),
    ("CPU", "Iowait%"),
    ("Memory", "Cached"),
)


def storage_burst_example(
    root: str | Path | None = None, run: str | None = None, *, detect: bool = True, preset: str = "paper"
) -> dict[str, pl.DataFrame]:
    """The storage-burst micro-example: one ``storage_read`` run, its series and windows.

    Returns ``{"series", "episodes", "windows"}``: ``series`` is long
    (``timestamp, metric, value, in_episode``) for the storage/pressure metrics of
    :data:`STORAGE_SERIES` (package-level instance ``-`` for per-core CPU metrics);
    ``episodes`` are the run's labels; ``windows`` (when ``detect``) the pipeline's windows
    fitted on the workload's baseline runs (``start, end, combined, agreement, flagged,
    top_subsystem``) -- an empty frame when no baseline exists.
    """
    root = _root(root)
    meta, labels = _tables(root)
    eps_all = labels.filter(pl.col("fault_type") == "storage_read")
    if eps_all.height == 0:
        raise TelemetryError("no storage_read episode in the dataset", path=str(root / "labels.csv"))
    run = run or eps_all["run"][0]
    eps = eps_all.filter(pl.col("run") == run)
    if eps.height == 0:
        raise TelemetryError(f"run {run!r} has no storage_read episode", path=str(root / "labels.csv"))
    host = eps["host"][0]
    row = meta.filter((pl.col("run") == run) & (pl.col("host") == host)).row(0, named=True)
    f = _frame(root, row["source_file"])
    keep = []
    for src, field in STORAGE_SERIES:
        c = _col(f, src, field, "-" if src == "CPU" else None)
        if c is not None:
            keep.append(c)
    inside = pl.lit(False)
    for e in eps.iter_rows(named=True):
        inside = inside | ((pl.col(TIMESTAMP) >= e["start"]) & (pl.col(TIMESTAMP) < e["end"]))
    series = (
        f.select(TIMESTAMP, *keep)
        .with_columns(in_episode=inside)
        .unpivot(index=[TIMESTAMP, "in_episode"], variable_name="metric", value_name="value")
        .select(TIMESTAMP, "metric", "value", "in_episode")
    )
    windows = pl.DataFrame()
    if detect:
        from reveal_lab.config import get_preset
        from reveal_lab.io import load_run
        from reveal_lab.pipeline import detect_run

        refs = meta.filter(
            (pl.col("workload") == row["workload"]) & (pl.col("host") == host) & (pl.col("fault") == "none")
        )
        if refs.height:
            base = [load_run(root / s.removeprefix("./")) for s in refs["source_file"]]
            det = detect_run(
                load_run(root / row["source_file"].removeprefix("./")),
                baseline=base,
                preset=get_preset(preset),
            )
            cols = [
                c
                for c in ("start", "end", "combined", "agreement", "top_subsystem")
                if c in det.windows.columns
            ]
            windows = det.windows.select(*cols, flagged=det.decision)
    return {"series": series, "episodes": eps, "windows": windows}


# -- cross-host configuration difference --------------------------------------------------------
def _summary_row(f: pl.DataFrame, name: str, row: dict) -> dict:
    def mean(src: str, field: str, inst: str | None) -> float | None:
        c = _col(f, src, field, inst)
        return float(f[c].mean()) if c is not None and f[c].null_count() < f.height else None

    dur_s = (f[TIMESTAMP][-1] - f[TIMESTAMP][0]).total_seconds() if f.height > 1 else None
    cg = _col(f, "Cgroup_diff", "cpu_usage_usec", "self")
    cg_share = float(f[cg].sum()) / 1e6 / dur_s if cg is not None and dur_s else None
    return {
        "host_run": name,
        "run": row["run"],
        "host": row["host"],
        "fault": row["fault"],
        "cpu_quota": row.get("cpu_quota"),
        "samples_per_s": row.get("samples_per_s"),
        "own_core_busy_pct": mean("CPU", "Busy%", "own"),
        "cgroup_cpu_cores": cg_share,
        "tx_bytes_per_sample": mean("NetworkInterStat_diff", "tx_bytes", None),
    }


def crosshost_study(
    root: str | Path | None = None,
    *,
    fault: str = "config_cpu_quota",
    baseline_runs: Sequence[str] | None = None,
    window_s: float = 3.0,
    k: float = 3.0,
) -> dict[str, pl.DataFrame]:
    """Cross-host deviation of each ``fault`` DDP run against a fault-free DDP run.

    For each run with a ``fault`` label, both its hosts and both hosts of one baseline DDP
    run (``baseline_runs`` or the baselines in order) become four hosts
    (``<tag>-<host>``, tag ``f<i>``/``b<i>``) with own-core/own-cgroup columns renamed
    (:func:`own_core_view`) and go through :func:`reveal_lab.crosshost.deviation`
    (``align="elapsed"``). Returns ``{"deviation", "summary"}``: deviation rows with
    ``pair`` and ``labelled`` (the host carrying the fault) added, persistent ones first;
    and one summary row per host-run (quota, throughput, own-core busy, cgroup CPU in
    cores).
    """
    from reveal_lab.crosshost import deviation

    root = _root(root)
    meta, labels = _tables(root)
    flabs = labels.filter(pl.col("fault_type") == fault)
    if flabs.height == 0:
        raise TelemetryError(f"no {fault} label in the dataset", path=str(root / "labels.csv"))
    base = meta.filter((pl.col("world_size") > 1) & (pl.col("fault") == "none"))
    base_ids = list(baseline_runs) if baseline_runs else base["run"].unique(maintain_order=True).to_list()
    if not base_ids:
        raise TelemetryError("no fault-free DDP run to compare with", path=str(root / "meta_lab.csv"))
    devs, summ = [], []
    for i, run in enumerate(flabs["run"].unique(maintain_order=True).to_list()):
        lab_host = flabs.filter(pl.col("run") == run)["host"][0]
        brun = base_ids[i % len(base_ids)]
        frames = {}
        for tag, rid in ((f"f{i}", run), (f"b{i}", brun)):
            for row in meta.filter(pl.col("run") == rid).iter_rows(named=True):
                name = f"{tag}-{row['host']}"
                f = own_core_view(_frame(root, row["source_file"]), row["host"], row["core"])
                frames[name] = f
                summ.append({**_summary_row(f, name, row), "pair": i})
        d = deviation(frames, window_s=window_s, k=k, align="elapsed")
        devs.append(
            d.with_columns(
                pair=pl.lit(i),
                fault_run=pl.lit(run),
                baseline_run=pl.lit(brun),
                labelled=pl.col("host") == f"f{i}-{lab_host}",
            )
        )
    dev = pl.concat(devs, how="vertical_relaxed").sort(["persistent", "pair"], descending=[True, False])
    return {"deviation": dev, "summary": pl.DataFrame(summ)}
