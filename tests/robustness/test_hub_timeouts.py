"""``dataset pull`` / ``push`` against a hub that accepts connections and never answers:
both end within a bounded time with a message (no network needed)."""

from __future__ import annotations

import time

import polars as pl

from .conftest import assert_clean_error, cli

#: --timeout 1: every request may stall 1 s, the hub client retries a few times with
#: backoff; the whole command must end well within this
BOUND_S = 90


def test_pull_from_a_stalled_hub_ends_with_instructions(stalled_hub, tmp_path):
    dest = tmp_path / "pub"
    t0 = time.monotonic()
    res = cli(
        "dataset", "pull", "--dest", str(dest), "--timeout", "1", "--pattern", "meta_*.csv",
        env={"HF_ENDPOINT": stalled_hub, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf")},
        limit=BOUND_S,
    )
    assert time.monotonic() - t0 < BOUND_S
    assert_clean_error(res, "cannot download from", stalled_hub, "Place the files by hand", rc=1)
    assert "Timeout" in res.text
    assert not dest.exists()  # a failed pull leaves no empty folder


def test_push_to_a_stalled_hub_ends_with_a_message(stalled_hub, tmp_path):
    folder = tmp_path / "export"
    (folder / "data").mkdir(parents=True)
    (folder / "README.md").write_text("---\n---\n")
    pl.DataFrame({"a": [1]}).write_parquet(folder / "data" / "train-0.parquet")
    t0 = time.monotonic()
    res = cli(
        "dataset", "push", str(folder), "--repo-id", "someone/some-data", "--timeout", "1",
        env={
            "HF_ENDPOINT": stalled_hub,
            "HF_TOKEN": "hf_dummy",
            "HF_HUB_OFFLINE": "0",
            "HF_HOME": str(tmp_path / "hf"),
        },
        limit=BOUND_S,
    )
    assert time.monotonic() - t0 < BOUND_S
    assert_clean_error(res, "someone/some-data", "failed", rc=1)
    assert "Timeout" in res.text
