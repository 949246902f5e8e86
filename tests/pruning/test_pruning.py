"""Pruning on synthetic metrics with a known correlation structure."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest

from reveal_lab.pruning import correlation_matrix, metric_space, prune, pruning_curve

T0 = dt.datetime(2025, 5, 11, 12, 0, 0)


def run(host: str, cols: dict[str, np.ndarray]) -> pl.DataFrame:
    n = len(next(iter(cols.values())))
    ts = pl.Series("timestamp", [T0 + dt.timedelta(milliseconds=100 * i) for i in range(n)]).cast(
        pl.Datetime("ms")
    )
    return pl.DataFrame(
        {"timestamp": ts, **{k.format(h=host): np.asarray(v, float) for k, v in cols.items()}}
    )


def two_groups(seed: int, host: str, n: int = 600) -> pl.DataFrame:
    """Group A (cpu load): a utilization, a frequency, two raw perf counters.
    Group B (network): bytes and packets. Plus an independent memory metric and a
    static one."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = rng.normal(size=n)
    e = lambda s: s * rng.normal(size=n)  # noqa: E731
    return run(
        host,
        {
            "Perf:Cycles.{h}[count]": 2e9 + 4e8 * a + e(4e7),  # raw (priority 3)
            "Perf:Instructions.{h}[count]": 3e9 + 5e8 * a + e(5e7),  # raw, larger variance
            "Turbostat:Busy%.-.{h}[%]": 40 + 15 * a + e(1.5),  # utilization (priority 0)
            "Turbostat:Bzy_MHz.-.{h}[MHz]": 2800 + 300 * a + e(30),  # throughput (priority 1)
            "NetworkInterStat_diff:rx_packets.ib0.{h}[count]": 1e4 + 2e3 * b + e(2e2),  # throughput (1)
            "NetworkInterStat_diff:rx_bytes.ib0.{h}[Bytes]": 1e7
            + 2e6 * b
            + e(2e5),  # throughput, larger variance
            "Memory:Dirty.{h}[kB]": 5e3 + e(100),
            "Memory:MemTotal.{h}[kB]": np.full(n, 6.4e7),  # static: excluded
        },
    )


def test_correlation_matrix_handles_nan_and_constant():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    X[:, 1] = 2 * X[:, 0] + 0.1 * rng.normal(size=300)
    X[rng.random(X.shape) < 0.2] = np.nan
    X[:, 3] = 5.0
    r = correlation_matrix(X)
    both = ~np.isnan(X[:, 0]) & ~np.isnan(X[:, 1])
    assert r[0, 1] == pytest.approx(np.corrcoef(X[both, 0], X[both, 1])[0, 1], rel=1e-12)
    assert np.isnan(r[3]).all()  # constant column: undefined, not 0
    assert np.allclose(r, r.T, equal_nan=True)


def test_two_groups_two_representatives_by_priority_across_hosts():
    runs = [two_groups(1, "nserver07"), two_groups(2, "nserver08"), two_groups(3, "nserver07")]
    res = prune({"train_VGG16": runs}, threshold=0.5)
    assert res.selected["train_VGG16"] == sorted(
        ["Turbostat:Busy%.-", "NetworkInterStat_diff:rx_bytes.ib0", "Memory:Dirty"]
    )
    assert res.union == res.selected["train_VGG16"]
    cl = res.clusters
    cpu = cl.filter(pl.col("representative") == "Turbostat:Busy%.-")["key"].to_list()
    assert set(cpu) == {"Perf:Cycles", "Perf:Instructions", "Turbostat:Busy%.-", "Turbostat:Bzy_MHz.-"}
    assert cl.filter(pl.col("is_representative")).height == 3
    assert res.excluded["key"].to_list() == ["Memory:MemTotal"]
    assert "static" in res.excluded["reason"][0]
    # host-free keys: one metric per key whatever the host of the run
    assert metric_space(runs).n_runs == 3


def test_variance_breaks_priority_ties():
    # remove the utilization and frequency: both perf counters have priority 3
    runs = [
        two_groups(s, "h1").drop("Turbostat:Busy%.-.h1[%]", "Turbostat:Bzy_MHz.-.h1[MHz]") for s in (4, 5)
    ]
    res = prune({"w": runs}, threshold=0.5)
    assert "Perf:Instructions" in res.selected["w"] and "Perf:Cycles" not in res.selected["w"]


def test_union_over_workloads_and_select_columns():
    rng = np.random.default_rng(9)
    z = rng.normal(size=500)
    w2 = run(
        "h2",
        {
            "Perf:Cycles.{h}[count]": 2e9 + 4e8 * z,
            "Turbostat:Busy%.-.{h}[%]": 40 + 15 * rng.normal(size=500),
            "Memory:Dirty.{h}[kB]": 5e3 + 100 * z,
        },
    )
    res = prune({"a": [two_groups(6, "h1")], "b": [w2]}, threshold=0.5)
    # Cycles (raw perf counter, priority 3) beats Dirty (no priority rule: 4)
    assert set(res.selected["b"]) == {"Perf:Cycles", "Turbostat:Busy%.-"}
    assert res.union == sorted(set(res.selected["a"]) | set(res.selected["b"]))
    cols = res.select_columns(two_groups(7, "h9").columns)
    assert "Turbostat:Busy%.-.h9[%]" in cols and "Perf:Instructions.h9[count]" not in cols
    assert "Perf:Cycles.h9[count]" in cols  # kept for workload b, so in the union
    assert "Perf:Cycles.h9[count]" not in res.select_columns(two_groups(7, "h9").columns, workload="a")


def test_pruning_curves():
    runs = {"a": [two_groups(1, "h1"), two_groups(2, "h2")], "b": [two_groups(3, "h3")]}
    thresholds = [0.1, 0.3, 0.5, 0.7, 0.9, 0.99]
    curve = pruning_curve(runs, thresholds)
    assert set(curve["workload"]) == {"a", "b", "all"}
    for wl in ("a", "b"):
        c = curve.filter(pl.col("workload") == wl).sort("threshold")
        ratio = c["selected_ratio"].to_numpy()
        # a higher threshold never selects fewer metrics
        assert np.all(np.diff(ratio) >= 0) and ratio[0] < ratio[-1]
        # complete linkage: every pruned metric correlates >= threshold with a kept one
        pruned = c.filter(pl.col("n_selected") < pl.col("n_metrics"))
        assert (pruned["avg_max_abs_r"] >= pruned["threshold"]).all()
        # the kept metrics explain the pruned ones jointly at least as well as the best single one
        assert (pruned["avg_multi_r2"] >= pruned["avg_max_abs_r"] ** 2 - 1e-9).all()
        assert ((pruned["avg_multi_r2"] >= 0) & (pruned["avg_multi_r2"] <= 1)).all()
    # the curve at the prune threshold agrees with prune()
    res = prune(runs, 0.5)
    at = curve.filter((pl.col("workload") == "a") & (pl.col("threshold") == 0.5))
    assert at["n_selected"].item() == len(res.selected["a"])


def test_connected_components_method_and_bad_threshold():
    runs = [two_groups(1, "h1")]
    res = prune({"w": runs}, threshold=0.5, method="connected")
    assert len(res.selected["w"]) == 3
    with pytest.raises(ValueError, match="threshold"):
        prune({"w": runs}, threshold=0.0)
    with pytest.raises(ValueError, match="cluster method"):
        prune({"w": runs}, threshold=0.5, method="ward")


def test_multi_host_frame_counts_as_one_run_per_host():
    a, b = two_groups(11, "nserver07"), two_groups(12, "nserver08")
    both = a.join(b, on="timestamp")  # one file, two hosts (as some public-dataset files)
    sp = metric_space([both])
    assert sp.n_runs == 2
    assert "Perf:Cycles" in sp.keys and not any("nserver" in k for k in sp.keys)
    assert prune({"w": [both]}, 0.5).selected == prune({"w": [a, b]}, 0.5).selected


def test_pairwise_keeps_one_of_each_pair_and_breaks_ties_by_correlation_variance():
    """The paper's rule (§4.1): of each pair over the threshold one metric is kept; within a
    priority class the metric with the larger variance of its correlations is taken first."""
    from reveal_lab.pruning import correlation_variance, pairwise_keep

    # b correlates with a and c; a and c do not: a chain. Complete linkage cannot put all three
    # together; pairwise keeps b only if it comes first, else a and c
    r = np.array([[1.0, 0.8, 0.1], [0.8, 1.0, 0.7], [0.1, 0.7, 1.0]])
    cv = correlation_variance(r)
    assert cv[0] > cv[1] and cv[2] > cv[1]  # the chain's middle is uniformly correlated
    labels, reps = pairwise_keep(r, 0.5, np.array([1, 1, 1]), ["a", "b", "c"])
    assert reps.tolist() == [0, 2] and labels.tolist() == [0, 0, 1]
    # the priority table comes before the tie rule: b first, and it stands for both others
    labels, reps = pairwise_keep(r, 0.5, np.array([1, 0, 1]), ["a", "b", "c"])
    assert reps.tolist() == [1] and labels.tolist() == [0, 0, 0]
    # every pruned metric exceeds the threshold with a kept one; no two kept ones do
    rng = np.random.default_rng(3)
    R = np.corrcoef(rng.normal(size=(40, 200)) + np.repeat(rng.normal(size=(8, 200)), 5, axis=0))
    labels, reps = pairwise_keep(R, 0.5, np.zeros(40, dtype=int), [f"m{i}" for i in range(40)])
    kept = set(reps.tolist())
    A = np.abs(R)
    assert all(A[i, j] <= 0.5 for i in kept for j in kept if i != j)
    assert all(max(A[i, k] for k in kept) > 0.5 for i in range(40) if i not in kept)


def test_prune_pairwise_method_differs_from_complete_on_a_chain():
    frames = {"w": [two_groups(s, "h1") for s in (1, 2)]}
    pw = prune(frames, 0.5, method="pairwise")
    assert pw.method == "pairwise" and pw.union
    assert "Turbostat:Busy%.-" in pw.union  # the utilization stands for its correlated group
    with pytest.raises(ValueError, match="cluster method"):
        prune(frames, 0.5, method="single")
