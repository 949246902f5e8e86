"""Attribution: pair → subsystem → joint subsystems → host, and the words of the claims."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest

from reveal_lab.attribution import attribute, claim, readable_metric
from reveal_lab.config import DetectConfig
from reveal_lab.detectors import DetectorEnsemble, default_detectors

METRICS = {
    "cpu": ["Turbostat:Bzy_MHz.-.{h}[MHz]", "Turbostat:Busy%.3.{h}[%]", "Perf:IPC.{h}[-]"],
    "memory": ["Memory:MemoryUtilization.{h}[%]", "Meminfo_diff:Dirty.{h}[kB]"],
    "network": [
        "NetworkInterStat_diff:rx_bytes.ib0.{h}[Bytes]",
        "NetworkTCPRetrans_diff:TcpRetransSegs.{h}[count]",
    ],
    "storage": ["Storage_diff:sectors_read.{h}[sectors]", "Storage_diff:io_in_progress.{h}[count]"],
    "gpu": ["GPU: utilization.gpu.0.{h}[%]", "GPU: power.draw.1.{h}[W]"],
}
FEATS = ["mean", "std", "acf1"]


def _pairs(hosts=("h1",)):
    rows = []
    for h in hosts:
        for sub, ms in METRICS.items():
            for m in ms:
                for f in FEATS:
                    rows.append(
                        {
                            "metric": m.format(h=h),
                            "feature": f,
                            "subsystem": sub,
                            "kind": "dynamic",
                            "host": h,
                        }
                    )
    return pl.DataFrame(rows)


def _windows(n):
    t0 = dt.datetime(2025, 5, 1, 12)
    return pl.DataFrame(
        {
            "window_id": np.arange(n),
            "start": [t0 + dt.timedelta(seconds=i) for i in range(n)],
            "end": [t0 + dt.timedelta(seconds=i + 3) for i in range(n)],
        },
        schema_overrides={"start": pl.Datetime("ms"), "end": pl.Datetime("ms")},
    )


def _fit(X):
    return DetectorEnsemble(default_detectors(DetectConfig(iforest_estimators=100))).fit(X)


def _cols(pairs, sub, host=None):
    m = (pairs["subsystem"] == sub).to_numpy()
    if host is not None:
        m &= (pairs["host"] == host).to_numpy()
    return np.flatnonzero(m)


def test_single_subsystem_is_attributed_with_evidence_and_claims():
    rng = np.random.default_rng(0)
    pairs = _pairs()
    X = rng.normal(size=(500, pairs.height))
    net = _cols(pairs, "network")
    X[200:204, net[:3]] += 15
    ens = _fit(X)
    att = attribute(ens.detectors_, X, pairs, _windows(500), ens.result_, top_k=3, host="h1")
    win = att.windows.filter(pl.col("window_id").is_in([200, 201, 202, 203]))
    assert win.height == 4
    assert (win["top_subsystem"] == "network").all() and (win["subsystems"] == "network").all()
    assert (win["share_network"] > 0.6).all()
    ev = att.evidence.filter(pl.col("window_id") == 201)
    assert ev["rank"].to_list() == list(range(1, ev.height + 1))
    assert ev.row(0, named=True)["subsystem"] == "network"
    assert set(ev["metric"][:3]) <= set(pairs["metric"][net[:3].tolist()])
    assert ev["claim"][0].startswith("Network") and "baseline" in ev["claim"][0]
    assert (ev["host"] == "h1").all()
    # scores are shares: within one window they sum to at most 1
    assert ev["score"].sum() <= 1 + 1e-9 and (ev["score"] > 0).all()


def test_joint_attribution_when_two_subsystems_co_occur():
    rng = np.random.default_rng(1)
    pairs = _pairs()
    X = rng.normal(size=(500, pairs.height))
    mem, sto = _cols(pairs, "memory"), _cols(pairs, "storage")
    X[300:303, mem[:3]] += 12
    X[300:303, sto[:3]] += 12
    ens = _fit(X)
    att = attribute(ens.detectors_, X, pairs, _windows(500), ens.result_, joint_fraction=0.4, host="h1")
    win = att.windows.filter(pl.col("window_id").is_in([300, 301, 302]))
    for s in win["subsystems"]:
        assert set(s.split("+")) == {"memory", "storage"}


def test_host_is_localized_from_the_pairs():
    rng = np.random.default_rng(2)
    pairs = _pairs(("h1", "h2", "h3"))
    X = rng.normal(size=(400, pairs.height))
    gpu_h3 = _cols(pairs, "gpu", "h3")
    X[100:103, gpu_h3[:4]] += 15
    ens = _fit(X)
    att = attribute(ens.detectors_, X, pairs, _windows(400), ens.result_)
    win = att.windows.filter(pl.col("window_id").is_in([100, 101, 102]))
    assert (win["host"] == "h3").all() and (win["top_subsystem"] == "gpu").all()


def test_each_flagging_detector_contributes_its_own_evidence():
    rng = np.random.default_rng(3)
    pairs = _pairs()
    X = rng.normal(size=(500, pairs.height))
    cpu = _cols(pairs, "cpu")
    X[50:53, cpu[:2]] += 20
    ens = _fit(X)
    res = ens.result_
    att = attribute(ens.detectors_, X, pairs, _windows(500), res, top_k=2, host="h1")
    ev = att.evidence.filter(pl.col("window_id") == 51)
    methods = ev["methods"][0].split("+")
    assert len(methods) == int(res.agreement[51]) >= 2
    named = set("+".join(ev["evidence_of"]).split("+"))
    # rows only the deviation ranking names say so; every flagging detector names its own
    assert named - {"deviation"} == set(methods)


def test_no_anomalous_window_gives_empty_frames():
    pairs = _pairs()
    X = np.random.default_rng(4).normal(size=(100, pairs.height))
    ens = _fit(X)
    res = ens.result_
    res.agreement[:] = 0
    att = attribute(ens.detectors_, X, pairs, _windows(100), res)
    assert att.evidence.height == 0 and att.windows.height == 0
    assert att.evidence.columns[:11] == [
        "window_id",
        "start",
        "end",
        "host",
        "methods",
        "agreement",
        "subsystem",
        "metric",
        "feature",
        "score",
        "claim",
    ]
    with pytest.raises(ValueError, match="X is"):
        attribute(ens.detectors_, X[:, :5], pairs, _windows(100), res)


@pytest.mark.parametrize(
    "metric,feature,value,base,z,expected",
    [
        (
            "Turbostat:Bzy_MHz.-.h[MHz]",
            "acf1",
            0.1,
            0.8,
            -7.4,
            "CPU operating frequency shows a different lag-1 autocorrelation than its baseline (z = -7.4)",
        ),
        (
            "NetworkTCPRetrans_diff:TcpRetransSegs.h[count]",
            "sum",
            24.0,
            2.0,
            9.0,
            "Network TCP retransmissions sum is 12× its baseline (24 vs 2)",
        ),
        (
            "NetworkTCPRetrans_diff:TcpRetransSegs.h[count]",
            "sum",
            5.0,
            0.0,
            np.inf,
            "Network TCP retransmissions sum is 5 where its baseline is 0",
        ),
        (
            "GPU: utilization.gpu.0.h[%]",
            "mean",
            30.0,
            90.0,
            -12.0,
            "GPU utilization (GPU 0) mean is 3× below its baseline (30 vs 90)",
        ),
        (
            "Memory:MemoryUtilization.h[%]",
            "std",
            5.0,
            0.3,
            40.0,
            "Memory utilization shows higher variability than its baseline (z = 40.0)",
        ),
        (
            "Storage_diff:io_in_progress.h[count]",
            "slope",
            -0.5,
            0.0,
            -6.0,
            "Disk I/Os in flight trends downward unlike its baseline (z = -6.0)",
        ),
        (
            "Perf:IPC.h[-]",
            "adf",
            -1.0,
            -4.0,
            5.0,
            "Instructions per cycle is less stationary than its baseline (ADF statistic, z = 5.0)",
        ),
    ],
)
def test_claims_in_words(metric, feature, value, base, z, expected):
    assert claim(metric, feature, value, base, z) == expected


def test_readable_names_fall_back_to_registry_words():
    assert readable_metric("Turbostat:CoreTmp.12.h[C]") == "CPU core temperature (core 12)"
    assert (
        readable_metric("NetworkInterStat_diff:rx_drop.ens1f0.h[count]") == "Network receive drops (ens1f0)"
    )
    assert readable_metric("Disk_diff:sectors_read.sda.h[sectors]") == "Disk sectors read (sda)"
    assert readable_metric("Habana:util.0.h[%]") == "System Habana util (core 0)"
    assert readable_metric("not a metric") == "not a metric"


def test_evidence_is_each_detectors_top_k_ordered_by_score():
    """With ``rule="shares"`` (the detectors' own rankings), within every anomalous window
    the evidence is exactly the union of each flagging detector's ``top_k`` pairs by its own explanation (positive contributions only),
    computed here from ``detector.explain`` on that window, ranked by score, largest
    first. Broken variants: unsorted evidence (ranks not following the scores), the
    top-k cut removed (more pairs than the detectors' top k)."""
    rng = np.random.default_rng(5)
    pairs = _pairs()
    X = rng.normal(size=(400, pairs.height))
    X[100:104, _cols(pairs, "network")[:4]] += 12
    X[250:252, _cols(pairs, "gpu")[:2]] += 9
    ens = _fit(X)
    res = ens.result_
    top_k = 3
    att = attribute(ens.detectors_, X, pairs, _windows(400), res, top_k=top_k, host="h1", rule="shares")
    anomalous = np.flatnonzero(res.agreement > 0)
    assert anomalous.size >= 6
    metric_feature = list(zip(pairs["metric"], pairs["feature"], strict=True))
    for i in anomalous:
        ev = att.evidence.filter(pl.col("window_id") == int(i))
        want: set[int] = set()
        for n, det in ens.detectors_.items():
            if res.labels[n][i] == 1:
                c = det.explain(X[[i]])[0]
                want |= {int(j) for j in np.argsort(-c, kind="stable")[:top_k] if c[j] > 0}
        got = {metric_feature.index(mf) for mf in zip(ev["metric"], ev["feature"], strict=True)}
        assert got == want, (i, got, want)
        scores = ev["score"].to_list()
        assert scores == sorted(scores, reverse=True), (i, scores)
        assert ev["rank"].to_list() == list(range(1, ev.height + 1))
    # the default ranking (deviation) ranks by metric deviation: ranks stay contiguous
    dev = attribute(ens.detectors_, X, pairs, _windows(400), res, top_k=top_k, host="h1")
    for i in anomalous:
        ev = dev.evidence.filter(pl.col("window_id") == int(i))
        assert ev["rank"].to_list() == list(range(1, ev.height + 1))


def test_deviation_rule_ranks_the_planted_metrics_and_caps_degenerate_features():
    rng = np.random.default_rng(5)
    pairs = _pairs()
    X = rng.normal(size=(500, pairs.height))
    sto = _cols(pairs, "storage")  # 2 metrics x 3 features
    X[250, sto] += 150  # both storage metrics move in every feature, beyond the cap
    cpu = _cols(pairs, "cpu")
    X[250, cpu[2]] = 1e9  # one degenerate feature (acf1 of the first CPU metric)
    ens = _fit(X[:240])
    res = ens.score(X[240:260])
    att = attribute(ens.detectors_, X[240:260], pairs, _windows(20), res, top_k=3, host="h1")
    ev = att.evidence.filter(pl.col("window_id") == 10).sort("rank")
    top = list(dict.fromkeys(ev["metric"].to_list()))
    assert set(top[:2]) == set(pairs["metric"][sto.tolist()].to_list())
    win = att.windows.filter(pl.col("window_id") == 10)
    assert win["top_subsystem"][0] == "storage"
    # the detectors' own ranking ("shares") is still available
    old = attribute(ens.detectors_, X[240:260], pairs, _windows(20), res, top_k=3, host="h1", rule="shares")
    assert old.evidence.height > 0 and "deviation" not in set(old.evidence["evidence_of"])
    with pytest.raises(ValueError, match="rule must be"):
        attribute(ens.detectors_, X[240:260], pairs, _windows(20), res, rule="nope")


def test_subsystems_by_metrics_count_each_metric_once():
    """One CPU metric that moved in all its features against two storage metrics that moved in
    one feature each, by a larger |z|: by pairs CPU's three pairs outweigh storage's two; by
    metrics storage's two metrics outweigh CPU's one."""
    rng = np.random.default_rng(7)
    pairs = _pairs()
    X = rng.normal(size=(500, pairs.height))
    cpu, sto = _cols(pairs, "cpu"), _cols(pairs, "storage")
    X[250, cpu[:3]] += 30  # the first CPU metric: mean, std, acf1 all at |z| ~ 30
    X[250, sto[[0, 3]]] += 40  # both storage metrics: one feature each at |z| ~ 40
    ens = _fit(X[:240])
    res = ens.score(X[240:260])
    args = (ens.detectors_, X[240:260], pairs, _windows(20), res)
    by_pairs = attribute(*args, host="h1").windows.filter(pl.col("window_id") == 10)
    by_metrics = attribute(*args, host="h1", subsystem_by="metrics").windows.filter(pl.col("window_id") == 10)
    assert by_pairs["top_subsystem"][0] == "cpu"
    assert by_metrics["top_subsystem"][0] == "storage"
    shares = [by_metrics[f"share_{s}"][0] for s in ("cpu", "memory", "network", "storage", "gpu")]
    assert sum(shares) == pytest.approx(1.0) and by_metrics["share_storage"][0] > 0.5
    # the evidence (metric ranking) is the same either way
    ev = attribute(*args, host="h1").evidence.filter(pl.col("window_id") == 10)
    ev_m = attribute(*args, host="h1", subsystem_by="metrics").evidence.filter(pl.col("window_id") == 10)
    assert ev["metric"].to_list() == ev_m["metric"].to_list()
    with pytest.raises(ValueError, match="subsystem_by must be"):
        attribute(*args, subsystem_by="nope")
    with pytest.raises(ValueError, match="needs rule='deviation'"):
        attribute(*args, subsystem_by="metrics", rule="shares")
