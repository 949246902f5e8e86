"""Cross-run studies as Dask tasks equal the same studies computed directly in this process."""

from __future__ import annotations

from collections import defaultdict

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reveal_lab.config import fixtures_dir
from reveal_lab.io import open_dataset
from reveal_lab.scale import run_refs
from reveal_lab.scale._studies import common_dynamic_metrics, run_studies, traces_task

pytest.importorskip("distributed")
pytestmark = pytest.mark.filterwarnings("ignore::reveal_lab.telemetry.TelemetryWarning")

FIXTURE = fixtures_dir() / "reveal_sample"


def test_pruning_and_dtw_on_dask_equal_the_direct_studies(client):
    from reveal_lab.pruning import prune
    from reveal_lab.studies._dtw import dtw_reproducibility

    refs = run_refs(FIXTURE, {"platform": "cpu"})
    ds = open_dataset(FIXTURE).filter(platform="cpu")
    got = run_studies(
        FIXTURE, ["pruning", "dtw"], scheduler=client, refs=refs, dtw_max_metrics=6, dtw_kwargs={"length": 64}
    )
    # pruning: every workload's runs together, in one call
    frames = defaultdict(list)
    for run in ds.iter_runs():
        frames[run.meta.workload].append(run.frame)
    direct = prune(dict(frames), 0.5)
    by_w = got["pruning_by_workload"]
    for w, keys in direct.selected.items():
        assert sorted(by_w.filter(pl.col("workload") == w).get_column("metric").to_list()) == sorted(keys)
    assert got["pruning_selected"].get_column("metric").to_list() == sorted(direct.union)
    # DTW: the same metrics, all workloads in one call
    traces = [traces_task(r, None) for r in refs]
    metrics = common_dynamic_metrics([set(t) for _, _, t in traces], 6)
    assert len(metrics) == 6
    nested: dict = defaultdict(lambda: defaultdict(list))
    for _rid, w, t in traces:
        for m in metrics:
            nested[w][m].append(t[m])
    ref = dtw_reproducibility({w: dict(v) for w, v in nested.items()}, length=64)
    keys = ["workload", "metric"]
    assert_frame_equal(got["dtw_pairs"].sort(keys), ref.pairs.sort(keys))
    assert_frame_equal(
        got["dtw_distances"].sort(["workload", "metric", "run", "reference"]),
        ref.distances.sort(["workload", "metric", "run", "reference"]),
    )


def test_granularity_on_dask_equals_the_direct_study(client):
    from reveal_lab.studies._granularity import granularity_comparison, granularity_intervals

    refs = run_refs(FIXTURE)[:1]
    got = run_studies(FIXTURE, ["granularity"], scheduler=client, refs=refs, preset="smoke")
    ds = open_dataset(FIXTURE)
    direct = granularity_intervals([ds.load(r.run_id) for r in refs], preset="smoke")
    assert got["granularity_intervals"].height > 0
    assert_frame_equal(got["granularity_intervals"], direct)
    assert_frame_equal(got["granularity_comparison"], granularity_comparison(direct))
