"""The live engine on a real host recording (``data/host``: this VM, a 50 MiB/s network send
injected into a calm stretch), replayed in the collector's 1 s flush batches as
``benchmarks/host_recordings.py`` replays it: a stream alone applies a run alone's rules as
``detect_run`` does (the columns constant over the warm-up kept, the robust thresholds, the
sentinel rule's form for a run alone) and names the send as ``detect_run`` names it."""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.config import get_preset
from reveal_lab.io import load_run, read_labels
from reveal_lab.live import LiveDetector
from reveal_lab.pipeline import detect_run, robust_threshold

HOST = Path(__file__).resolve().parents[2] / "data" / "host"
SEND = HOST / "recordings" / "host_JobsforHost_vm_2026-11-27T12-57-09_vm.parquet"
#: the replay's batches (the collector flushes every 1 s at 100 ms) and warm-up (the benchmark's)
BATCH_ROWS, WARMUP_S = 10, 12.0


def _ranking(shares: list[dict[str, float]]) -> list[str]:
    """Subsystems by their summed attribution shares over windows (the scorer's ranking)."""
    total: dict[str, float] = {}
    for s in shares:
        for k, x in s.items():
            total[k] = total.get(k, 0.0) + x
    return sorted(total, key=lambda k: -total[k])


@pytest.mark.skipif(not SEND.exists(), reason="data/host is not here")
def test_a_network_send_is_named_network_live_as_detect_run_names_it():
    """(Broken variants caught: the live view dropping the counters constant over the warm-up,
    the network's, so the send was named ``cpu``; the Mahalanobis and forest thresholds the top
    1 % of the fit's scores instead of a run alone's robust ones; no sentinel rule alone.)"""
    run = load_run(SEND)
    labels = read_labels(HOST / "labels.csv")
    label = labels.filter(pl.col("source_file").str.ends_with(SEND.name)).row(0, named=True)
    assert label["fault_type"] == "net_send" and label["expected_subsystem"] == "network"
    p = get_preset("paper")
    det = LiveDetector(p.window, p.detect, warmup_s=WARMUP_S)
    verdicts = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(0, run.frame.height, BATCH_ROWS):
            verdicts += det.push(run.frame.slice(k, BATCH_ROWS))
        offline = detect_run(run, policy=det.policy.with_(min_agreement=1))
    scored = [v for v in verdicts if v.phase == "scored"]
    warm_end = min(v.start for v in scored)
    # the interface's counters never move in the warm-up and are kept
    tx = [c for c in det._keep if c.startswith("NetworkInterStat_diff:tx_bytes")]
    assert tx and run.frame.filter(pl.col("timestamp") < warm_end).height > 0
    # a run alone's thresholds: the Z-score's per family, the others robust on their fit scores
    fit = det.ensemble.result_
    for m in ("mahalanobis", "iforest"):
        expected = robust_threshold(fit.scores[m], det.alone.false_alarm_rate, len(fit.methods))
        assert det.ensemble.detectors_[m].threshold_ == pytest.approx(expected)
        assert det.detectors[m].threshold_ == pytest.approx(expected)
    assert det.ensemble.detectors_["mahalanobis"].clip == det.alone.z_clip is not None

    def inside(v) -> bool:  # noqa: ANN001 - a Verdict or a windows row
        return v["start"] < label["end"] and v["end"] > label["start"]

    live_in = [v for v in scored if inside({"start": v.start, "end": v.end})]
    flagged = [v for v in live_in if v.anomalous]
    assert len(flagged) >= len(live_in) // 2
    assert _ranking([v.shares for v in flagged])[0] == "network"
    # the sentinel rule of a run alone fired on a network counter quiet in most of the stream
    fired = [v for v in flagged if v.sentinel]
    assert fired
    assert all(v.subsystems == "network" and v.evidence[0]["evidence_of"] == "sentinel" for v in fired)
    span = (pl.col("start") < label["end"]) & (pl.col("end") > label["start"])
    off = offline.windows.filter(pl.col("anomalous") & span)
    off_shares = [{k.removeprefix("share_"): x for k, x in r.items() if k.startswith("share_") and x}
                  for r in off.select(pl.selectors.starts_with("share_")).iter_rows(named=True)]
    assert _ranking(off_shares)[0] == "network"
    # nothing flagged live in the calm stretch before the send
    assert not any(v.anomalous for v in scored if v.end <= label["start"])
