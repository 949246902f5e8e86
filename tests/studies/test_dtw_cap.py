"""DTW study: the fixed sample of other workloads each run is compared with, and the batched distances."""

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reveal_lab.studies import _dtw
from reveal_lab.studies._dtw import (
    dtw_distance,
    dtw_distances,
    dtw_reproducibility,
    reference_order,
    reference_workloads,
)


def _many(n_workloads, n_runs=4, n=60, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 6, n)
    return {
        f"w{i:02d}": {
            "m": [np.sin((1 + i / 7) * t) + 0.2 * rng.normal(size=n) for _ in range(n_runs)],
            "k": [np.cos((1 + i / 5) * t) + 0.2 * rng.normal(size=n) for _ in range(n_runs)],
        }
        for i in range(n_workloads)
    }


@pytest.mark.parametrize("window", [None, 0, 4])
def test_batched_distances_equal_the_per_pair_ones(window):
    rng = np.random.default_rng(3)
    a = [rng.normal(size=50) for _ in range(4)] + [np.zeros(50)]
    b = [rng.normal(size=n) for n in (50, 37, 64)] + [np.ones(50)]
    got = dtw_distances(a, b, window)
    want = np.array([[dtw_distance(x, y, window) for y in b] for x in a])
    assert got.shape == (5, 4)
    assert np.array_equal(got, want)  # the same float, not only close
    assert dtw_distances(a, [], window).shape == (5, 0)
    assert dtw_distances([], b, window).shape == (0, 4)


def test_the_cap_bounds_the_references_of_every_run(monkeypatch):
    traces = _many(12)
    calls = []
    real = _dtw.dtw_distances

    def counting(a, b, window=None):
        calls.append((len(a), len(b)))
        return real(a, b, window)

    monkeypatch.setattr(_dtw, "dtw_distances", counting)
    s = dtw_reproducibility(traces, length=30, max_other_workloads=3)
    assert (s.pairs["n_others"] == 3).all()
    assert calls and all(k == 3 for _, k in calls)
    # per run and metric: its own median and 3 others
    per_run = s.distances.group_by(["workload", "metric", "run"]).len()
    assert (per_run["len"] == 4).all()
    assert s.distances.height == 12 * 2 * 4 * 4
    # run_x_workload pairs: runs x the capped others
    s2 = dtw_reproducibility(traces, length=30, max_other_workloads=3, pairing="run_x_workload")
    assert (s2.pairs["n_pairs"] == 4 * 3).all()


def test_the_sample_is_drawn_once_per_study_and_independent_of_order():
    names = [f"w{i:02d}" for i in range(9)]
    order = reference_order(names)
    assert sorted(order) == names
    assert order == reference_order(names[::-1])  # the same on every machine, whatever the order given
    assert order != reference_order(names, seed=1)  # seeded
    assert reference_workloads(order[0], order, 3) == order[1:4]
    assert reference_workloads(order[5], order, 3) == order[:3]  # one sample for every workload
    assert reference_workloads("x", order, None) == order
    assert reference_workloads("x", order, 0) == order
    with pytest.raises(ValueError):
        reference_workloads("x", order, -1)

    traces = _many(9)
    fwd = dtw_reproducibility(traces, length=30, max_other_workloads=4)
    rev = dtw_reproducibility(dict(reversed(list(traces.items()))), length=30, max_other_workloads=4)
    refs = ["workload", "metric", "run", "reference"]
    a = fwd.distances.sort(refs)
    b = rev.distances.sort(refs)
    assert a.select(refs).equals(b.select(refs))
    # every run is compared with the first 4 of one order, itself left out: 5 workloads' medians in all
    others = a.filter(pl.col("reference") != "own")["reference"].unique().sort().to_list()
    assert others == sorted(order[:5])
    assert np.allclose(a["distance"].to_numpy(), b["distance"].to_numpy(), rtol=0, atol=1e-12)
    keys = ["workload", "metric"]
    assert_frame_equal(fwd.pairs.sort(keys), rev.pairs.sort(keys), check_exact=False, rel_tol=1e-12)


def test_a_sample_as_large_as_the_others_is_the_full_study():
    traces = _many(5)
    every = dtw_reproducibility(traces, length=30, max_other_workloads=None)
    assert (every.pairs["n_others"] == 4).all()
    for k in (4, 10):
        capped = dtw_reproducibility(traces, length=30, max_other_workloads=k)
        assert_frame_equal(capped.pairs, every.pairs)
        assert_frame_equal(capped.by_metric, every.by_metric)
        assert_frame_equal(capped.distances, every.distances)
    # every other workload, in the order given
    refs = every.distances.filter(pl.col("reference") != "own")
    got = refs.filter((pl.col("workload") == "w00") & (pl.col("run") == 0) & (pl.col("metric") == "m"))
    assert got["reference"].to_list() == ["w01", "w02", "w03", "w04"]


def test_the_metric_task_of_the_scale_path_applies_the_same_cap():
    from reveal_lab.scale._studies import dtw_metric_task

    traces = _many(8)
    kwargs = {"length": 30, "max_other_workloads": 2}
    direct = dtw_reproducibility(traces, **kwargs)
    for m in ("m", "k"):
        pairs, dist = dtw_metric_task(m, {w: bm[m] for w, bm in traces.items()}, kwargs)
        assert_frame_equal(pairs, direct.pairs.filter(pl.col("metric") == m))
        assert_frame_equal(dist, direct.distances.filter(pl.col("metric") == m))
