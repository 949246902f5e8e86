"""The reliability figures draw what they say (lines, points, markers), in the house style."""

import polars as pl

from reveal_lab.reliability import (
    agreement_grid,
    ettr_optima,
    lemon_hosts,
    plot_closed_vs_simulated,
    plot_ettr_vs_interval,
    plot_lemon_hosts,
    plot_mttf_scaling,
)


def test_mttf_scaling_shows_both_lines_and_four_paper_points():
    fig = plot_mttf_scaling()
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    points = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 1]
    assert sorted(int(p.get_xdata()[0]) for p in points) == [8, 1024, 16384, 131072]
    assert len(ax.get_lines()) - len(points) >= 2


def test_ettr_curves_mark_an_optimum_per_size_and_cluster():
    fig = plot_ettr_vs_interval((1024, 16384), ("rsc1", "rsc2"), 5 / 60, 30 / 3600)
    assert len(fig.axes) == 2
    for ax in fig.axes:
        dots = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 1]
        assert len(dots) == 2
    opt = ettr_optima((1024, 16384), ("rsc1",), 5 / 60, 30 / 3600)
    assert opt["optimal_min_exact"][0] > opt["optimal_min_exact"][1] > 0


def test_closed_vs_simulated_and_lemon_figures_render(tmp_path):
    grid = agreement_grid(gpus=(1024, 65536), intervals_min=(5, 60), restarts_min=(5,), n_jobs=500)
    fig = plot_closed_vs_simulated(grid)
    assert len(fig.axes) == 2 and any("max" in t.get_text() for t in fig.axes[1].texts)
    fig.savefig(tmp_path / "a.png")
    flags = pl.DataFrame(
        {"run": ["r1", "r1", "r2", "r2"], "host": ["a", "b"] * 2, "flagged": [True, False] * 2}
    )
    fig = plot_lemon_hosts(lemon_hosts(flags))
    assert len(fig.axes[0].patches) == 2
    empty = plot_lemon_hosts(lemon_hosts(flags.head(0)))
    assert "no multi-host runs" in empty.axes[0].texts[0].get_text()
