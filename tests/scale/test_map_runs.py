"""The per-run map of the studies: the same pieces in process and on a real 2-worker
LocalCluster; a run that cannot be read is skipped and named, the others go on."""

from __future__ import annotations

import datetime as dt
import zipfile

import numpy as np
from polars.testing import assert_frame_equal

from reveal_lab import studies
from reveal_lab.config import fixtures_dir
from reveal_lab.notebooks import NotebookResult, write_index
from reveal_lab.scale import map_runs, read_skipped, record_skipped, study_refs
from reveal_lab.scale._engine import close_clients

SAMPLE = fixtures_dir() / "reveal_sample"


def test_in_process_and_dask_give_the_same_pieces(client):
    refs = study_refs(SAMPLE)
    assert len(refs) >= 4
    here = map_runs(studies.overview_piece, refs, 300, max_seconds=60.0, progress=False)
    there = map_runs(
        studies.overview_piece,
        refs,
        300,
        max_seconds=60.0,
        progress=False,
        scheduler=client.scheduler.address,
    )
    assert here.run_ids == there.run_ids == [r.run_id for r in refs]
    for (t1, s1), (t2, s2) in zip(here.pieces, there.pieces, strict=True):
        assert_frame_equal(t1, t2)
        assert_frame_equal(s1, s2)
    p1 = map_runs(studies.pruning_piece, refs, progress=False)
    p2 = map_runs(studies.pruning_piece, refs, progress=False, scheduler=client.scheduler.address)
    close_clients()  # before the session's cluster goes away
    r1, s1 = studies.reduce_pruning(p1.pieces)
    r2, s2 = studies.reduce_pruning(p2.pieces)
    assert r1.union == r2.union and s1.to_dict() == s2.to_dict()
    for w in r1.spaces:
        assert np.array_equal(r1.spaces[w].corr, r2.spaces[w].corr, equal_nan=True)


def _damaged_copy(tmp_path):
    """The GPU sample with one member's bytes damaged (stored, so the CRC check fails) and one
    member whose header has no timestamp column."""
    root = tmp_path / "public"
    root.mkdir()
    with zipfile.ZipFile(SAMPLE / "Reveal_GPU.zip") as src:
        names = [n for n in src.namelist() if n.endswith(".txt")]
        data = {n: src.read(n) for n in names}
    bad_crc, no_ts = names[0], names[1]
    data[no_ts] = b"\n".join(line.split(b"\t", 1)[-1] for line in data[no_ts].split(b"\n"))  # no time column
    out = root / "Reveal_GPU.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for n in names:
            z.writestr(n, data[n])
    raw = bytearray(out.read_bytes())
    at = raw.find(data[bad_crc][:200]) + 5000
    raw[at : at + 64] = b"\x00" * 64
    out.write_bytes(bytes(raw))
    return root, bad_crc, no_ts


def test_unreadable_runs_are_skipped_and_named(tmp_path):
    root, bad_crc, no_ts = _damaged_copy(tmp_path)
    refs = study_refs(root)
    res = map_runs(studies.overview_piece, refs, 100, progress=False)
    skipped = dict(zip(res.skipped["file"].to_list(), res.skipped["error"].to_list(), strict=True))
    assert any(f.endswith(bad_crc) for f in skipped), skipped
    assert any(f.endswith(no_ts) for f in skipped), skipped
    assert len(res.pieces) == len(refs) - 2 >= 1
    record_skipped(tmp_path, "01-dataset-overview", res.skipped)
    record_skipped(tmp_path, "01-dataset-overview", res.skipped)  # a rerun replaces its rows
    table = read_skipped(tmp_path)
    assert table.height == 2 and set(table["notebook"]) == {"01-dataset-overview"}
    page = write_index(
        tmp_path, [NotebookResult("01-dataset-overview.ipynb", "Overview", "ok")], preset="smoke", data="x",
        started=dt.datetime(2026, 1, 1),
    ).read_text()
    assert "2 run(s) skipped" in page and bad_crc in page and "must hold the timestamps" in page
