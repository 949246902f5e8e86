"""Fig. 4, Fig. 5 and the usage CDFs as the paper draws them: the plotted data equals the
frames' values, one axes for Fig. 4 with the |r| = 0.5 marker, readable legend names."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from reveal_lab import plots, studies


def _curve() -> pl.DataFrame:
    rows = []
    for w, shift in (("CNN__ImageClassification__synthetic", 0.0), ("MLP__ImageClassification__synthetic", 0.05),
                     ("all", 0.02)):
        for t in (0.3, 0.5, 0.9):
            rows.append({"workload": w, "threshold": t, "n_metrics": 100, "n_selected": int(100 * t),
                         "selected_ratio": t - shift, "avg_multi_r2": 0.8 + t / 5 - shift,
                         "avg_max_abs_r": 0.7 + t / 4 - shift})
    return pl.DataFrame(rows)


def test_fig4_one_axes_marker_and_union_curves():
    """Broken variants: one panel per measure, no marker, the union row not the bold one."""
    c = _curve()
    fig = plots.plot_pruning_curve(c)
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    lines = {ln.get_gid(): ln for ln in ax.get_lines()}
    allrows = c.filter(pl.col("workload") == "all").sort("threshold")
    for y in ("selected_ratio", "avg_multi_r2", "avg_max_abs_r"):
        assert lines[f"all:{y}"].get_ydata() == pytest.approx(allrows[y].to_numpy())
        assert lines[f"workload:{y}:MLP__ImageClassification__synthetic"].get_lw() < lines[f"all:{y}"].get_lw()
    assert lines["marker"].get_xdata()[0] == pytest.approx(0.5)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "avg max |r| (of a pruned metric with a kept one)" in legend
    assert not any(t.endswith("…") for t in legend)


def test_fig5_bars_and_perf_reference():
    measured = pl.DataFrame({"interval_ms": [100.0, 600.0, 100.0], "process": ["collector", "collector", "perf stat"],
                             "pct_of_core": [0.5, 0.1, 0.2]})
    stored = pl.DataFrame({"interval_ms": [100, 200, 100, 200], "process": ["procfs", "procfs", "perf", "perf"],
                           "pct_of_core": [0.45, 0.3, 0.25, 0.2]})
    comp = studies.overhead_comparison(measured, stored, stored_label="stored")
    fig = plots.plot_overhead_comparison(comp)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["100 ms", "200 ms", "600 ms"]
    here = [c for c in ax.containers if c.get_label() == "collector (measured here)"][0]
    heights = [b.get_height() for b in here]
    assert heights[0] == pytest.approx(0.5) and np.isnan(heights[1]) and heights[2] == pytest.approx(0.1)
    perf = {ln.get_label(): ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_gid().startswith("perf:")}
    # only perf stat at 100 ms is drawn, as in the paper
    assert perf == {"perf stat at 100 ms (measured here)": pytest.approx(0.2),
                    "perf stat at 100 ms (stored)": pytest.approx(0.25)}
    colours = {tuple(c.patches[0].get_facecolor()) for c in ax.containers}
    assert len(colours) == len(ax.containers) == 2


def test_usage_cdfs_lines_and_short_names():
    rng = np.random.default_rng(1)
    rows = []
    for w in ("CNN__ImageClassification__synthetic", "Transformer__TextClassification__synthetic"):
        for q in ("cpu_busy_pct", "memory_util_pct"):
            for v in rng.uniform(0, 100, 50):
                rows.append({"workload": w, "run_id": "r", "quantity": q, "value": float(v)})
    samples = pl.DataFrame(rows)
    fig = plots.plot_usage_cdfs(samples)
    for ax, q in zip(fig.axes, ("cpu_busy_pct", "memory_util_pct"), strict=True):
        (all_line,) = [ln for ln in ax.get_lines() if ln.get_label() == "all"]
        x, y = all_line.get_xdata(), all_line.get_ydata()
        vals = np.sort(samples.filter(pl.col("quantity") == q)["value"].to_numpy())
        finite = np.isfinite(x)
        assert x[finite].max() == pytest.approx(vals.max()) and y[-1] == pytest.approx(1.0)
        # the ECDF at the median value is one half
        assert y[finite][np.searchsorted(x[finite], vals[49], side="right") - 1] == pytest.approx(0.5)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["CNN", "Transformer", "all"]
