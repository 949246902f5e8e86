"""The remediation comparison's figure (:func:`reveal_lab.compare.compare_runs`)."""

from __future__ import annotations

import numpy as np
import polars as pl

from reveal_lab.plots._style import color_for, new_figure, style

__all__ = ["plot_comparison"]


def _err(part: pl.DataFrame, side: str) -> tuple[np.ndarray, np.ndarray]:
    m = part[f"{side}_mean"].fill_null(np.nan).to_numpy().astype(float)
    lo = part[f"{side}_lo"].fill_null(np.nan).to_numpy().astype(float)
    hi = part[f"{side}_hi"].fill_null(np.nan).to_numpy().astype(float)
    return m, np.vstack([np.clip(m - lo, 0, None), np.clip(hi - m, 0, None)])


def plot_comparison(
    table: pl.DataFrame, *, title: str = "", max_metrics: int = 8, labels: tuple[str, str] = ("A", "B")
):
    """Anomalous-window shares of sides A and B per subsystem (left) and for the metrics that
    changed most (middle), and throughput (right), each with its bootstrap interval."""
    with style():
        panels = [
            ("subsystem", table.filter(pl.col("level").is_in(["any", "subsystem"]))),
            (
                "metric",
                table.filter(pl.col("level") == "metric")
                .sort(pl.col("diff").abs(), descending=True)
                .head(max_metrics),
            ),
            ("throughput", table.filter(pl.col("level") == "throughput")),
        ]
        panels = [(k, p) for k, p in panels if p.height]
        widths = [max(p.height, 2) for _, p in panels] or [1]
        fig, axes = new_figure(1, max(len(panels), 1), width=min(2.0 + 0.9 * sum(widths), 14.0), height=3.4,
                               gridspec_kw={"width_ratios": widths})
        if not panels:
            axes[0, 0].text(0.5, 0.5, "nothing to compare", ha="center", va="center")
            return fig
        for ax, (kind, part) in zip(axes[0], panels, strict=True):
            x = np.arange(part.height)
            for k, (side, off) in enumerate((("a", -0.2), ("b", 0.2))):
                m, err = _err(part, side)
                scale = 1.0 if kind == "throughput" else 100.0
                ax.bar(x + off, m * scale, width=0.4, yerr=err * scale, capsize=2, color=color_for(side, k),
                       label=labels[k])
            names = [n if len(n) <= 24 else n[:23] + "…" for n in part["name"].to_list()]
            ax.set_xticks(x, names, rotation=35, ha="right", fontsize=7)
            ax.set_ylabel("samples/s" if kind == "throughput" else "anomalous windows (%)")
            ax.set_title(kind)
        axes[0, 0].legend(fontsize=7)
        if title:
            fig.suptitle(title, fontsize=9)
        return fig
