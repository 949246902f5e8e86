"""``benchmarks/calm_host.py``'s count of false episodes: an episode that overlaps labelled
activity (someone's own commands beside the recording) is counted apart, and the hours inside
activity are left out of the rate."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json

import polars as pl

from reveal_lab.config import PROJECT_ROOT

spec = importlib.util.spec_from_file_location("calm_host", PROJECT_ROOT / "benchmarks" / "calm_host.py")
calm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(calm)

T0 = dt.datetime(2026, 11, 28, 12, 0, 0)


def _windows(flagged: set[int], n: int = 3600) -> pl.DataFrame:
    """One 3-s window a second for ``n`` seconds, those starting at ``flagged`` seconds anomalous."""
    starts = [T0 + dt.timedelta(seconds=i) for i in range(n)]
    return pl.DataFrame({
        "host": ["vm"] * n, "window_id": list(range(n)), "start": starts,
        "end": [s + dt.timedelta(seconds=3) for s in starts], "anomalous": [i in flagged for i in range(n)],
        "top_subsystem": ["cpu"] * n,
    }).with_columns(pl.col("start", "end").cast(pl.Datetime("ms")))


def test_episodes_inside_activity_are_not_false_and_its_hours_are_left_out(tmp_path):
    flagged = set(range(100, 120)) | set(range(2000, 2010))  # one episode inside the activity, one outside
    activity = [(T0 + dt.timedelta(seconds=90), T0 + dt.timedelta(seconds=400))]
    m = calm._measure(_windows(flagged), activity)
    assert (m["false_episodes"], m["during_activity"]) == (1, 1)
    assert abs(m["hours_with_activity"] - 310 / 3600) < 1e-9
    assert abs(m["hours"] - (3602 - 310) / 3600) < 1e-9
    assert abs(m["false_episodes_per_hour"] - 1 / m["hours"]) < 1e-9
    none = calm._measure(_windows(flagged), [])
    assert (none["false_episodes"], none["during_activity"]) == (2, 0)


def test_activity_is_read_from_the_recordings_labels(tmp_path):
    raw = tmp_path / "raw" / "rec"
    raw.mkdir(parents=True)
    start = dt.datetime(2026, 11, 28, 12, 9, 32, tzinfo=dt.UTC).timestamp()
    (raw / "labels.json").write_text(json.dumps({"activity": [{"start": start, "end": start + 60}]}))
    ((a, b),) = calm._activity(tmp_path, "rec")
    assert a == dt.datetime(2026, 11, 28, 12, 9, 32) and b - a == dt.timedelta(seconds=60)
    assert calm._activity(tmp_path, "other") == [] and calm._activity(tmp_path, None) == []
