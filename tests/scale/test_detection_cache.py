"""A run detected again with the same settings, its baseline runs' files unchanged, is read back
from the per-run cache (kind ``detection``) without loading its baseline runs: notebooks 06 and 07
detect the runs 03 detected; a changed baseline file detects the runs it is a baseline of again."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reveal_lab.config import data_dir
from reveal_lab.pipeline import lookup_counts, using_cache
from reveal_lab.scale import detect_runs, study_refs
from reveal_lab.studies import baseline_ids, setting_policies
from reveal_lab.telemetry import TelemetryWarning

SEL = {"max_runs_per_workload": 3, "max_runs": 6}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        yield


def _count(folder: Path, kind: str, since: int = 0) -> tuple[int, int]:
    c = lookup_counts(folder, since).filter(pl.col("kind") == kind)
    return int(c["hits"].sum()), int(c["misses"].sum())


def _detect(refs):
    return detect_runs(refs, setting_policies(["paper", "default"]), preset="smoke", max_seconds=40.0,
                       progress=False)


def test_a_run_detected_again_is_read_back_without_its_baseline_runs(tmp_path):
    refs = study_refs(data_dir(), **SEL)
    with using_cache(None):
        want, _ = _detect(refs)
    folder = tmp_path / "cache"
    with using_cache(folder):
        first, mapped = _detect(refs)
        since = (folder / "lookups.tsv").stat().st_size
        again, _ = _detect(refs)
    n = len(mapped.run_ids)
    assert n == len(refs) and sum(map(len, baseline_ids(mapped.pieces).values())) > 0
    for name in want:
        for got in (first, again):
            assert_frame_equal(got[name][0], want[name][0])
            assert_frame_equal(got[name][1], want[name][1])
    hits, misses = _count(folder, "run")
    assert hits + misses > 2 * n  # the first detection loaded baseline runs beside each run
    assert _count(folder, "detection", since) == (2 * n, 0)
    assert _count(folder, "facts", since) == (n, 0)  # what chooses the baselines: read back, no run loaded
    assert _count(folder, "run", since) == (n, 0)  # each run for its detection; no baseline run


def test_a_changed_baseline_file_detects_its_runs_again(tmp_path):
    lab = shutil.copytree(data_dir(), tmp_path / "lab")
    refs = study_refs(lab, **SEL)
    folder = tmp_path / "cache"
    with using_cache(folder):
        before, mapped = _detect(refs)
        cand = baseline_ids(mapped.pieces)
        touched = next(r for r in refs if any(r.run_id in c for c in cand.values()))
        path = Path(touched.root) / (touched.archive or touched.member)
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        since = (folder / "lookups.tsv").stat().st_size
        after, _ = _detect(refs)
    affected = sum(touched.run_id in c for c in cand.values())
    assert _count(folder, "facts", since) == (len(refs) - 1, 1)  # the touched run's facts taken again
    assert _count(folder, "detection", since) == (2 * (len(refs) - affected), 2 * affected)
    for name in before:
        assert_frame_equal(after[name][0], before[name][0])
        assert_frame_equal(after[name][1], before[name][1])


def test_no_crop_given_as_zero_or_none_reads_the_same_entries(tmp_path):
    refs = study_refs(data_dir(), **SEL)
    settings = setting_policies(["paper"])
    folder = tmp_path / "cache"
    with using_cache(folder):
        detect_runs(refs, settings, preset="smoke", max_seconds=0.0, progress=False)  # a notebook's parameter
        since = (folder / "lookups.tsv").stat().st_size
        detect_runs(refs, settings, preset="smoke", max_seconds=None, progress=False)
    assert _count(folder, "facts", since) == (len(refs), 0)
    assert _count(folder, "detection", since) == (len(refs), 0)
