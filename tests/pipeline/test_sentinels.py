"""Counters silent in the baseline that move in the scored run: listed by ``detect_run`` and
the report (:func:`reveal_lab.pipeline.sentinel_counters`), and a window where one is non-zero
in ``DetectConfig.sentinel_samples`` of its samples is anomalous (the sentinel rule)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest


from reveal_lab.config import get_preset
from reveal_lab.pipeline import (
    SENTINEL_COLUMNS,
    SENTINEL_MIN_SAMPLES,
    detect_run,
    sentinel_counters,
    sentinel_windows,
    silent_counters,
)
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
    # 3 and 4 samples in a window: below the rule's 5, listed but no window decided by it
    assert det.summary["sentinel_windows"] == 0 and not det.windows["sentinel"].any()
    paths = write_report(det, tmp_path, figures=False)
    assert pl.read_csv(paths["sentinels.csv"])["metric"].to_list() == [OFO]
    md = paths["report.md"].read_text()
    assert "Counters silent in the baseline that moved here" in md and OFO in md
    assert "Counters silent in the baseline" in paths["report.html"].read_text()
    # the same run without a baseline: nothing to call silent; the rule for a run alone asks a
    # quiet counter to move in 90 % of a window's samples 4 windows in a row, and 7 scattered
    # samples do not: nothing listed, no file, no section
    alone = detect_run(run, trim=False)
    assert alone.config["sentinel_rule"] == "lone" and alone.sentinels.height == 0
    assert alone.summary["sentinel_counters"] == 0 and not alone.windows["sentinel"].any()
    paths = write_report(alone, tmp_path / "alone", figures=False)
    md = paths["report.md"].read_text()
    assert "sentinels.csv" not in paths and "Counters silent" not in md and "Quiet counters" not in md
    off = detect_run(run, sentinel_samples=None, lone_sentinel=False, trim=False)
    assert off.config["sentinel_rule"] is None and off.sentinels is None


def test_a_quiet_counter_busy_for_six_seconds_fires_the_rule_for_a_run_alone(tmp_path):
    """A run alone, no baseline: the out-of-order counter is 0 in 90 % of the run and moves in
    every sample for 6 s (60 samples). The windows wholly inside those 6 s (4 of 3 s every 1 s)
    are anomalous by the sentinel rule for a run alone, attributed to the network; the counter
    is listed and reported; ``sentinel_samples=None`` turns the rule off."""
    run = _run("r", 3, ofo_at=list(range(300, 360)))
    det = detect_run(run, trim=False)
    assert det.fit_mode == "robust" and det.config["sentinel_rule"] == "lone"
    assert det.config["sentinel_min_run"] == 4
    fired = det.windows.filter("sentinel").sort("start")
    t = run.frame["timestamp"]
    assert fired.height == 4 and fired["sentinel_metric"].unique().to_list() == [OFO]
    assert (fired["start"] >= t[300]).all()
    assert (fired["end"] <= t[359] + dt.timedelta(milliseconds=100)).all()
    assert fired["anomalous"].all()
    assert (fired.filter(pl.col("agreement") == 0)["top_subsystem"] == "network").all()
    assert det.summary["sentinel_windows"] == 4 and det.sentinels["metric"].to_list() == [OFO]
    paths = write_report(det, tmp_path, figures=False)
    assert "Quiet counters that fired the sentinel rule" in paths["report.md"].read_text()
    assert "sentinel rule for a run alone: 4 window(s)" in paths["report.md"].read_text()
    assert pl.read_csv(paths["sentinels.csv"])["metric"].to_list() == [OFO]
    off = detect_run(run, sentinel_samples=None, lone_sentinel=False, trim=False)
    assert not off.windows["sentinel"].any() and off.config["sentinel_rule"] is None


def test_a_silent_counter_moving_for_two_seconds_makes_its_windows_anomalous(tmp_path):
    """20 samples (2 s) of the out-of-order counter, which never moved in the baseline: every
    3 s window with 5 or more of them is anomalous, attributed to the network with a sentinel
    evidence row, whatever the detectors say; with the rule off (``sentinel_samples=None``)
    the decision is the detectors' agreement alone."""
    base = [_run("b1", 1), _run("b2", 2)]
    run = _run("r", 3, ofo_at=list(range(300, 320)))
    det = detect_run(run, baseline=base, trim=False, min_agreement=2)
    w = det.windows
    assert det.config["sentinel_samples"] == SENTINEL_MIN_SAMPLES == 5
    # window k holds samples [10k, 10k + 30): samples 300..319 give windows 28..31 10, 20, 20
    # and 10 of them, windows 27 and 32 none
    fired = w.filter(pl.col("sentinel"))["window_id"].sort().to_list()
    assert fired == [28, 29, 30, 31], fired
    assert w.filter(pl.col("sentinel"))["sentinel_samples"].max() == 20
    assert set(w.filter(pl.col("sentinel"))["sentinel_metric"]) == {OFO}
    assert w.filter(pl.col("sentinel"))["anomalous"].all()
    alone = w.filter(pl.col("sentinel") & (pl.col("agreement") < 2))
    assert alone.height >= 1  # the detectors alone do not flag all of them
    assert set(alone["top_subsystem"]) == {"network"} and (alone["share_network"] == 1.0).all()
    assert det.anomalous.height == w.filter((pl.col("agreement") >= 2) | pl.col("sentinel")).height
    ev = det.anomalies().filter(pl.col("methods") == "sentinel")
    assert ev.height == len(fired) and set(ev["metric"]) == {OFO} and set(ev["subsystem"]) == {"network"}
    assert "0 in every sample of the baseline runs" in ev["claim"][0]
    assert det.summary["sentinel_windows"] == len(fired)
    paths = write_report(det, tmp_path, figures=False)
    md = paths["report.md"].read_text()
    assert "the sentinel rule" in md and f"{len(fired)} window(s)" in md
    summary = json.loads(paths["summary.json"].read_text())
    assert summary["sentinel_windows"] == len(fired) == summary["runs"][0]["sentinel_windows"]
    assert pl.read_csv(paths["anomalies.csv"]).filter(pl.col("methods") == "sentinel").height == len(fired)
    # the rule off: the same counters listed, no window decided by them
    off = detect_run(run, baseline=base, trim=False, min_agreement=2, sentinel_samples=None)
    assert off.config["sentinel_samples"] is None and off.sentinels.height == 1
    assert not off.windows["sentinel"].any() and off.summary["sentinel_windows"] == 0
    assert off.anomalous.height == off.windows.filter(pl.col("agreement") >= 2).height
    assert "methods" in off.anomalies().columns and "sentinel" not in off.anomalies()["methods"].to_list()
    # no baseline: no rule at all
    assert detect_run(run, trim=False).config["sentinel_samples"] is None
    with pytest.raises(ValueError, match="sentinel_samples"):
        detect_run(run, baseline=base, trim=False, sentinel_samples=0)


def test_sentinel_windows_counts_each_counters_samples_per_window():
    """Two silent counters: the window takes the one non-zero in most of its samples; the
    threshold is inclusive; a bad threshold is refused by name."""
    run = _run("r", 3, ofo_at=list(range(0, 6)))
    f = run.frame.with_columns(
        pl.Series("Nstat_diff:TcpExtTCPAckCompressed.h1[count]", [1.0] * 8 + [0.0] * (run.frame.height - 8))
    )
    r = Run(run.meta, f)
    ts = f["timestamp"]
    w = pl.DataFrame(
        {"window_id": [0, 1], "host": ["h1", "h1"], "start": [ts[0], ts[30]], "end": [ts[30], ts[60]]}
    )
    silent = {"Nstat_diff:TcpExtTCPOFOQueue", "Nstat_diff:TcpExtTCPAckCompressed"}
    out = sentinel_windows(w, r.split_hosts(), silent, 8)
    assert out.rows() == [
        (0, "h1", 8, True, "Nstat_diff:TcpExtTCPAckCompressed.h1[count]", "network"),
        (1, "h1", 0, False, None, None),
    ]
    assert not sentinel_windows(w, r.split_hosts(), silent, 9)["sentinel"].any()
    with pytest.raises(ValueError, match="min_samples"):
        sentinel_windows(w, r.split_hosts(), silent, 0)


def test_missing_and_non_finite_samples_are_not_moves():
    """A counter sample moves when it is finite and non-zero, in the baseline and in the scored
    run alike (the live engine counts the same way): NaN and ±inf samples say nothing."""
    run = _run("r", 4)
    n = run.frame.height
    vals = [np.nan] * 3 + [np.inf] * 3 + [-np.inf] * 3 + [2.0] * 4 + [0.0] * (n - 13)
    r = Run(run.meta, run.frame.with_columns(pl.Series(OFO, vals)))
    ts = r.frame["timestamp"]
    w = pl.DataFrame({"window_id": [0], "host": ["h1"], "start": [ts[0]], "end": [ts[30]]})
    out = sentinel_windows(w, r.split_hosts(), {"Nstat_diff:TcpExtTCPOFOQueue"}, 4)
    assert out["sentinel_samples"].to_list() == [4] and out["sentinel"].to_list() == [True]
    listed = sentinel_counters(r.split_hosts(), {"Nstat_diff:TcpExtTCPOFOQueue"})
    assert listed["samples"].to_list() == [4] and listed["max"].to_list() == [2.0]
    # a baseline whose only non-zero samples are non-finite keeps the counter silent
    base = Run(run.meta, run.frame.with_columns(pl.Series(OFO, [np.inf] * 2 + [0.0] * (n - 2))))
    assert "Nstat_diff:TcpExtTCPOFOQueue" in silent_counters([base])


def test_the_collectors_own_counters_are_never_sentinels():
    """``Collector_diff:missed_ticks`` is the instrument's state (kind ``instrument``): on the lab
    recording it was the only counter that fired the rule in a fault-free run."""
    from reveal_lab.telemetry import classify

    runs = []
    for i in (1, 2, 3):
        r = _run(f"b{i}", i)
        miss = np.zeros(r.frame.height)
        if i == 3:
            miss[100:140] = 1.0
        missed = pl.Series("Collector_diff:missed_ticks.h1[count]", miss)
        runs.append(Run(r.meta, r.frame.with_columns(missed)))
    assert classify("Collector_diff:missed_ticks.h1[count]").kind == "instrument"
    assert silent_counters(runs[:2]) == {"Nstat_diff:TcpExtTCPOFOQueue"}
    det = detect_run(runs[2], baseline=runs[:2], trim=False)
    assert not det.windows["sentinel"].any() and det.sentinels.height == 0


def test_a_counter_that_moved_in_one_baseline_run_is_not_silent():
    base = [_run("b1", 1), _run("b2", 2, ofo_at=[5])]
    assert silent_counters(base) == set()
    run = _run("r", 3, ofo_at=[100])
    assert sentinel_counters(run.split_hosts(), silent_counters(base)).height == 0


@pytest.mark.skipif(not (LAB / "meta_lab.csv").is_file(), reason="data/lab not present")
def test_packet_loss_on_the_bundled_recording_shows_in_the_senders_silent_counters():
    """v3: loss on labB's link; labC (the sender) retransmits fast, a counter that is 0 in
    every fault-free DDP run: the sentinel rule flags windows inside the loss episodes (the
    detectors' agreement flags none of them), attributed to the network."""
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
    labels = pl.read_csv(LAB / "labels.csv", try_parse_dates=True).filter(pl.col("run") == loss)
    inside = pl.lit(False)
    for lab in labels.filter(pl.col("scope") == "episode").iter_rows(named=True):
        inside = inside | ((pl.col("end") > lab["start"]) & (pl.col("start") < lab["end"]))
    fired = det.windows.filter(pl.col("sentinel"))
    # with two baseline runs, more counters are silent than with the five of `evaluate`, and
    # retransmissions outlast an episode: most fired windows lie inside the episodes
    n_in = fired.filter(inside).height
    assert n_in >= max(3, fired.height // 2), (n_in, fired.height)
    assert set(fired["sentinel_subsystem"]) == {"network"}


def test_a_collectors_cumulative_counter_is_judged_by_its_differences():
    """A collector writes kernel counters cumulatively (``Nstat:TcpExtTCPOFOQueue`` stays at its
    value since boot while nothing happens): the sentinel rule sees their per-interval
    differences, as the detectors do, so a baseline where it never moved makes it silent."""
    def cumulative(run: Run, since_boot: float) -> Run:
        f = run.frame
        ofo = f[OFO].cum_sum() + since_boot
        f = f.drop(OFO).with_columns(ofo.alias("Nstat:TcpExtTCPOFOQueue.h1[count]"))
        return Run(run.meta, f)

    base = [cumulative(_run("b1", 1), 1234.0), cumulative(_run("b2", 2), 1234.0)]
    assert silent_counters(base) == set()  # as written: a constant level, not a counter
    run = cumulative(_run("r", 3, ofo_at=list(range(300, 320))), 1234.0)
    det = detect_run(run, baseline=base, trim=False, min_agreement=2)
    assert det.sentinels["metric"].to_list() == ["Nstat_diff:TcpExtTCPOFOQueue.h1[count]"]
    assert det.windows.filter(pl.col("sentinel"))["window_id"].to_list() == [28, 29, 30, 31]
