"""Property tests (hypothesis, derandomized so every run draws the same examples):
the metric-name grammar round-trips, and windows hold exactly the rows of their bounds."""

from __future__ import annotations

import datetime as dt
import re
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reveal_lab.config import WindowConfig
from reveal_lab.features import make_windows
from reveal_lab.telemetry import MetricName, TelemetryError, TelemetryWarning, parse_metric_name
from reveal_lab.telemetry._names import NAMED_INSTANCE_SOURCES

FAST = settings(
    derandomize=True, max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

WORD = st.text(st.sampled_from("abcxyzABZ019_%-/"), min_size=1, max_size=6)
NUMERIC = re.compile(r"^(?:-|\d+)$")


@st.composite
def metric_names(draw) -> MetricName:
    source = draw(st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True).filter(lambda s: not s.endswith("_diff")))
    source = draw(st.sampled_from([source, "GPU", "NetworkInterStat", "CPU", "Disk"]))
    field = ".".join(draw(st.lists(WORD, min_size=1, max_size=3)))
    named = source in NAMED_INSTANCE_SOURCES
    instance = draw(
        st.one_of(st.none(), st.just("-"), st.integers(0, 512).map(str), WORD if named else st.just("0"))
    )
    if instance is None:
        # without an instance the field's last part must not read as one
        # (for sources with named instances, any last dotted part does)
        last = field.rsplit(".", 1)
        if named:
            field = field.replace(".", "_")
        elif len(last) == 2 and NUMERIC.match(last[1]):
            field = last[0] + "_" + last[1]
    host = draw(st.from_regex(r"[a-z][a-z0-9\-]{0,10}", fullmatch=True))
    unit = draw(st.one_of(st.none(), st.just(""), WORD))
    return MetricName(source=source, field=field, host=host, instance=instance, unit=unit, diff=draw(st.booleans()))


@FAST
@given(metric_names())
def test_metric_name_round_trip(m):
    """format then parse gives the same parts. Broken variants: the GPU space dropped,
    ``_diff`` not split off, the instance taken from the host side."""
    assert parse_metric_name(m.format()) == m


@FAST
@given(st.text(st.sampled_from("ab1_.:- [%]GPU"), max_size=30))
def test_parse_format_parse_is_stable(s):
    """Whatever parses formats back to a name that parses to the same parts."""
    m = parse_metric_name(s)
    if m is not None and "." not in m.host:
        assert parse_metric_name(m.format()) == m


@st.composite
def runs(draw):
    n = draw(st.integers(2, 80))
    steps = draw(st.lists(st.sampled_from([100, 100, 100, 90, 110, 250, 700]), min_size=n - 1, max_size=n - 1))
    t = np.concatenate([[0], np.cumsum(steps)]).astype(np.int64)
    cfg = WindowConfig(
        window_s=draw(st.sampled_from([0.3, 0.5, 1.0, 2.0])),
        stride_s=draw(st.sampled_from([0.1, 0.2, 0.5, 1.0])),
        interval_s=0.1,
        min_fill=draw(st.sampled_from([0.0, 0.3, 0.5, 0.8, 1.0])),
    )
    return t, cfg


@settings(FAST, max_examples=60)
@given(runs())
def test_windows_hold_exactly_the_rows_in_their_bounds(run):
    """Every window is ``[t0 + id*stride, + window)`` on the stride grid, ends by the data's
    end (last timestamp + one interval), holds exactly the rows whose timestamps fall in
    it, and is kept iff it has ``max(1, min_fill * window/interval)`` samples (the
    ``min_fill`` rule). Broken variants: ``side="right"`` for the row bounds, a window
    past the data's end, min_fill ignored or applied as a strict ``>``."""
    t, cfg = run
    t0 = dt.datetime(2025, 1, 1)
    frame = pl.DataFrame(
        {"timestamp": [t0 + dt.timedelta(milliseconds=int(v)) for v in t], "A:x.h[-]": np.arange(t.size, dtype=float)},
        schema_overrides={"timestamp": pl.Datetime("ms")},
    )
    win, stride = round(cfg.window_s * 1000), round(cfg.stride_s * 1000)
    med = float(np.median(np.diff(t)))
    interval = med if (med > 150 or med < 100 / 1.5) else 100.0
    data_end = int(t[-1]) + round(interval)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        if data_end - t[0] < win:
            with pytest.raises(TelemetryError, match="shorter than one"):
                make_windows(frame, cfg, include_dropped=True)
            return
        w = make_windows(frame, cfg, include_dropped=True)
    ids = w["window_id"].to_numpy()
    assert ids.tolist() == list(range(len(ids))) and len(ids) == (data_end - t[0] - win) // stride + 1
    start = w["start"].dt.epoch("ms").to_numpy()
    end = w["end"].dt.epoch("ms").to_numpy()
    epoch0 = int(t0.replace(tzinfo=dt.UTC).timestamp() * 1000)
    np.testing.assert_array_equal(start - epoch0, ids * stride)
    np.testing.assert_array_equal(end - start, win)
    assert end[-1] - epoch0 <= data_end
    for row in w.iter_rows(named=True):
        s, e = row["start"], row["end"]
        inside = np.flatnonzero((t >= (s - t0).total_seconds() * 1000) & (t < (e - t0).total_seconds() * 1000))
        want = (int(inside[0]), int(inside[-1]) + 1) if inside.size else (row["row_start"], row["row_start"])
        assert (row["row_start"], row["row_end"]) == want
        assert row["n_samples"] == inside.size
        assert row["kept"] == (inside.size >= max(1.0, cfg.min_fill * win / interval) - 1e-9)
