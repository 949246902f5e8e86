"""Per-probe sampling periods (``--probes interrupts@200ms``): the slow probe's columns
are null on the ticks it skips and hold real values on the ticks it samples; the
dataset view's differences span the probe's own period; bad periods are refused."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from collect_helpers import run_collect

from reveal_lab.collect import collect
from reveal_lab.collect._registry import probe_periods, tick_divisors
from reveal_lab.io._collector import read_collector_run, read_raw_frame


@pytest.fixture(scope="module")
def divided_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("d") / "run"
    res = run_collect(
        out, "--interval", "100ms", "--duration", "2s", "--probes", "cpu,meminfo@300ms,interrupts@200ms"
    )
    assert res.returncode == 0, res.stderr
    return out


def _sampled_k(out, frame):
    """Deadline index of every row: (sample time - its lag - start) / interval."""
    meta = json.loads((out / "meta.json").read_text())
    t = frame.get_column("t_mono_ns").to_numpy()
    lag = frame.get_column(next(c for c in frame.columns if c.startswith("Collector:lag"))).to_numpy()
    return np.round((t - 1000 * lag - meta["clock"]["mono_ns"]) / 1e8).astype(int), meta


def test_divisors_null_on_skipped_ticks_values_on_sampled(divided_run):
    out = divided_run
    raw = read_collector_run(out, view="raw").frame
    rawf, meta, channels, _ = read_raw_frame(out)
    k, meta = _sampled_k(out, rawf)
    assert meta["probe_every_ticks"] == {"meminfo": 3, "interrupts": 2}
    assert meta["probe_period_ms"] == pytest.approx({"meminfo": 300.0, "interrupts": 200.0})
    by_probe = {}
    for c in channels:
        by_probe.setdefault(c["probe"], []).append(c["name"])
    assert rawf.height == raw.height >= 12
    cpu = rawf.select(by_probe["cpu"]).to_numpy()
    assert not np.isnan(cpu.astype(float)).any(), "an every-tick probe has no gaps"
    for probe, d in (("meminfo", 3), ("interrupts", 2)):
        block = rawf.select(by_probe[probe])
        null_rows = block.select(pl.all_horizontal(pl.all().is_null())).to_series().to_numpy()
        some_null = block.select(pl.any_horizontal(pl.all().is_null())).to_series().to_numpy()
        assert (null_rows == some_null).all(), f"{probe}: a row is either sampled or not"
        sampled = ~null_rows
        assert sampled.sum() >= 3 and (~sampled).sum() >= 3
        # sampled on the first row whose deadline reaches the next multiple of d
        due, expect = 0, []
        for kk in k:
            expect.append(kk >= due)
            if kk >= due:
                due = (kk // d + 1) * d
        assert (sampled == np.array(expect)).all(), (probe, k.tolist(), sampled.tolist())
        if probe == "meminfo":
            total = block.get_column(next(n for n in by_probe["meminfo"] if "MemTotal" in n))
            assert (total.drop_nulls() > 0).all()


def test_dataset_view_differences_span_the_probe_period(divided_run):
    frame = read_collector_run(divided_run).frame
    loc = [c for c in frame.columns if c.startswith("Interrupts_diff:LOC.0")]
    assert loc, "LOC interrupts on core 0"
    col = frame.get_column(loc[0])
    # every sampled tick after the first gets the change since the previous sample
    assert col.drop_nulls().len() >= 5
    # each difference is the cumulative count's change between two consecutive samples of
    # the probe (not between ticks, where the probe was skipped and holds no value)
    raw = read_raw_frame(divided_run)[0].get_column(loc[0].replace("Interrupts_diff:", "Interrupts:"))
    assert raw.len() == col.len()
    sampled = raw.is_not_null().to_numpy()
    counts = raw.drop_nulls().to_numpy().astype(float)
    assert (np.diff(counts) >= 0).all(), "a cumulative interrupt count never goes back"
    assert (col.is_not_null().to_numpy() == (sampled & (np.cumsum(sampled) > 1))).all()
    np.testing.assert_array_equal(col.drop_nulls().to_numpy(), np.diff(counts))
    busy = [c for c in frame.columns if c.startswith("CPU:Busy%.-")]
    assert frame.get_column(busy[0]).null_count() == 1  # only the first row has no difference


def test_bad_periods_are_refused(tmp_path):
    assert probe_periods("procfs@1s,cpu@100ms")["cpu"] == pytest.approx(0.1)
    assert probe_periods("procfs@1s")["interrupts"] == pytest.approx(1.0)
    assert "perf" not in probe_periods("all@1s")
    with pytest.raises(ValueError, match="runs at its own interval"):
        probe_periods("perf@1s")
    with pytest.raises(ValueError, match="must be positive"):
        probe_periods("cpu@0s")
    with pytest.raises(ValueError, match="cannot read duration"):
        probe_periods("cpu@soon")
    with pytest.raises(ValueError, match="whole multiple"):
        tick_divisors({"cpu": 0.25}, 0.1)
    with pytest.raises(ValueError, match="whole multiple"):
        collect(tmp_path / "r", interval_s=0.1, duration_s=0.5, probes="cpu@150ms")
    assert not (tmp_path / "r" / "meta.json").exists()
