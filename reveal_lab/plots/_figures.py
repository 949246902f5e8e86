"""One function per figure of the paper (and of our extensions). Each takes the
frames that a :mod:`reveal_lab.studies` function returns and gives back a
matplotlib :class:`~matplotlib.figure.Figure` (pyplot's global state is not used)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import polars as pl

from reveal_lab.plots._style import color_for, mark_empty, new_figure, style

__all__ = [
    "plot_usage_cdfs",
    "plot_pruning_curve",
    "plot_detector_windows",
    "plot_causes_per_window",
    "plot_collector_overhead",
    "plot_granularity_timelines",
    "plot_raw_traces",
    "plot_crosshost_deviation",
    "plot_projection",
    "plot_dtw_distances",
    "plot_message",
    "plot_overhead_comparison",
]

F = TypeVar("F", bound=Callable[..., Any])


def _styled(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with style():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _integer_ticks():  # noqa: ANN202 - a matplotlib locator for counts
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _short(name: str, n: int = 28) -> str:
    return name if len(name) <= n else name[: n - 1] + "…"


def _workload_labels(names: Sequence[str]) -> dict[str, str]:
    """Short legend names: a workload's first ``__`` part (``CNN__ImageClassification__x``
    -> ``CNN``) when those stay distinct, else the name cut to 28 characters.

    >>> _workload_labels(["CNN__Img__s", "MLP__Img__s"])
    {'CNN__Img__s': 'CNN', 'MLP__Img__s': 'MLP'}
    """
    short = {n: str(n).split("__")[0] for n in names}
    if len(set(short.values())) == len(short):
        return short
    return {n: _short(str(n)) for n in names}


def _wrap(text: str, width: int = 26) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text


def _ecdf(ax, values: np.ndarray, **line: Any) -> None:  # noqa: ANN001 - matplotlib Axes
    """The empirical CDF of ``values`` on ``ax`` as ``seaborn.ecdfplot(x=values, ax=ax, **line)``
    draws it, line for line, without importing seaborn (with pandas, scipy.stats and statsmodels:
    about 2 s of CPU in each process): the finite values sorted, a step up of 1/n at each, from
    0 at -inf (``steps-post``), the line's y margins stuck at 0 and 1; an axis label still empty
    gets seaborn's (none on x, "Proportion" on y), shown as the axis' tick labels are."""
    x = np.asarray(values).astype(float)
    x = x[np.isfinite(x)]
    if x.size:
        x = x[x.argsort()]
        y = np.ones_like(x).cumsum()
        artist, = ax.plot(np.r_[-np.inf, x], np.r_[0, y / y.max()], **line, drawstyle="steps-post")
        artist.sticky_edges.y[:] = 0, 1
    if not ax.get_xlabel():
        ax.set_xlabel(None, visible=any(t.get_visible() for t in ax.get_xticklabels()))
    if not ax.get_ylabel():
        ax.set_ylabel("Proportion", visible=any(t.get_visible() for t in ax.get_yticklabels()))


@_styled
def plot_usage_cdfs(
    samples: pl.DataFrame, labels: dict[str, str] | None = None, *, by: str = "workload", max_groups: int = 8
):
    """CDFs of key resource usage (one panel per quantity, one line per ``by`` group and
    the pooled ``all`` in black; :func:`_ecdf`) from :func:`reveal_lab.studies.usage_samples`.

    ``labels``: axis label per quantity (the caller's vocabulary; the quantity's name otherwise).
    Panels follow the quantities' order of first appearance in ``samples``.
    """
    from matplotlib.ticker import MaxNLocator, NullFormatter

    labels = labels or {}
    quantities = samples.get_column("quantity").unique(maintain_order=True).to_list() if samples.height else []
    n = max(len(quantities), 1)
    fig, axes = new_figure(1, n, width=2.9 * n, height=3.1)
    if not quantities:
        mark_empty(axes[0, 0], "no usage metrics found")
        return fig
    groups = samples.get_column(by).unique(maintain_order=True).to_list()[:max_groups]
    names = _workload_labels([str(g) for g in groups]) if by == "workload" else {str(g): _short(str(g), 22) for g in groups}
    for ax, q in zip(axes[0], quantities, strict=False):
        part = samples.filter(pl.col("quantity") == q)
        for i, g in enumerate(groups):
            v = part.filter(pl.col(by) == g).get_column("value").drop_nulls().to_numpy()
            if v.size:
                _ecdf(ax, v, label=names[str(g)], alpha=0.85, gid=f"ecdf:{g}", color=color_for("", i))
        v = part.get_column("value").drop_nulls().to_numpy()
        _ecdf(ax, v, lw=2, label="all", gid="ecdf:all", color="k")
        ax.set_xlabel(_wrap(labels.get(q, q)))
        ax.set_ylabel("")
        if q == "network_bytes" and v.size and v.max() > 0:
            ax.set_xscale("symlog")
            ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels collide on a log axis
            ax.set_xlim(left=0)
        else:
            ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.set_ylim(0, 1.02)
    axes[0, 0].set_ylabel("CDF")
    handles: dict[str, object] = {}
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=min(len(handles), 5),
               frameon=False)
    return fig


_CURVE_LABELS = {
    "selected_ratio": "selected ratio (share of metrics kept)",
    "avg_multi_r2": "avg multi-R² proxy (pruned metrics explained by kept ones)",
    "avg_max_abs_r": "avg max |r| (of a pruned metric with a kept one)",
    "n_selected": "metrics kept",
}
#: the paper's Fig. 4 colours: multi-R² yellow, max |r| blue, selected ratio green
_CURVE_COLORS = {"avg_multi_r2": "#e0a800", "avg_max_abs_r": "#1f77b4", "selected_ratio": "#2ca02c"}


@_styled
def plot_pruning_curve(
    curve: pl.DataFrame,
    *,
    ys: Sequence[str] | None = None,
    x: str = "threshold",
    group: str | None = "workload",
    marker: float | None = 0.5,
):
    """Fig. 4 as in the paper: on one axes, each measure of correlation pruning against
    the threshold (from :func:`reveal_lab.pruning.pruning_curve`): the ``all`` row (the
    union over workloads) bold, each workload thin in the same colour, and a marker at
    |r| = ``marker`` (the paper's threshold)."""
    if ys is None:
        ys = [c for c in ("avg_multi_r2", "avg_max_abs_r", "selected_ratio") if c in curve.columns] or [
            "n_selected"
        ]
    fig, axes = new_figure(width=6.4, height=3.9)
    ax = axes[0, 0]
    if curve.height == 0:
        mark_empty(ax)
        return fig
    has_group = bool(group) and group in curve.columns
    groups = curve.get_column(group).unique(maintain_order=True).to_list() if has_group else [None]
    main = "all" if "all" in groups else None
    for j, y in enumerate(ys):
        c = _CURVE_COLORS.get(y, color_for("", j))
        for g in groups:
            part = (curve if g is None else curve.filter(pl.col(group) == g)).sort(x)  # type: ignore[arg-type]
            if g == main:
                ax.plot(part[x], part[y], color=c, lw=2.4, marker="o", ms=4, label=_CURVE_LABELS.get(y, y), gid=f"all:{y}")
            else:
                ax.plot(part[x], part[y], color=c, lw=0.8, alpha=0.35, gid=f"workload:{y}:{g}")
    if marker is not None:
        ax.axvline(marker, color="0.2", ls="--", lw=1, gid="marker")
        ax.annotate(f"|r| = {marker:g}", (marker, 0.03), xycoords=("data", "axes fraction"), xytext=(4, 0),
                    textcoords="offset points", fontsize=8)
    ax.set_xlabel("correlation threshold |r|")
    ax.set_ylabel("value" if "n_selected" not in ys else "metrics kept")
    if "n_selected" not in ys:
        ax.set_ylim(0, 1.02)
    handles, labels = ax.get_legend_handles_labels()
    if has_group and len(groups) > 1:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color="0.5", lw=0.8, alpha=0.6))
        labels.append(f"thin: each of {len([g for g in groups if g != main])} workloads")
    fig.legend(handles, labels, loc="outside lower center", ncol=2, frameon=False)
    return fig


@_styled
def plot_detector_windows(counts: pl.DataFrame):
    """Fig. 2: anomalous windows per detector and host (grouped bars)."""
    fig, axes = new_figure(
        width=max(4.0, 0.9 * max(counts["host"].n_unique() if counts.height else 1, 1) + 2.5), height=3.0
    )
    ax = axes[0, 0]
    if counts.height == 0:
        mark_empty(ax, "no anomalous windows")
        return fig
    hosts = sorted(counts["host"].unique().to_list())
    methods = sorted(counts["method"].unique().to_list())
    width = 0.8 / len(methods)
    xs = np.arange(len(hosts))
    for i, m in enumerate(methods):
        part = dict(counts.filter(pl.col("method") == m).select("host", "n_windows").iter_rows())
        ax.bar(
            xs + i * width - 0.4 + width / 2,
            [part.get(h, 0) for h in hosts],
            width,
            label=m,
            color=color_for(m, i),
        )
    ax.set_xticks(xs, hosts, rotation=30, ha="right")
    ax.set_ylabel("anomalous windows")
    ax.yaxis.set_major_locator(_integer_ticks())
    ax.legend(frameon=False)
    return fig


@_styled
def plot_causes_per_window(causes: pl.DataFrame, *, max_windows: int = 40):
    """Fig. 3: per anomalous window, the share of evidence per subsystem (stacked bars),
    and the distribution of distinct subsystems per window."""
    fig, axes = new_figure(1, 2, width=8.0, height=3.0, gridspec_kw={"width_ratios": [3, 1]})
    ax, ax2 = axes[0]
    if causes.height == 0:
        mark_empty(ax, "no anomalous windows")
        mark_empty(ax2)
        return fig
    from reveal_lab.telemetry import SUBSYSTEMS

    subs = [s for s in SUBSYSTEMS if s in causes.columns]
    part = causes.head(max_windows)
    bottom = np.zeros(part.height)
    for s in subs:
        v = part[s].fill_null(0).to_numpy()
        ax.bar(np.arange(part.height), v, bottom=bottom, color=color_for(s), label=s, width=0.85)
        bottom += v
    ax.set_xlabel(f"anomalous window (first {part.height})")
    ax.set_ylabel("share of the explanation")
    ax.legend(frameon=False, ncol=min(len(subs), 6), loc="upper center", bbox_to_anchor=(0.5, 1.18))
    vals, cnt = np.unique(causes["n_subsystems"].to_numpy(), return_counts=True)
    ax2.bar(vals, cnt, color="0.4")
    ax2.set_xticks(vals)
    ax2.set_xlabel("subsystems per window")
    ax2.set_ylabel("windows")
    ax2.yaxis.set_major_locator(_integer_ticks())
    return fig


@_styled
def plot_collector_overhead(
    table: pl.DataFrame,
    *,
    x: str = "interval_ms",
    y: str = "pct_of_core",
    group: str = "process",
    unit: str = "CPU, % of one core",
):
    """Fig. 5: collector overhead per sampling interval, one bar per process
    (from :func:`reveal_lab.studies.collector_overhead_table`)."""
    fig, axes = new_figure(width=5.6, height=3.2)
    ax = axes[0, 0]
    if table.height == 0:
        mark_empty(ax, "no collector benchmark results")
        return fig
    xs = sorted(table[x].unique().to_list())
    groups = table[group].unique(maintain_order=True).to_list()
    width = 0.8 / len(groups)
    pos = np.arange(len(xs))
    for i, g in enumerate(groups):
        part = dict(table.filter(pl.col(group) == g).select(x, y).iter_rows())
        ax.bar(
            pos + i * width - 0.4 + width / 2,
            [part.get(v, np.nan) for v in xs],
            width,
            label=str(g),
            color=color_for("", i),
        )
    ax.set_xticks(pos, [f"{v:g} ms" if isinstance(v, (int, float)) else str(v) for v in xs])
    ax.set_xlabel("sampling interval")
    ax.set_ylabel(unit)
    ax.legend(frameon=False)
    return fig


@_styled
def plot_granularity_timelines(intervals: pl.DataFrame, *, max_runs: int = 4):
    """Fig. 6: anomalous intervals at each granularity along the run, one panel per run
    (and host) from :func:`reveal_lab.studies.granularity_intervals`."""
    keys = intervals.select("run_id", "host").unique(maintain_order=True).head(max_runs).rows()
    fig, axes = new_figure(
        max(len(keys), 1), 1, width=7.0, height=1.1 + 0.9 * max(len(keys), 1), sharex=False
    )
    if not keys:
        mark_empty(axes[0, 0])
        return fig
    grans = intervals["granularity"].unique(maintain_order=True).to_list()
    for ax, (run_id, host) in zip(axes[:, 0], keys, strict=False):
        part = intervals.filter((pl.col("run_id") == run_id) & (pl.col("host") == host))
        for i, g in enumerate(grans):
            iv = part.filter((pl.col("granularity") == g) & pl.col("start_s").is_not_null())
            ax.broken_barh(
                [(a, b - a) for a, b in iv.select("start_s", "end_s").iter_rows()],
                (i - 0.35, 0.7),
                color=color_for("", i),
            )
        length = part["run_length_s"].max()
        ax.set_xlim(0, float(length) if length else None)
        ax.set_yticks(range(len(grans)), grans)
        ax.set_ylim(-0.6, len(grans) - 0.4)
        ax.set_title(f"{_short(str(run_id), 60)} @ {host}", loc="left")
    axes[-1, 0].set_xlabel("time since run start [s]")
    return fig


@_styled
def plot_raw_traces(traces: pl.DataFrame, *, title: str | None = None, normalize: bool = False):
    """Fig. 7/8: raw metric traces around a flagged window (shaded), one panel per metric
    from :func:`reveal_lab.studies.traces_around`."""
    metrics = traces["metric"].unique(maintain_order=True).to_list() if traces.height else []
    fig, axes = new_figure(
        max(len(metrics), 1), 1, width=6.4, height=0.4 + 1.3 * max(len(metrics), 1), sharex=True
    )
    if not metrics:
        mark_empty(axes[0, 0])
        return fig
    for i, (ax, m) in enumerate(zip(axes[:, 0], metrics, strict=False)):
        part = traces.filter(pl.col("metric") == m).sort("t_s")
        y = part["value"].to_numpy().astype(float)
        if normalize and np.nanstd(y) > 0:
            y = (y - np.nanmean(y)) / np.nanstd(y)
        ax.plot(part["t_s"].to_numpy(), y, color=color_for("", i))
        t = part["t_s"].to_numpy()
        flag = part["in_window"].fill_null(False).to_numpy().astype(bool)
        edges = np.flatnonzero(np.diff(np.concatenate([[0], flag.astype(np.int8), [0]])))
        for a, b in zip(edges[::2], edges[1::2], strict=True):  # each contiguous flagged span
            ax.axvspan(float(t[a]), float(t[b - 1]), color="#c44e52", alpha=0.15)
        ax.set_title(_short(m, 80), loc="left", fontsize=8)
    axes[-1, 0].set_xlabel("seconds from window start")
    if title:
        fig.suptitle(title)
    return fig


@_styled
def plot_crosshost_deviation(
    dev: pl.DataFrame, *, x: str = "host", y: str = "deviation", group: str = "metric", max_groups: int = 6
):
    """Fig. 9: each host's deviation from its peers for memory metrics (bars per host)."""
    groups = dev[group].unique(maintain_order=True).head(max_groups).to_list() if dev.height else []
    fig, axes = new_figure(1, max(len(groups), 1), width=max(3.0 * len(groups), 4.0), height=3.0)
    if not groups:
        mark_empty(axes[0, 0], "no cross-host deviation")
        return fig
    for ax, g in zip(axes[0], groups, strict=False):
        part = dev.filter(pl.col(group) == g)
        v = part[y].to_numpy().astype(float)
        ax.bar(
            np.arange(part.height),
            v,
            color=["#c44e52" if abs(a) == np.nanmax(np.abs(v)) else "0.6" for a in v],
        )
        ax.set_xticks(np.arange(part.height), [str(h) for h in part[x].to_list()], rotation=30, ha="right")
        ax.set_title(_short(str(g), 40), fontsize=8)
    axes[0, 0].set_ylabel(y)
    return fig


@_styled
def plot_projection(embedding: np.ndarray, rows: pl.DataFrame, *, title: str = "", max_legend: int = 10):
    """Projected windows coloured by workload (left) and by anomaly (right)."""
    fig, axes = new_figure(1, 2, width=8.0, height=3.6)
    ax, ax2 = axes[0]
    emb = np.asarray(embedding)
    wl = rows["workload"].to_list()
    groups = list(dict.fromkeys(wl))
    for i, g in enumerate(groups):
        m = np.array([w == g for w in wl])
        ax.scatter(
            emb[m, 0],
            emb[m, 1],
            s=6,
            color=color_for("", i),
            label=_short(g, 30) if i < max_legend else None,
            alpha=0.7,
            linewidths=0,
        )
    ax.set_title(f"{title} by workload".strip())
    if groups:
        ax.legend(frameon=False, markerscale=2, fontsize=6, loc="best")
    an = rows["anomalous"].to_numpy().astype(bool)
    ax2.scatter(emb[~an, 0], emb[~an, 1], s=5, color="0.7", label="normal", linewidths=0)
    ax2.scatter(emb[an, 0], emb[an, 1], s=12, color="#c44e52", label="anomalous", linewidths=0)
    ax2.set_title(f"{title} by anomaly".strip())
    ax2.legend(frameon=False, markerscale=2)
    for a in (ax, ax2):
        a.set_xticks([])
        a.set_yticks([])
    return fig


@_styled
def plot_dtw_distances(
    distances: pl.DataFrame, pairs: pl.DataFrame, *, alpha: float = 0.05, metrics: Sequence[str] | None = None
):
    """§5.4: DTW distance to the own workload's median trace vs other workloads'
    (left), and the p-values of the signed-rank tests (right)."""
    fig, axes = new_figure(1, 2, width=8.0, height=3.0, gridspec_kw={"width_ratios": [2, 1]})
    ax, ax2 = axes[0]
    if distances.height == 0:
        mark_empty(ax)
        mark_empty(ax2)
        return fig
    d = distances if metrics is None else distances.filter(pl.col("metric").is_in(list(metrics)))
    own = d.filter(pl.col("reference") == "own")["distance"].drop_nans().drop_nulls().to_numpy()
    oth = d.filter(pl.col("reference") != "own")["distance"].drop_nans().drop_nulls().to_numpy()
    data = [x for x in (own, oth) if x.size]
    labels = [lab for lab, x in (("own workload", own), ("other workloads", oth)) if x.size]
    if data:
        ax.boxplot(data, tick_labels=labels, showfliers=False)
    ax.set_ylabel("DTW distance to median trace")
    p = pairs["pvalue"].drop_nans().drop_nulls().to_numpy()
    if p.size:
        ax2.hist(p, bins=np.linspace(0, 1, 21), color="0.4")
        ax2.axvline(alpha, color="#c44e52", ls="--")
    else:
        mark_empty(ax2, "no testable pairs")
    ax2.set_xlabel("p-value (Wilcoxon)")
    ax2.set_ylabel("workload–metric pairs")
    return fig


@_styled
def plot_message(text: str, *, title: str | None = None):
    """A figure that says why a study has nothing to show (e.g. the data lacks labels)."""
    fig, axes = new_figure(width=5.0, height=1.6)
    mark_empty(axes[0, 0], text)
    axes[0, 0].grid(False)
    for s in axes[0, 0].spines.values():
        s.set_visible(False)
    if title:
        axes[0, 0].set_title(title)
    return fig


#: Fig. 5's colours: one per source (measured here / stored benchmark), never shared
_SOURCE_COLORS = ("#4c72b0", "#8c8c8c", "#55a868", "#8172b3")


@_styled
def plot_overhead_comparison(comp: pl.DataFrame, *, perf: str = "perf stat", perf_interval_ms: float = 100.0):
    """Fig. 5 as in the paper: the collector's CPU at each sampling interval (bars, one
    colour per source: measured here, stored benchmark) against ``perf stat`` at its
    interval ``perf_interval_ms`` (the paper's 100 ms; a dashed line per source).
    ``comp``: ``source, process, interval_ms, pct_of_core``
    (:func:`reveal_lab.studies.overhead_comparison`)."""
    fig, axes = new_figure(width=6.0, height=3.3)
    ax = axes[0, 0]
    coll = comp.filter(pl.col("process") != perf)
    if coll.height == 0:
        mark_empty(ax, "no collector measurement")
        return fig
    xs = sorted(coll["interval_ms"].unique().to_list())
    sources = comp["source"].unique(maintain_order=True).to_list()
    width = 0.8 / len(sources)
    pos = np.arange(len(xs))
    for i, src in enumerate(sources):
        c = _SOURCE_COLORS[i % len(_SOURCE_COLORS)]
        part = dict(coll.filter(pl.col("source") == src).select("interval_ms", "pct_of_core").iter_rows())
        ax.bar(pos + i * width - 0.4 + width / 2, [part.get(v, np.nan) for v in xs], width, color=c,
               label=f"collector ({src})", gid=f"collector:{src}")
        p = comp.filter(
            (pl.col("source") == src) & (pl.col("process") == perf) & (pl.col("interval_ms") == perf_interval_ms)
        )
        for iv, v in p.select("interval_ms", "pct_of_core").iter_rows():
            ax.axhline(v, color=c, ls="--", lw=1.2, label=f"{perf} at {iv:g} ms ({src})", gid=f"perf:{src}")
    ax.set_xticks(pos, [f"{v:g} ms" for v in xs])
    ax.set_xlabel("collector sampling interval")
    ax.set_ylabel("CPU, % of one core")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, frameon=False, loc="outside lower center", ncol=2, fontsize=7)
    return fig
