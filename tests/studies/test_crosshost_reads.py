"""Notebook 06's cross-host study walks runs loaded lazily (``scale.LazyRun``): each run is read
once to name its hosts, and again only when it is the first run of a host in a walk, with the same
rows as on the runs in memory."""

from __future__ import annotations

import warnings

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reveal_lab import studies
from reveal_lab.pipeline import lookup_counts, using_cache
from reveal_lab.scale import lazy_runs, map_runs, study_refs
from reveal_lab.telemetry import TelemetryWarning


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        yield


def test_crosshost_reads_each_lazy_run_once_and_a_host_s_first_run_again(tmp_path):
    refs = study_refs("", max_runs_per_workload=3)
    runs = studies.load_study_runs("", max_seconds=40.0, max_runs_per_workload=3)
    # more hosts asked than one workload has: every workload's first run per host (a second walk)
    want = studies.crosshost_subsystem(runs, "memory", min_hosts=4)
    folder = tmp_path / "cache"
    with using_cache(folder):
        facts = map_runs(studies.run_facts, refs, progress=False).pieces
        lazy = lazy_runs(refs, facts, 40.0)
        since = (folder / "lookups.tsv").stat().st_size
        got = studies.crosshost_subsystem(lazy, "memory", min_hosts=4)
    hosts = {h for f in facts for h in f["hosts"]}
    reads = lookup_counts(folder, since).filter(pl.col("kind") == "run")
    assert want.height > 0 and set(want["scope"]) == {"all workloads (first run per host)"}
    assert len(lazy) > 2 * len(hosts) >= 4
    # each run once for its hosts' names, then the first run of each host in each walk
    assert int(reads["hits"].sum() + reads["misses"].sum()) <= len(lazy) + 2 * len(hosts)
    assert_frame_equal(got, want)
