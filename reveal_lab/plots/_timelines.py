"""Timelines along a run: Fig. 2's flagged windows per detector (one panel per run and
host, one row per detector, fault episodes shaded), and the report's score timelines and
raw traces of the top evidence metrics with their anomalous windows shaded."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import numpy as np
import polars as pl

from reveal_lab.plots._figures import _styled
from reveal_lab.plots._style import color_for, mark_empty, new_figure

__all__ = ["plot_flag_timelines", "plot_score_timeline", "plot_evidence_traces", "EPISODE_COLOR"]

#: the shade of a labelled fault episode on every timeline
EPISODE_COLOR = "#f2b134"


def _methods(frame: pl.DataFrame, prefix: str) -> list[str]:
    return [c.removeprefix(prefix) for c in frame.columns if c.startswith(prefix)]


def _seconds(t: pl.Series | list, t0: dt.datetime) -> np.ndarray:
    s = pl.Series(t) if not isinstance(t, pl.Series) else t
    return ((s - t0).dt.total_milliseconds() / 1000.0).to_numpy()


def _shade_episodes(ax, episodes: pl.DataFrame | None, t0: dt.datetime, *, label: bool) -> int:  # noqa: ANN001
    if episodes is None or episodes.height == 0:
        return 0
    for i, (a, b) in enumerate(zip(_seconds(episodes["start"], t0), _seconds(episodes["end"], t0), strict=True)):
        ax.axvspan(a, b, color=EPISODE_COLOR, alpha=0.3, lw=0, zorder=0,
                   label="labelled fault episode" if label and i == 0 else None)
    return episodes.height


@_styled
def plot_flag_timelines(
    frame: pl.DataFrame,
    episodes: pl.DataFrame | None = None,
    *,
    methods: Sequence[str] | None = None,
    max_panels: int = 6,
):
    """Fig. 2 as in the paper: per run and host, the windows each detector flags along
    the run (one row per detector, a bar per flagged window from its start to its end),
    labelled fault episodes shaded.

    ``frame``: ``run, host, start, end`` and ``flag_<detector>`` columns (e.g.
    :func:`reveal_lab.studies.flag_timelines`); ``episodes``: ``run, host, start, end``
    (e.g. :func:`reveal_lab.studies.labelled_episodes`). Runs with episodes come first.
    Time is in seconds from the run's first window.
    """
    methods = list(methods or _methods(frame, "flag_"))
    keys = frame.select("run", "host").unique(maintain_order=True).rows() if frame.height else []
    if episodes is not None and episodes.height:
        with_ep = set(episodes.select("run", "host").rows())
        keys = sorted(keys, key=lambda k: k not in with_ep)
    keys = keys[:max_panels]
    n = max(len(keys), 1)
    fig, axes = new_figure(n, 1, width=7.5, height=0.9 + (0.28 * len(methods) + 0.55) * n)
    if not keys:
        mark_empty(axes[0, 0], "no windows")
        return fig
    legend = {}
    for ax, (run, host) in zip(axes[:, 0], keys, strict=False):
        part = frame.filter((pl.col("run") == run) & (pl.col("host") == host)).sort("start")
        t0 = part["start"].min()
        a, b = _seconds(part["start"], t0), _seconds(part["end"], t0)
        ep = None if episodes is None else episodes.filter((pl.col("run") == run) & (pl.col("host") == host))
        _shade_episodes(ax, ep, t0, label=True)
        for i, m in enumerate(methods):
            flags = part[f"flag_{m}"].fill_null(False).to_numpy().astype(bool)
            bars = [(x, w) for x, w in zip(a[flags], (b - a)[flags], strict=True)]
            ax.broken_barh(bars, (i - 0.35, 0.7), color=color_for(m, i), label=m, gid=f"flags:{m}")
        ax.set_yticks(range(len(methods)), methods)
        ax.set_ylim(len(methods) - 0.4, -0.6)  # the first detector on top
        ax.set_xlim(0, max(float(b.max()) if b.size else 1.0, 1.0))
        ax.grid(axis="y", visible=False)
        title = run if len(run) <= 70 else run[:69] + "…"
        ax.set_title(f"{title} · {host}", loc="left", fontsize=8)
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(lab, h)
    axes[-1, 0].set_xlabel("seconds from the run's first window")
    if "labelled fault episode" in legend:
        fig.legend([legend["labelled fault episode"]], ["labelled fault episode"], loc="outside lower right",
                   frameon=False)
    return fig


@_styled
def plot_score_timeline(
    windows: pl.DataFrame,
    thresholds: dict[str, float],
    episodes: pl.DataFrame | None = None,
    *,
    methods: Sequence[str] | None = None,
    title: str = "",
    recording: tuple[dt.datetime, dt.datetime] | None = None,
):
    """The report's timeline for one run and host: each detector's score along the run
    (one panel per detector) with its threshold (dashed) and its flagged windows (dots);
    labelled episodes shaded when given.

    ``windows``: ``start``, ``end``, ``score_<det>`` and ``label_<det>`` columns (a
    :class:`~reveal_lab.pipeline.Detection`'s windows of one host). ``recording``: the
    whole recording's first and last timestamps; the axis then spans all of it and the
    scored span (the windows' first start to last end) is shaded, so what trimming left
    out shows as unshaded, unscored time.
    """
    methods = list(methods or _methods(windows, "score_"))
    n = max(len(methods), 1)
    fig, axes = new_figure(n, 1, width=7.5, height=0.6 + 1.05 * n, sharex=True)
    if windows.height == 0 or not methods:
        mark_empty(axes[0, 0], "no windows")
        return fig
    w = windows.sort("start")
    t0 = w["start"].min() if recording is None else recording[0]
    mid = (_seconds(w["start"], t0) + _seconds(w["end"], t0)) / 2
    for ax, m in zip(axes[:, 0], methods, strict=False):
        if recording is not None:
            a, b = _seconds([w["start"].min(), w["end"].max()], t0)
            ax.axvspan(a, b, color="#55a868", alpha=0.08, lw=0, label="scored span", gid="scored-span")
            ax.set_xlim(0.0, float(_seconds([recording[1]], t0)[0]))
        _shade_episodes(ax, episodes, t0, label=ax is axes[0, 0])
        s = w[f"score_{m}"].cast(pl.Float64).to_numpy()
        ax.plot(mid, s, color=color_for(m), lw=1, label="score", gid=f"score:{m}")
        if m in thresholds and thresholds[m] is not None and np.isfinite(thresholds[m]):
            ax.axhline(thresholds[m], color="0.25", ls="--", lw=0.9, label="threshold", gid=f"threshold:{m}")
        if f"label_{m}" in w.columns:
            flag = w[f"label_{m}"].fill_null(False).cast(pl.Boolean).to_numpy()
            ax.plot(mid[flag], s[flag], "o", ms=4, color="#c44e52", label="flagged window", gid=f"flagged:{m}")
        ax.set_ylabel(m, rotation=0, ha="right", va="center")
    axes[-1, 0].set_xlabel(
        "seconds from the recording's start (window centres)"
        if recording is not None
        else "seconds from the first window (window centres)"
    )
    if title:
        axes[0, 0].set_title(title, loc="left", fontsize=9)
    handles: dict[str, object] = {}
    for ax in axes[:, 0]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=len(handles), frameon=False)
    return fig


@_styled
def plot_evidence_traces(
    traces: pl.DataFrame,
    windows: pl.DataFrame,
    *,
    max_metrics: int = 4,
    title: str = "",
):
    """Raw traces of the top evidence metrics along the run (one panel per metric),
    their anomalous windows shaded.

    ``traces``: ``timestamp`` and one column per metric; ``windows``: ``metric, start,
    end`` of the anomalous windows that name each metric in their evidence.
    """
    metrics = [c for c in traces.columns if c != "timestamp"][:max_metrics]
    n = max(len(metrics), 1)
    fig, axes = new_figure(n, 1, width=7.5, height=0.5 + 1.0 * n, sharex=True)
    if traces.height == 0 or not metrics:
        mark_empty(axes[0, 0], "no evidence")
        return fig
    t0 = traces["timestamp"].min()
    t = _seconds(traces["timestamp"], t0)
    for i, (ax, m) in enumerate(zip(axes[:, 0], metrics, strict=False)):
        ax.plot(t, traces[m].cast(pl.Float64).to_numpy(), color=color_for("", i), lw=0.9, gid=f"trace:{m}")
        wm = windows.filter(pl.col("metric") == m)
        for a, b in zip(_seconds(wm["start"], t0), _seconds(wm["end"], t0), strict=True):
            ax.axvspan(a, b, color="#c44e52", alpha=0.18, lw=0)
        ax.set_title(m if len(m) <= 90 else m[:89] + "…", loc="left", fontsize=8)
    axes[-1, 0].set_xlabel("seconds from the run's start (anomalous windows naming the metric shaded)")
    if title:
        fig.suptitle(title, x=0.01, ha="left", fontsize=9)
    return fig
