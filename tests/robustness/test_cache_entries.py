"""The per-run cache (`reveal_lab.pipeline` `memoize`, `--cache` / `REVEAL_LAB_CACHE`): a damaged
entry is computed again and named, a full disk leaves no partial entry and names the path; a full
disk under `dataset export --hf` is one line naming the file and the folder, and leaves nothing."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reveal_lab.pipeline import LOOKUPS, lookup_counts, memoize, using_cache

from .conftest import ROOT, assert_clean_error, cli

CALLS: list[int] = []


@memoize("robustness-demo")
def _table(n: int) -> pl.DataFrame:
    CALLS.append(n)
    names = [f"metric-é-{i}" for i in range(n)]
    return pl.DataFrame({"name": names, "value": np.arange(n, dtype=np.float64)})


def _expected(n: int) -> pl.DataFrame:
    return _table.uncached(n)


def _entry(root: Path) -> Path:
    (path,) = [p for p in (root / "robustness-demo").rglob("*.pkl") if not p.name.startswith(".tmp-")]
    return path


def _flip_middle(data: bytes) -> bytes:
    mid = len(data) // 2
    return data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1 :]


def _strings_spoiled(data: bytes) -> bytes:
    return data.replace("é".encode(), b"\xff\xfe")  # the frame's text no longer UTF-8 ("invalid utf8")


DAMAGE = {
    "an int pickled in its place": lambda data: pickle.dumps(7),  # "'int' object is not subscriptable"
    "random bytes": lambda data: np.random.default_rng(0).bytes(len(data)),
    "a byte flipped": _flip_middle,
    "cut in half": lambda data: data[: len(data) // 2],
    "its text not UTF-8": _strings_spoiled,
    "empty": lambda data: b"",
}


@pytest.mark.parametrize("how", list(DAMAGE))
def test_a_damaged_entry_is_computed_again_and_named(tmp_path, how):
    with using_cache(tmp_path):
        first = _table(5)
        path = _entry(tmp_path)
        path.write_bytes(DAMAGE[how](path.read_bytes()))
        CALLS.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            again = _table(5)
        assert CALLS == [5], "the damaged entry was used instead of computing the result again"
        said = [str(w.message) for w in caught if "run cache" in str(w.message)]
        assert said and str(path) in said[0] and "computed again" in said[0], said
        assert_frame_equal(again, first)
        assert_frame_equal(again, _expected(5))
        CALLS.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the rewritten entry reads back without a word
            assert_frame_equal(_table(5), first)
        assert CALLS == []


def test_a_full_disk_under_the_cache_names_the_entry_and_leaves_nothing_partial(small_tmpfs):
    fs = small_tmpfs("256k")
    with using_cache(fs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = _table(40_000)  # ~1 MB pickled: more than the disk holds
            again = _table(40_000)
    assert_frame_equal(got, _expected(40_000))
    assert_frame_equal(again, got)
    said = [str(w.message) for w in caught if "run cache" in str(w.message)]
    assert len(said) == 1, said  # said once, not for every call
    assert str(fs / "robustness-demo") in said[0] and "No space left on device" in said[0]
    # the lookup log may hold its whole lines (both misses: nothing was stored), nothing else
    left = [p for p in fs.rglob("*") if p.is_file() and p.name != LOOKUPS]
    assert left == [], f"partial cache files left behind: {left}"
    if (fs / LOOKUPS).exists():
        assert lookup_counts(fs)["misses"].sum() == 2


def test_a_full_disk_under_dataset_export_hf_is_one_line_and_leaves_nothing(small_tmpfs):
    fs = small_tmpfs("2m")
    out = fs / "export"
    res = cli("dataset", "export", "--data", str(ROOT / "data/lab"), "--hf", str(out))
    assert_clean_error(res, "No space left on device", f"--hf {out}", ".parquet", rc=1)
    assert "ComputeError" not in res.text and len(res.err.strip().splitlines()) == 1, res.text
    assert list(fs.iterdir()) == [], f"left behind: {list(fs.rglob('*'))}"
