"""Raw evidence of labelled episodes (:func:`reveal_lab.evaluation.episode_evidence`): known
answers on a synthetic two-host dataset and on the bundled recording."""

from __future__ import annotations

import csv
import datetime as dt

import numpy as np
import polars as pl
import pytest

from reveal_lab.evaluation import EVIDENCE_COLUMNS, episode_evidence, evidence_summary

T0 = dt.datetime(2026, 1, 1)
N = 600  # 60 s at 100 ms
FAST = "NetworkTCPRetrans_diff:TcpExtTCPFastRetrans.{h}[count]"
OFO = "Nstat_diff:TcpExtTCPOFOQueue.{h}[count]"
BUSY = "CPU:Busy%.-.{h}[%]"


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _write(root, run, host, cols, start):
    ts = [start + dt.timedelta(milliseconds=100 * i) for i in range(N)]
    f = pl.DataFrame({"timestamp": ts, **cols}).with_columns(pl.col("timestamp").cast(pl.Datetime("ms")))
    (root / "train_separated").mkdir(exist_ok=True)
    name = f"train_separated/{run}_{host}.parquet"
    f.write_parquet(root / name)
    return name, ts


def _dataset(tmp_path):
    """Two hosts of a DDP-like run with a loss episode on hA (20-30 s): hB (the sender)
    retransmits (a counter at 0 in every fault-free span goes to 3 per sample), hA sees
    out-of-order segments (0 -> 0.5); CPU busy is 80 % on hA for the whole fault run, calm
    included (the run differs, not the episode); two fault-free runs per host."""
    from reveal_lab.io import META_COLUMNS

    rng = np.random.default_rng(0)
    rows = []
    model = "DDPCNNforImageClassification_synthetic"
    for k, fault in enumerate(["none", "none", "packet_loss"]):
        start = T0 + dt.timedelta(minutes=5 * k)
        run = f"train_{model}_{start:%Y-%m-%dT%H-%M-%S}"
        for h in ("hA", "hB"):
            busy = 50 + rng.normal(size=N) + (30 if fault != "none" and h == "hA" else 0)
            fast, ofo = np.zeros(N), np.zeros(N)
            if fault != "none":
                if h == "hB":
                    fast[200:300] = 3.0
                else:
                    ofo[200:300] = 0.5
            cols = {BUSY.format(h=h): busy, FAST.format(h=h): fast, OFO.format(h=h): ofo}
            name, ts = _write(tmp_path, run, h, cols, start)
            rows.append(
                {
                    "source_file": f"./{name}",
                    "run": run,
                    "host": h,
                    "workload": "DDPCNN__ImageClassification__synthetic",
                    "phase": "train",
                    "fault": fault,
                    "world_size": 2,
                    "workload_start": _stamp(ts[0]),
                    "workload_end": _stamp(ts[-1]),
                }
            )
            if fault != "none" and h == "hA":
                episode = (run, _stamp(ts[200]), _stamp(ts[299]))
    cols = list(dict.fromkeys([*META_COLUMNS, *rows[0]]))
    with open(tmp_path / "meta_lab.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in cols})
    run, a, b = episode
    (tmp_path / "labels.csv").write_text(
        "run,host,fault_type,start,end,expected_subsystem,magnitude,scope\n"
        f"{run},hA,packet_loss,{a},{b},network,0.01,episode\n"
    )
    return tmp_path, run


def test_evidence_names_the_sender_and_the_receiver_and_not_what_differed_all_run(tmp_path):
    root, run = _dataset(tmp_path)
    ev = episode_evidence(root)
    assert ev.columns == list(EVIDENCE_COLUMNS)
    top = {r["evidence_host"]: r for r in ev.filter(pl.col("rank") == 1).iter_rows(named=True)}
    assert top["hB"]["metric"] == FAST.format(h="hB") and top["hB"]["faultfree_max"] == 0.0
    assert top["hB"]["episode_mean"] == pytest.approx(3.0) and top["hB"]["subsystem"] == "network"
    assert top["hA"]["metric"] == OFO.format(h="hA") and top["hA"]["episode_mean"] == pytest.approx(0.5)
    # CPU busy at 80 % is beyond the fault-free range in the episode, but in the run's calm too
    assert BUSY.format(h="hA") not in set(ev["metric"].drop_nulls())
    assert top["hA"]["calm_beyond"] == 1 and top["hA"]["n_beyond"] == 1
    summ = evidence_summary(ev)
    assert summ == {"episodes": 1, "visible": 1, "visible_at_host": 1, "visible_only_on_peers": 0}
    # scored as missed: it is listed with its strongest metric (the sender's retransmissions)
    missed = ev.select("run", "host", "start", "fault_type").unique().with_columns(detected=pl.lit(False))
    summ = evidence_summary(ev, missed)
    assert [m["metric"] for m in summ["missed_visible"]] == [FAST.format(h="hB")]
    assert summ["missed_visible"][0]["evidence_host"] == "hB"
    assert evidence_summary(ev, missed.with_columns(detected=pl.lit(True)))["missed_visible"] == []


def test_an_episode_that_shows_nothing_gets_an_empty_row(tmp_path):
    root, run = _dataset(tmp_path)
    labels = (root / "labels.csv").read_text().replace("2026-01-01 00:10:20", "2026-01-01 00:10:40")
    labels = labels.replace("2026-01-01 00:10:29.900", "2026-01-01 00:10:49.900")
    (root / "labels.csv").write_text(labels)  # the same length, 20 s later: after the loss
    ev = episode_evidence(root)
    assert ev.height == 2 and ev["metric"].null_count() == 2 and set(ev["n_beyond"]) == {0}
    assert evidence_summary(ev)["visible"] == 0


def test_packet_loss_on_the_bundled_recording_shows_on_the_host_and_its_sender():
    """v3: loss on labB's link. labB's own out-of-order queue and labC's fast retransmissions,
    both 0 in every fault-free DDP span, move in every episode, at 0.1 % too."""
    from reveal_lab.config import data_dir

    labels = pl.read_csv(data_dir() / "labels.csv").filter(pl.col("fault_type") == "packet_loss")
    run = labels["run"][0]
    ev = episode_evidence(data_dir(), runs=[run])
    top = ev.filter(pl.col("rank") == 1)
    assert top["fault_type"].unique().to_list() == ["packet_loss"]
    for host in ("labB", "labC"):
        rows = top.filter(pl.col("evidence_host") == host)
        assert rows.height == 3  # every magnitude
        assert (rows["faultfree_max"] == 0).all() and (rows["episode_mean"] > 0).all()
        assert set(rows["subsystem"]) == {"network"}
    assert top.filter(pl.col("evidence_host") == "labC")["metric"].str.contains("TCPFastRetrans").all()
    assert evidence_summary(ev)["visible_at_host"] == 3
