"""Counters silent in the baseline that move in the scored run: listed by ``detect_run`` and
the report (:func:`reveal_lab.pipeline.sentinel_counters`), not scored."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from reveal_lab.pipeline import SENTINEL_COLUMNS, detect_run, sentinel_counters, silent_counters
from reveal_lab.report import write_report
from reveal_lab.telemetry import Run, RunMeta

OFO = "Nstat_diff:TcpExtTCPOFOQueue.h1[count]"
SEGS = "Nstat_diff:TcpInSegs.h1[count]"
LAB = Path(__file__).resolve().parents[2] / "data" / "lab"


def _run(name: str, seed: int, ofo_at: list[int] | None = None, n: int = 600) -> Run:
    rng = np.random.default_rng(seed)
    t0 = dt.datetime(2026, 1, 1, seed)
    ofo = np.zeros(n)
    for i in ofo_at or []:
        ofo[i] = 2.0
    frame = pl.DataFrame(
        {
            "timestamp": [t0 + dt.timedelta(milliseconds=100 * i) for i in range(n)],
            "CPU:Busy%.-.h1[%]": 50 + rng.normal(size=n),
            "Memory:Dirty.h1[kB]": 1000 + rng.normal(size=n),
            SEGS: rng.poisson(50, size=n).astype(float),
            OFO: ofo,
        }
    ).with_columns(pl.col("timestamp").cast(pl.Datetime("ms")))
    return Run(RunMeta(run_id=name, hosts=("h1",), workload="w"), frame)


def test_a_counter_silent_in_the_baseline_is_listed_and_reported(tmp_path):
    base = [_run("b1", 1), _run("b2", 2)]
    assert silent_counters(base) == {"Nstat_diff:TcpExtTCPOFOQueue"}  # TcpInSegs moves: not silent
    run = _run("r", 3, ofo_at=[100, 101, 102, 350, 351, 352, 353])
    det = detect_run(run, baseline=base, trim=False)
    s = det.sentinels
    assert s.columns == list(SENTINEL_COLUMNS) and s.height == 1
    row = s.row(0, named=True)
    assert row["metric"] == OFO and row["samples"] == 7 and row["max"] == 2.0
    assert row["subsystem"] == "network"
    assert row["first"] == run.frame["timestamp"][100] and row["last"] == run.frame["timestamp"][353]
    assert det.summary["sentinel_counters"] == 1
    paths = write_report(det, tmp_path, figures=False)
    assert pl.read_csv(paths["sentinels.csv"])["metric"].to_list() == [OFO]
    md = paths["report.md"].read_text()
    assert "Counters silent in the baseline that moved here" in md and OFO in md
    assert "Counters silent in the baseline" in paths["report.html"].read_text()
    # the same run without a baseline: nothing to call silent, no file, no section
    alone = detect_run(run, trim=False)
    assert alone.sentinels is None and alone.summary["sentinel_counters"] is None
    paths = write_report(alone, tmp_path / "alone", figures=False)
    assert "sentinels.csv" not in paths and "Counters silent" not in paths["report.md"].read_text()


def test_a_counter_that_moved_in_one_baseline_run_is_not_silent():
    base = [_run("b1", 1), _run("b2", 2, ofo_at=[5])]
    assert silent_counters(base) == set()
    run = _run("r", 3, ofo_at=[100])
    assert sentinel_counters(run.split_hosts(), silent_counters(base)).height == 0


@pytest.mark.skipif(not (LAB / "meta_lab.csv").is_file(), reason="data/lab not present")
def test_packet_loss_on_the_bundled_recording_shows_in_the_senders_silent_counters():
    """v3: loss on labB's link; labC (the sender) retransmits fast, a counter that is 0 in
    every fault-free DDP run; no window is anomalous, the report still names it."""
    from reveal_lab.io import load_run

    meta = pl.read_csv(LAB / "meta_lab.csv", infer_schema_length=0)
    loss = meta.filter(pl.col("fault").str.contains("packet_loss")).sort("run")["run"][0]
    one = meta.filter((pl.col("run") == loss) & (pl.col("host") == "labC"))["source_file"][0]
    base = meta.filter((pl.col("case") == "ddp:before") & (pl.col("host") == "labC")).sort("run")
    det = detect_run(load_run(LAB / one),
                     baseline=[load_run(LAB / f) for f in base["source_file"].to_list()[:2]])  # fmt: skip
    named = det.sentinels["metric"].to_list()
    assert any("TcpExtTCPFastRetrans" in m for m in named)
    assert set(det.sentinels["subsystem"]) == {"network"}
