"""Figures of the reliability study (notebook 10), in the house style of :mod:`reveal_lab.plots`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from reveal_lab.plots import color_for, new_figure
from reveal_lab.reliability._claims import MEASURED_MTTF
from reveal_lab.reliability._model import (
    FAILURE_RATES,
    expected_ettr,
    mttf_hours,
    optimal_interval,
    renewal_ettr,
)

__all__ = [
    "plot_mttf_scaling",
    "plot_ettr_vs_interval",
    "plot_closed_vs_simulated",
    "plot_lemon_hosts",
    "ettr_optima",
]

_CLUSTER_LABEL = {"rsc1": "RSC-1", "rsc2": "RSC-2"}


def _gpu_label(g: int) -> str:
    return f"{g:,}"


def plot_mttf_scaling(max_gpus: int = 131072) -> Any:
    """MTTF against job size on log-log axes: 1/(N·r_f) for both clusters, the paper's
    measured points (filled) and projections (open)."""
    fig, axes = new_figure(width=6.4, height=3.6)
    ax = axes[0, 0]
    g = np.unique(np.round(np.geomspace(8, max_gpus, 200) / 8).astype(int) * 8)
    for i, (name, r) in enumerate(FAILURE_RATES.items()):
        h = np.array([mttf_hours(int(x), r) for x in g])
        label = f"1/(N·r_f), {_CLUSTER_LABEL[name]} ({r} / 1,000 node-days)"
        ax.plot(g, h, color=color_for(name, i), label=label)
    for gpus, hours, measured in MEASURED_MTTF:
        line = mttf_hours(gpus, "rsc1")
        ax.plot(gpus, hours, "o", ms=7, color="black", mfc="black" if measured else "white",
                label=None)
        txt = f"{hours / 24:.1f} d" if hours > 72 else f"{hours:.2g} h"
        if measured:
            txt += f"\n(line: {line / 24:.0f} d)" if line > 72 else f"\n(line: {line:.0f} h)"
        ax.annotate(txt, (gpus, hours), textcoords="offset points", xytext=(8, -6) if measured else (-8, -8),
                    ha="left" if measured else "right", va="top", fontsize=7)
    ax.plot([], [], "o", color="black", label="paper: measured")
    ax.plot([], [], "o", color="black", mfc="white", label="paper: projected")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("GPUs in the job (8 per node)")
    ax.set_ylabel("MTTF (hours)")
    ax.set_title("MTTF against job size: both measured points lie below the RSC-1 line")
    ax.legend(loc="upper right", frameon=False)
    ax.set_ylim(0.05, 3e4)
    return fig


def ettr_optima(
    sizes: Sequence[int], clusters: Sequence[str], restart_h: float, write_h: float
) -> pl.DataFrame:
    """Per (cluster, size): the optimal interval (paper's √(2w/(N·r_f)) and the exact
    maximiser of the closed form), and the closed-form and exact ETTR there."""
    rows = []
    for c in clusters:
        for g in sizes:
            young = optimal_interval(g, write_h, c)
            best = optimal_interval(g, write_h, c, restart_h=restart_h)
            rows.append({
                "cluster": _CLUSTER_LABEL.get(c, c), "gpus": g, "mttf_h": mttf_hours(g, c),
                "optimal_min_paper": young * 60, "optimal_min_exact": best * 60,
                "ettr_closed_at_optimum": expected_ettr(g, best, restart_h, write_h, c) if best else np.nan,
                "ettr_renewal_at_optimum": renewal_ettr(g, best, restart_h, write_h, c) if best else np.nan,
            })
    return pl.DataFrame(rows)


def plot_ettr_vs_interval(
    sizes: Sequence[int] = (1024, 8192, 16384, 100_000),
    clusters: Sequence[str] = ("rsc1", "rsc2"),
    restart_h: float = 5 / 60,
    write_h: float = 30 / 3600,
) -> Any:
    """Expected ETTR against the checkpoint interval, one panel per cluster, one line per
    job size: the closed form (solid), the exact renewal value (dashed), the optimum (dot)."""
    fig, axes = new_figure(1, len(clusters), width=4.0 * len(clusters), height=3.6, sharey=True)
    iv = np.geomspace(0.5, 480, 300) / 60
    for j, c in enumerate(clusters):
        ax = axes[0, j]
        for i, g in enumerate(sizes):
            col = color_for(str(g), i)
            ax.plot(iv * 60, expected_ettr(g, iv, restart_h, write_h, c), color=col,
                    label=f"{_gpu_label(g)} GPUs (MTTF {mttf_hours(g, c):.2g} h)")
            ax.plot(iv * 60, renewal_ettr(g, iv, restart_h, write_h, c), color=col, ls="--", lw=0.8)
            best = optimal_interval(g, write_h, c, restart_h=restart_h)
            if best > 0:
                ax.plot(best * 60, expected_ettr(g, best, restart_h, write_h, c), "o", color=col, ms=5)
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("checkpoint interval Δ (minutes)")
        ax.set_title(f"{_CLUSTER_LABEL.get(c, c)} ({FAILURE_RATES.get(c, c)} / 1,000 node-days)")
        ax.legend(loc="lower left", frameon=False, fontsize=7)
    axes[0, 0].set_ylabel("expected ETTR")
    axes[0, -1].plot([], [], color="grey", label="closed form")
    axes[0, -1].plot([], [], color="grey", ls="--", lw=0.8, label="exact (renewal)")
    axes[0, -1].plot([], [], "o", color="grey", ms=5, label="optimum")
    axes[0, -1].legend(loc="lower left", frameon=False, fontsize=7)
    fig.suptitle(f"u₀ = {restart_h * 60:g} min, w = {write_h * 3600:g} s", fontsize=9)
    return fig


def plot_closed_vs_simulated(grid: pl.DataFrame, limit: float = 0.05) -> Any:
    """The closed form against the simulator across a grid (:func:`agreement_grid`):
    left, closed vs simulated (95 % CI bars); right, the relative gap against the lost
    fraction λ·(Δ/2 + u₀), with the largest gap in each regime marked."""
    fig, axes = new_figure(1, 2, width=8.8, height=3.6)
    a, b = axes[0, 0], axes[0, 1]
    for i, (regime, marker) in enumerate((("approximation holds", "o"), ("breaks", "x"))):
        d = grid.filter(pl.col("regime") == regime)
        if not d.height:
            continue
        col = color_for(regime, i)
        xerr = [d["simulated"] - d["ci_low"], d["ci_high"] - d["simulated"]]
        a.errorbar(d["simulated"], d["closed"], xerr=xerr, fmt=marker, color=col, ms=4, label=regime)
        gap = np.maximum(d["rel_gap"].to_numpy() * 100, 1e-3)
        b.plot(d["load"], gap, marker, color=col, ms=4, label=regime)
        w = d.sort("rel_gap", descending=True).row(0, named=True)
        b.annotate(f"max {w['rel_gap'] * 100:.1f} % ({regime})\n{_gpu_label(w['gpus'])} GPUs, "
                   f"Δ {w['interval_min']:g} min, u₀ {w['restart_min']:g} min",
                   (w["load"], max(w["rel_gap"] * 100, 1e-3)), textcoords="offset points",
                   xytext=(-8, -2) if i else (-10, 12), ha="right", va="top" if i else "bottom", fontsize=7,
                   arrowprops={"arrowstyle": "-", "color": "grey", "lw": 0.6})
    a.plot([0, 1], [0, 1], color="grey", lw=0.8)
    a.set_xlabel("simulated mean ETTR")
    a.set_ylabel("closed-form E[ETTR]")
    a.set_title("closed form against simulation")
    a.legend(loc="upper left", frameon=False)
    b.axhline(limit * 100, color="grey", ls=":", lw=0.8)
    b.set_xscale("log")
    b.set_yscale("log")
    b.set_ylim(1e-3, 400)
    b.text(0.02, limit * 100, f"{limit:.0%}", transform=b.get_yaxis_transform(), va="bottom", fontsize=7)
    b.set_xlabel("lost fraction λ·(Δ/2 + u₀)")
    b.set_ylabel("|closed − simulated| / simulated (%)")
    b.set_title("where the approximation breaks")
    return fig


def plot_lemon_hosts(ranking: pl.DataFrame) -> Any:
    """Each host's lemon share across runs with its Wilson 95 % interval and the
    even-spread share (dashed)."""
    fig, axes = new_figure(width=5.0, height=3.0)
    ax = axes[0, 0]
    if not ranking.height:
        ax.text(0.5, 0.5, "no multi-host runs to rank", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    x = np.arange(ranking.height)
    share = ranking["share"].to_numpy()
    err = [share - ranking["ci_low"].to_numpy(), ranking["ci_high"].to_numpy() - share]
    ax.bar(x, share, color=[color_for(h, i) for i, h in enumerate(ranking["host"])], width=0.5)
    ax.errorbar(x, share, yerr=err, fmt="none", color="black", capsize=4, lw=1)
    ax.axhline(float(ranking["chance"][0]), color="grey", ls="--", lw=0.8, label="even spread")
    ticks = [f"{h}\n{k}/{n} runs" for h, k, n in ranking.select("host", "n_flagged", "n_runs").rows()]
    ax.set_xticks(x, ticks)
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of runs flagged")
    ax.set_title("lemon hosts: share of runs where a host stands out (95 % CI)")
    ax.legend(loc="upper right", frameon=False)
    return fig
