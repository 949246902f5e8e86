"""Every figure function returns a Figure, on real study output and on empty input."""

import matplotlib
import numpy as np
import polars as pl
import pytest
from matplotlib.figure import Figure

from reveal_lab import plots, studies
from reveal_lab.pipeline import POLICIES

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def synth_detection():
    runs = studies.load_study_runs("synth", max_runs_per_workload=1, max_runs=2)
    # runs alone (robust thresholds); every window over a threshold, so the figures have bars
    every_window = POLICIES["default"].with_(min_run=1)
    windows, evidence = studies.run_detection(runs, preset="smoke", policy=every_window)
    return runs, windows, evidence


def _drawn(ax) -> bool:
    """Whether an Axes shows data: a bar of non-zero height, a line with points, or a
    scatter/fill collection (text-only "no data" panels are not data)."""
    bars = any(getattr(p, "get_height", lambda: 0)() != 0 for p in ax.patches)
    lines = any(len(ln.get_xdata()) > 0 for ln in ax.get_lines())
    colls = any(len(c.get_offsets()) > 0 or len(c.get_paths()) > 0 for c in ax.collections)
    return bars or lines or colls or bool(ax.images)


def _check(fig, tmp_path, name, *, empty: bool = False):
    """Broken variant: an empty chart (axes but nothing drawn) fails ``_drawn``; the old
    check (axes exist, files > 1,000 bytes) passed it."""
    assert isinstance(fig, Figure)
    assert fig.axes
    assert any(_drawn(ax) for ax in fig.axes) != empty, name
    paths = plots.save_figure(fig, tmp_path, name)
    assert [p.suffix for p in paths] == [".png", ".pdf"] and all(p.stat().st_size > 1000 for p in paths)


@pytest.mark.slow
def test_detection_figures(synth_detection, tmp_path):
    runs, windows, evidence = synth_detection
    counts = studies.detector_window_counts(windows)
    # Fig. 2 counts equal the detectors' own labels
    for m in ("zscore", "mahalanobis", "iforest"):
        assert counts.filter(pl.col("method") == m)["n_windows"].sum() == windows[f"label_{m}"].sum()
    fig2 = plots.plot_detector_windows(counts)
    _check(fig2, tmp_path, "fig2")
    # the bars show the labels' counts per host and method, counted here from the windows
    # (broken variant: every bar at zero, or bars of another method)
    ax = fig2.axes[0]
    hosts = [t.get_text() for t in ax.get_xticklabels()]
    handles, methods = ax.get_legend_handles_labels()
    assert {"zscore", "mahalanobis", "iforest"} <= set(methods)
    for container, m in zip(ax.containers, methods, strict=True):
        if m.startswith("agreement>="):
            flag = (pl.col("agreement") >= int(m.removeprefix("agreement>="))).cast(pl.Int64)
        else:
            flag = pl.col(f"label_{m}")
        want = windows.group_by("host").agg(flag.sum())
        want = dict(want.iter_rows())
        assert [b.get_height() for b in container] == [want.get(h, 0) for h in hosts], m
    causes = studies.causes_per_window(windows)
    assert causes.height == windows["anomalous"].sum()
    _check(plots.plot_causes_per_window(causes), tmp_path, "fig3")
    top = studies.top_windows(evidence, 1).row(0, named=True)
    run = next(r for r in runs if r.meta.run_id == top["run_id"])
    tr = studies.traces_around(run, top["start"], top["end"], top["metrics"], pad_s=5)
    assert tr["in_window"].any() and not tr["in_window"].all()
    _check(plots.plot_raw_traces(tr, title="x"), tmp_path, "fig7")


@pytest.mark.slow
def test_usage_granularity_dtw_projection_figures(synth_detection, tmp_path):
    runs, _, _ = synth_detection
    samples = studies.usage_samples(runs)
    assert set(samples["quantity"]) >= {"cpu_busy_pct", "gpu_util_pct"}
    _check(plots.plot_usage_cdfs(samples), tmp_path, "cdf")
    iv = pl.DataFrame(
        {
            "run_id": ["r"] * 3,
            "host": ["h"] * 3,
            "granularity": ["3s/1s", "1.5s/0.5s", "5s/2s"],
            "start_s": [1.0, 2.0, None],
            "end_s": [4.0, 3.0, None],
            "run_length_s": [10.0] * 3,
        }
    )
    _check(plots.plot_granularity_timelines(iv), tmp_path, "fig6")
    rng = np.random.default_rng(0)
    traces = {w: {"m": [rng.normal(size=40) + i for _ in range(6)]} for i, w in enumerate("ab")}
    s = studies.dtw_reproducibility(traces, length=20)
    _check(plots.plot_dtw_distances(s.distances, s.pairs), tmp_path, "dtw")
    rows = pl.DataFrame({"workload": ["a"] * 10 + ["b"] * 10, "anomalous": [False] * 19 + [True]})
    _check(plots.plot_projection(rng.normal(size=(20, 2)), rows, title="t"), tmp_path, "proj")


def _overhead_json(tmp_path):
    """A results file in the shape benchmarks/collector_overhead.py writes."""
    import json

    med = {
        iv: {
            "loop": {"stat_pct_of_core": 0.05, "schedstat_pct_of_core": 0.04, "channels": 3},
            "procfs": {
                "stat_pct_of_core": 0.3 * 100 / iv,
                "schedstat_pct_of_core": 0.25 * 100 / iv,
                "channels": 900,
                "ratio_to_perf_stat": 0.2,
            },
            "perf": {"stat_pct_of_core": 1.3, "schedstat_pct_of_core": 1.25, "channels": None},
        }
        for iv in (100, 200, 600)
    }
    size = {"interval_ms": 100, "channels": 900, "folder_bytes_per_s": 4100.0}
    p = tmp_path / "collector_overhead.json"
    p.write_text(
        json.dumps(
            {
                "median_by_interval_ms": med,
                "bytes_on_disk": size,
                "targets": {"paper": {"bytes_per_s_filtered": [14000, 22000]}},
            }
        )
    )
    return p


def test_collector_overhead_tables(tmp_path):
    p = _overhead_json(tmp_path)
    cpu = studies.collector_overhead_table(p)
    assert cpu.height == 9 and set(cpu["process"]) == {"loop", "procfs", "perf"}
    row = cpu.filter((pl.col("interval_ms") == 200) & (pl.col("process") == "procfs")).row(0, named=True)
    assert row["pct_of_core"] == pytest.approx(0.125) and row["channels"] == 900
    assert studies.collector_bytes_table(p)["folder_bytes_per_s"][0] == 4100.0
    p.write_text("{not json")
    with pytest.raises(ValueError, match="line 1"):
        studies.collector_overhead_table(p)
    with pytest.raises(FileNotFoundError, match="collector_overhead.py"):
        studies.collector_overhead_table(tmp_path / "missing.json")


def test_other_figures_and_empty_inputs(tmp_path):
    curve = pl.DataFrame(
        {
            "threshold": [0.3, 0.5, 0.3, 0.5],
            "n_selected": [40, 60, 30, 50],
            "workload": ["a", "a", "b", "b"],
            "n_metrics": [100] * 4,
        }
    )
    _check(plots.plot_pruning_curve(curve), tmp_path, "fig4")
    over = studies.collector_overhead_table(_overhead_json(tmp_path))
    _check(plots.plot_collector_overhead(over), tmp_path, "fig5")
    dev = pl.DataFrame(
        {"host": ["h1", "h2", "h3"], "z": [0.1, 5.0, -0.2], "key": ["Memory:HugePages_Total"] * 3}
    )
    _check(plots.plot_crosshost_deviation(dev, y="z", group="key"), tmp_path, "fig9")
    _check(plots.plot_message("nothing here"), tmp_path, "msg", empty=True)
    empty_ev = studies.detector_window_counts(pl.DataFrame({"host": [], "agreement": []}))
    _check(plots.plot_detector_windows(empty_ev), tmp_path, "e2", empty=True)
    _check(
        plots.plot_raw_traces(
            pl.DataFrame(
                schema={"t_s": pl.Float64, "metric": pl.String, "value": pl.Float64, "in_window": pl.Boolean}
            )
        ),
        tmp_path,
        "e7",
        empty=True,
    )
    _check(plots.plot_usage_cdfs(studies.usage_samples([])), tmp_path, "e1", empty=True)


def test_style_is_applied():
    fig, axes = plots.new_figure()
    assert not axes[0, 0].spines["top"].get_visible()
    assert plots.color_for("network") == plots.SUBSYSTEM_COLORS["network"]
