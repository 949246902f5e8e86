"""LiveDetector on seeded synthetic streams: per-window features equal the offline ones,
planted anomalies are flagged and attributed as they stream past, baselines from another
host, gaps; the flattened Isolation Forest equals scikit-learn's."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from reveal_lab.config import WindowConfig
from reveal_lab.derive import add_derived
from reveal_lab.features import window_features
from reveal_lab.live import LiveDetector
from reveal_lab.pipeline import POLICIES, Pruning, detection_view, fit_pruning, save_pruning
from reveal_lab.synth import Anomaly, make_run
from reveal_lab.telemetry import Run, RunMeta, parse_metric_name


def _stream(det: LiveDetector, frame: pl.DataFrame, seed: int = 0) -> list:
    """Push ``frame`` in chunks of random size (1-25 rows), as a collector's flushes would arrive."""
    rng = np.random.default_rng(seed)
    out, i = [], 0
    while i < frame.height:
        n = int(rng.integers(1, 26))
        out += det.push(frame.slice(i, n))
        i += n
    return out


def test_each_window_features_equal_the_offline_features():
    run, _ = make_run(40, n_channels=150, seed=5)
    det = LiveDetector(warmup_s=20, keep_features=True, policy=POLICIES["default"].with_(prune=False))
    verdicts = _stream(det, run.frame)
    # the live view decides on the warm-up what the pipeline decides on the whole run (derived
    # metrics; static and all-missing columns out); a stream alone keeps the columns constant
    # over its warm-up (a counter whose first event comes later), so it holds every column of
    # the offline view, and besides only columns constant over the warm-up
    offline_view = detection_view(run.frame)[0]
    live_cols = det._keep
    assert set(offline_view.columns) <= set(live_cols)
    derived = add_derived(run.frame).select(live_cols)
    warm = derived.slice(0, 200)
    assert all(warm[c].n_unique() == 1 for c in set(live_cols) - set(offline_view.columns))
    offline = window_features(derived, WindowConfig())
    assert len(det.history) == offline.n_windows == len(verdicts)
    for k, x, pairs in det.history:
        row = offline.windows.get_column("window_id").to_list().index(k)
        assert pairs.select("metric", "feature").equals(offline.pairs.select("metric", "feature"))
        np.testing.assert_array_equal(x, offline.X[row])
    starts = offline.windows.get_column("start").to_list()
    assert [v.start for v in verdicts] == starts


@pytest.mark.slow
def test_planted_anomaly_is_flagged_and_attributed_while_streaming():
    """Fitted on its warm-up, the stream is a run alone: a 10 s level shift of the network is
    flagged by the detectors from its 8th window in a row on (the causal form of a run alone's
    ``min_run``) and by the sentinel rule of a run alone from its 4th (a network error counter,
    0 before, moves in each sample), named network, with evidence in words, and few windows
    outside it are flagged; with ``min_run=1`` every window of it is."""
    run, truth = make_run(
        80, n_channels=200, seed=3, anomalies=[Anomaly("network", 55.0, 65.0, kind="level", magnitude=10.0)]
    )
    t0 = run.frame.get_column("timestamp")[0]

    def overlaps(v) -> bool:
        a, b = (v.start - t0).total_seconds(), (v.end - t0).total_seconds()
        return a < 65.0 and b > 55.0

    for min_run in (None, 1):
        det = LiveDetector(warmup_s=40, policy=POLICIES["default"].with_(min_run=min_run))
        verdicts = _stream(det, run.frame, seed=1)
        scored = [v for v in verdicts if v.phase == "scored"]
        assert scored and all(v.phase == "warmup" for v in verdicts[: len(verdicts) - len(scored)])
        inside = [v for v in scored if overlaps(v)]
        outside = [v for v in scored if not overlaps(v)]
        assert inside and outside  # scored windows both inside and outside the planted span
        flagged_in = [v for v in inside if v.anomalous]
        if min_run is None:
            assert det.alone.min_run == 8
            assert not any(set(v.methods) - {"sentinel"} for v in inside[:7])  # an episode's first 7
            lone = det.alone.sentinel_min_run
            assert lone == 4 and not any(v.anomalous for v in inside[: lone - 1])
            assert len(flagged_in) >= len(inside) - 8
            assert sum(v.anomalous for v in outside) <= 0.1 * len(outside)
        else:
            assert len(flagged_in) >= 0.9 * len(inside)
        # attributed to the planted subsystem (the top evidence pair) in most of them
        assert sum(v.subsystem == "network" for v in flagged_in) >= 0.6 * len(flagged_in)
        # every anomaly carries evidence with a claim in words
        for v in flagged_in:
            ev = v.evidence[0]
            assert ev["metric"] and ev["feature"] and isinstance(ev["claim"], str) and ev["claim"]
            d = v.to_dict()
            assert d["subsystem"] == ev["subsystem"] and d["claim"] == ev["claim"]


def test_baseline_from_another_host_and_evidence_named_by_the_stream():
    base, _ = make_run(40, n_channels=150, hosts=("hostA",), seed=1, profile_seed=7)
    live, _ = make_run(
        30,
        n_channels=150,
        hosts=("hostB",),
        seed=2,
        profile_seed=7,
        anomalies=[Anomaly("cpu", 10.0, 20.0, magnitude=12.0)],
    )
    det = LiveDetector(baseline=base, policy=POLICIES["default"].with_(min_agreement=2))
    assert det.fitted and "baseline" in (det.fitted_on or "")
    verdicts = _stream(det, live.frame)
    assert verdicts and all(v.phase == "scored" for v in verdicts)  # no warm-up with a baseline
    anomalous = [v for v in verdicts if v.anomalous]
    assert anomalous
    for v in anomalous:
        assert v.host == "hostB"
        assert all(".hostB" in e["metric"] for e in v.evidence)


def test_gap_windows_are_not_scored():
    run, _ = make_run(30, n_channels=80, seed=4, gaps=[(15.0, 22.0)])
    det = LiveDetector(warmup_s=12)
    verdicts = _stream(det, run.frame)
    gaps = [v for v in verdicts if v.phase == "gap"]
    assert gaps and all(v.n_samples < 15 for v in gaps)
    assert not any(v.anomalous for v in gaps)


def test_warmup_too_short_is_a_clear_error():
    from reveal_lab.telemetry import TelemetryError

    run, _ = make_run(10, n_channels=40, seed=0)
    det = LiveDetector(warmup_s=3.5)
    with pytest.raises(TelemetryError, match="need at least 3"):
        _stream(det, run.frame)


def test_flat_forest_scores_and_explains_like_the_detector():
    from reveal_lab.detectors import FastForestScorer as _FastForest
    from reveal_lab.detectors import IsolationForestDetector

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 300))
    Y = rng.normal(size=(6, 300)) * 3
    Y[1, 7] = np.nan
    for max_samples in ("auto", 16):
        d = IsolationForestDetector(n_estimators=60, max_samples=max_samples).fit(X)
        f = _FastForest(d)
        np.testing.assert_array_equal(f.decision_function(Y), d.decision_function(Y))
        np.testing.assert_array_equal(f.explain(Y), d.explain(Y))


def test_verdicts_do_not_depend_on_how_rows_arrive():
    run, _ = make_run(45, n_channels=120, seed=9, anomalies=[Anomaly("memory", 33.0, 38.0, magnitude=8.0)])
    # every window over a threshold counts (min_run=1): the 5 s anomaly is shorter than a run
    # alone's 8 windows in a row
    a = _stream(LiveDetector(warmup_s=25, policy=POLICIES["default"].with_(min_run=1)), run.frame, seed=1)
    b = _stream(LiveDetector(warmup_s=25, policy=POLICIES["default"].with_(min_run=1)), run.frame, seed=2)
    assert [(v.window_id, v.phase, v.anomalous, v.methods) for v in a] == [
        (v.window_id, v.phase, v.anomalous, v.methods) for v in b
    ]
    assert [v.scores for v in a] == [v.scores for v in b]
    assert any(v.anomalous for v in a)


def test_pruned_space_fitted_on_the_warmup_equals_the_pipelines():
    """Asked for (``prune=True``; a stream alone scores every metric by default), the live space
    is the paper's pruned one, fitted on the warm-up rows exactly as :func:`fit_pruning` fits it
    on that stretch; each window's features equal the offline features of those columns.
    (Broken variant caught: the live view ignoring the pruning.)"""
    run, _ = make_run(40, n_channels=150, seed=5)
    assert LiveDetector(warmup_s=20).pruning is None and not LiveDetector(warmup_s=20)._prune_pending
    folded = POLICIES["default"].with_(prune=True, fold_cores=False)
    det = LiveDetector(warmup_s=20, keep_features=True, policy=folded)
    verdicts = _stream(det, run.frame)
    assert det.pruning is not None and det.pruning_source == "fitted on the warm-up"
    t0 = run.frame.get_column("timestamp")[0]
    warm = run.frame.filter(pl.col("timestamp") < t0 + pl.duration(seconds=20))
    expected = fit_pruning([Run(RunMeta("w", hosts=run.meta.hosts), warm)], 0.5, trim=False)
    assert det.pruning.selected == expected.selected
    live_cols = [c for c in det._keep if c != "timestamp"]
    unpruned = [c for c in detection_view(warm)[0].columns if c != "timestamp"]
    assert 0 < len(live_cols) < len(unpruned)  # pruning dropped correlated metrics
    offline_view = detection_view(run.frame, det.pruning)[0]
    offline = window_features(offline_view.select("timestamp", *live_cols), WindowConfig())
    assert len(det.history) == offline.n_windows == len(verdicts)
    for k, x, _pairs in det.history:
        row = offline.windows.get_column("window_id").to_list().index(k)
        np.testing.assert_array_equal(x, offline.X[row])


def test_a_saved_pruning_restricts_the_live_space(tmp_path):
    run, _ = make_run(30, n_channels=80, seed=6)
    view = detection_view(run.frame)[0]
    chosen = [c for c in view.columns if c != "timestamp"][:5]
    path = save_pruning(Pruning(chosen, {"threshold": 0.5}, {}), tmp_path / "pruning.json")
    det = LiveDetector(warmup_s=12, policy=POLICIES["default"].with_(prune=path))
    _stream(det, run.frame)
    assert det.fitted and det.pruning_source == str(path)
    assert {p.split("|")[0] for p in det.keys} == {parse_metric_name(c).key() for c in chosen}
    with pytest.raises(ValueError, match="not a pruning file"):
        LiveDetector(policy=POLICIES["default"].with_(prune=tmp_path / "missing.json"))
    other = save_pruning(Pruning(["Nothing:here.-"], {}, {}), tmp_path / "other.json")
    with pytest.raises(Exception, match="none of the 1 metrics of the pruned space"):
        _stream(LiveDetector(warmup_s=12, policy=POLICIES["default"].with_(prune=other)), run.frame)


def _ofo_run(name: str, seed: int, ofo_at: range | None = None, n: int = 600) -> Run:
    import datetime as dt

    rng = np.random.default_rng(seed)
    ofo = np.zeros(n)
    if ofo_at is not None:
        ofo[list(ofo_at)] = 2.0
    t0 = dt.datetime(2026, 1, 1, seed)
    frame = pl.DataFrame(
        {
            "timestamp": [t0 + dt.timedelta(milliseconds=100 * i) for i in range(n)],
            "CPU:Busy%.-.h1[%]": 50 + rng.normal(size=n),
            "Memory:Dirty.h1[kB]": 1000 + rng.normal(size=n),
            "Nstat_diff:TcpInSegs.h1[count]": rng.poisson(50, size=n).astype(float),
            "Nstat_diff:TcpExtTCPOFOQueue.h1[count]": ofo,
        }
    ).with_columns(pl.col("timestamp").cast(pl.Datetime("ms")))
    return Run(RunMeta(run_id=name, hosts=("h1",)), frame)


def test_the_sentinel_rule_holds_while_streaming_as_offline():
    """A counter 0 in every baseline sample (pruned away as constant) moves for 2 s: the live
    verdicts flag the same windows as ``detect_run``'s sentinel rule, name the counter and its
    subsystem, and the rule off (``sentinel_samples=None``) leaves the decision to the detectors."""
    from reveal_lab.pipeline import detect_run

    base = [_ofo_run("b1", 1), _ofo_run("b2", 2)]
    run = _ofo_run("r", 3, ofo_at=range(300, 320))
    det = LiveDetector(baseline=base, policy=POLICIES["default"].with_(min_agreement=2))
    assert det.silent == {"Nstat_diff:TcpExtTCPOFOQueue"}
    assert "Nstat_diff:TcpExtTCPOFOQueue" not in det.pruning.selected  # constant: pruned away
    verdicts = _stream(det, run.frame)
    fired = [v.window_id for v in verdicts if v.sentinel]
    offline = detect_run(run, baseline=base, trim=False, min_agreement=2)
    assert fired == offline.windows.filter(pl.col("sentinel"))["window_id"].to_list() == [28, 29, 30, 31]
    for v in verdicts:
        if v.sentinel:
            assert v.anomalous and "sentinel" in v.methods
            ev = v.evidence[-1]
            assert ev["metric"] == "Nstat_diff:TcpExtTCPOFOQueue.h1[count]" and ev["subsystem"] == "network"
            assert ev["evidence_of"] == "sentinel" and ev["score"] >= 5
            if v.agreement < 2:
                assert v.subsystems == "network" and len(v.evidence) == 1
            assert "[" in v.line() and "sentinel" in v.line()
    no_sentinel = POLICIES["default"].with_(min_agreement=2, sentinel_samples=None)
    off = LiveDetector(baseline=base, policy=no_sentinel)
    assert off.silent == set()
    quiet = _stream(off, run.frame)
    assert not any(v.sentinel for v in quiet)
    assert [v.anomalous for v in quiet] == [v.agreement >= 2 for v in quiet]
