"""Each run is read from its file once per reproduction: the per-run cache's ``run`` kind is
what every study's map step loads through, and its lookups are counted for ``index.html``."""

from __future__ import annotations

import os
import shutil

import polars as pl
from polars.testing import assert_frame_equal

from reveal_lab.config import fixtures_dir
from reveal_lab.notebooks import cache_section
from reveal_lab.pipeline import lookup_counts, using_cache
from reveal_lab.scale import map_runs, study_refs, task_times
from reveal_lab.studies import overview_piece, run_facts

SAMPLE = fixtures_dir() / "reveal_sample"


def _runs(counts: pl.DataFrame) -> tuple[int, int]:
    run = counts.filter(pl.col("kind") == "run")
    return int(run["hits"].sum()), int(run["misses"].sum())


def test_three_map_steps_read_each_run_once(tmp_path):
    refs = study_refs(SAMPLE)[:4]
    with using_cache(tmp_path / "cache"):
        first = map_runs(overview_piece, refs, progress=False)
        map_runs(run_facts, refs, progress=False)
        again = map_runs(overview_piece, refs, progress=False)
    hits, misses = _runs(lookup_counts(tmp_path / "cache"))
    assert misses == len(first.run_ids) == len(refs)
    assert hits == 2 * len(refs)  # the two later map steps' uses
    for (t1, s1), (t2, s2) in zip(first.pieces, again.pieces, strict=True):  # read back: the same run
        assert_frame_equal(t1, t2)
        assert_frame_equal(s1, s2)


def test_a_changed_file_is_read_again(tmp_path):
    # a copy of the sample: the other tests read the shared one at the same time on other
    # workers, and a changed time on it gave them a read more
    sample = shutil.copytree(SAMPLE, tmp_path / "sample")
    refs = study_refs(sample)[:1]
    with using_cache(tmp_path / "cache"):
        map_runs(run_facts, refs, progress=False)
        st = os.stat(refs[0].archive)
        os.utime(refs[0].archive, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        map_runs(run_facts, refs, progress=False)
    assert _runs(lookup_counts(tmp_path / "cache")) == (0, 2)


def test_the_index_counts_only_this_reproductions_lookups(tmp_path):
    refs = study_refs(SAMPLE)[:2]
    folder = tmp_path / "cache"
    with using_cache(folder):
        map_runs(run_facts, refs, progress=False)  # an earlier reproduction into the same folder
        since = (folder / "lookups.tsv").stat().st_size
        map_runs(run_facts, refs, progress=False)
    section = cache_section(folder, since)
    assert section["line"].endswith("0 run file(s) read, 2 later use(s) of them read back from the cache")
    assert section["kinds"]["rows"] == [["run", "2", "0"]]


def test_every_task_is_logged_with_the_runs_it_read(tmp_path):
    refs = study_refs(SAMPLE)[:3]
    with using_cache(tmp_path / "cache"):
        map_runs(overview_piece, refs, progress=False)
        map_runs(run_facts, refs, progress=False)
    tasks = task_times(tmp_path / "cache")
    assert tasks["task"].to_list() == ["overview_piece"] * 3 + ["run_facts"] * 3
    assert tasks["run_id"].to_list() == [r.run_id for r in refs] * 2
    assert tasks["ok"].all() and (tasks["reads"] == 1).all()
    assert (tasks["read_seconds"] <= tasks["seconds"]).all()
