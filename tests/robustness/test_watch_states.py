"""``watch``: clear errors for a missing, non-run folder or a file; ``--idle-exit`` in
every state; stops on a finished run; says when it scored nothing and why."""

from __future__ import annotations

import time

import pytest

from .conftest import assert_clean_error, cli, collected


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    return collected(tmp_path_factory.mktemp("w"), "meminfo,loadavg")


def test_missing_folder_is_an_error_after_wait(tmp_path):
    res = cli("watch", str(tmp_path / "nope"), "--wait", "1s", limit=60)
    assert_clean_error(res, str(tmp_path / "nope"), "does not exist", "--wait", rc=1)


def test_missing_folder_honours_idle_exit(tmp_path):
    t0 = time.monotonic()
    res = cli("watch", str(tmp_path / "nope"), "--idle-exit", "1s", limit=60)
    assert time.monotonic() - t0 < 30
    assert "Traceback" not in res.text and res.rc == 1
    assert "scored no window" in res.text and "--idle-exit" in res.text


def test_a_file_is_an_error(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("a\tb\n")
    assert_clean_error(cli("watch", str(f), limit=60), str(f), "is a file", rc=1)


def test_a_folder_that_is_not_a_run_is_an_error(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    assert_clean_error(cli("watch", str(tmp_path), limit=60), "not a collector run folder", "notes.txt", rc=1)


def test_an_empty_folder_honours_idle_exit(tmp_path):
    res = cli("watch", str(tmp_path), "--idle-exit", "1s", limit=60)
    assert res.rc == 1 and "Traceback" not in res.text
    assert "no data arrived" in res.text


def test_finished_run_stops_by_itself_and_says_why_nothing_was_scored(short_run):
    # no --idle-exit, no --duration: before the fix this never returned
    res = cli("watch", str(short_run), limit=60)
    assert "Traceback" not in res.text
    assert "the collector finished (status complete)" in res.text
    assert "scored no window" in res.text and "warm-up" in res.text and "--baseline" in res.text
    assert res.rc == 1
