"""The paper's method around the detectors: the trimming rule, the pruned space reaching
detection (fitted, saved, reused), and thresholds that do not flag a fixed share."""

from __future__ import annotations

import datetime as dt
import json
import dataclasses
from dataclasses import replace

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reveal_lab.config import data_dir, get_preset
from reveal_lab.io import load_run
from reveal_lab.pipeline import (
    TrimRule,
    detect_run,
    fit_pruning,
    load_pruning,
    recorded_span,
    resolve_trim,
    robust_threshold,
    past_a_spike,
    save_pruning,
    spike_windows,
    sustained,
    trim_arguments,
    trim_run,
)
from reveal_lab.synth import make_run
from reveal_lab.telemetry import Run, RunMeta, parse_metric_name

FAST = get_preset("paper", detect=get_preset("smoke").detect)
LAB = data_dir()


def _util_run(idle_s: float = 10.0, busy_s: float = 30.0, tail_s: float = 8.0) -> Run:
    """CPU busy 5 % while idle, 90 % while the workload runs, 5 % after: 100 ms samples."""
    n0, n1, n2 = int(idle_s * 10), int(busy_s * 10), int(tail_s * 10)
    rng = np.random.default_rng(0)
    busy = np.r_[np.full(n0, 5.0), np.full(n1, 90.0), np.full(n2, 5.0)] + rng.normal(0, 1, n0 + n1 + n2)
    t0 = dt.datetime(2025, 1, 1)
    ts = [t0 + dt.timedelta(milliseconds=100 * i) for i in range(busy.size)]
    frame = pl.DataFrame(
        {"timestamp": ts, "CPU:Busy%.-.h[%]": busy, "Memory:Dirty.h[kB]": rng.normal(size=busy.size)}
    ).with_columns(pl.col("timestamp").cast(pl.Datetime("ms")))
    return Run(RunMeta(run_id="util", hosts=("h",)), frame, [])


def _lab_file(fault: str, model: str | None = None, phase: str | None = None) -> tuple[str, dict]:
    meta = pl.read_csv(LAB / "meta_lab.csv", infer_schema_length=0)
    meta = meta.filter(pl.col("fault").str.starts_with(fault) & (pl.col("host") == "labA"))
    if model is not None:
        meta = meta.filter((pl.col("model") == model) & (pl.col("phase") == phase))
    row = meta.row(0, named=True)
    return str(LAB / row["source_file"].removeprefix("./")), row


def _fault_coverage(det, run: str) -> tuple[float, pl.Series]:  # noqa: ANN001
    """Share of the run's fault-episode windows anomalous (the decision: any detector, or
    the sentinel rule), and the top subsystems of those."""
    labels = pl.read_csv(LAB / "labels.csv", try_parse_dates=True).filter(
        (pl.col("run") == run) & (pl.col("host") == "labA")
    )
    inside = pl.lit(False)
    for lab in labels.iter_rows(named=True):
        inside = inside | ((pl.col("end") > lab["start"]) & (pl.col("start") < lab["end"]))
    w = det.windows.with_columns(inside=inside, flag=pl.col("anomalous"))
    return w.filter("inside")["flag"].mean(), w.filter(pl.col("flag") & pl.col("inside"))["top_subsystem"]


# ----------------------------------------------------------------------------- trimming
def test_active_span_from_utilisation_with_a_margin():
    run = _util_run()
    kept, trim = trim_run(run, mode="active")
    assert trim.how.startswith("active span") and trim.mode == "active"
    # busy from 10 s to 40 s; the 1 s smoothing moves the edges by at most half a second
    assert trim.cut_start_s == pytest.approx(10.0 + 3.0, abs=0.6)
    assert trim.cut_end_s == pytest.approx(8.0 + 3.0, abs=0.6)
    assert kept.frame["CPU:Busy%.-.h[%]"].min() > 50  # no idle sample left
    # a configurable margin
    _, t0 = trim_run(run, TrimRule(margin_s=0.0), mode="active")
    assert t0.cut_start_s == pytest.approx(10.0, abs=0.6)


def test_no_idle_phase_keeps_the_run_less_the_margin_and_short_runs_stay_whole():
    run = _util_run(idle_s=0.0, tail_s=0.0)
    kept, trim = trim_run(run, mode="active")
    assert "no idle phase" in trim.how
    assert trim.cut_start_s == pytest.approx(3.0, abs=0.15) and trim.cut_end_s == pytest.approx(3.0, abs=0.15)
    short = _util_run(idle_s=1.0, busy_s=8.0, tail_s=1.0)
    kept, trim = trim_run(short, mode="active")
    assert kept.frame.height == short.frame.height and trim.how.startswith("not trimmed")


def test_a_run_without_a_recorded_span_is_scored_whole_by_default_and_says_why():
    """Intermittent busy phases (a host recording): ``auto`` leaves nothing out, ``active``
    keeps one phase and says what it cut; ``span`` without a recorded span keeps it whole."""
    run = _util_run()
    kept, trim = trim_run(run)
    assert (trim.mode, trim.cut_start_s, trim.cut_end_s) == ("none", 0.0, 0.0)
    assert kept.frame.height == run.frame.height
    assert trim.describe().startswith("Scored the whole") and "scored as it is" in trim.describe()
    host = Run(dataclasses.replace(run.meta, platform="collector"), run.frame)
    assert "no workload span" in trim_run(host)[1].how
    _, span = trim_run(run, mode="span")
    assert span.cut_start_s == 0.0 and "no recorded workload span" in span.how
    _, act = trim_run(run, mode="active")
    d = act.to_dict()
    assert d["mode"] == "active" and "left out" in d["left_out"] and "trim=active" in d["left_out"]
    assert d["recording_start"] == str(run.frame["timestamp"][0])
    with pytest.raises(ValueError, match="trim must be one of"):
        trim_run(run, mode="busy")


def test_resolve_trim_by_source():
    assert resolve_trim("auto", "lab")[0] == "span"
    assert resolve_trim("auto", "public")[0] == "none" and resolve_trim("auto", "host")[0] == "none"
    assert resolve_trim("active", "host") == ("active", "asked: trim=active")
    assert trim_arguments(True) == ("auto", None) and trim_arguments(False) == ("none", None)
    with pytest.raises(ValueError, match="source must be one of"):
        resolve_trim("auto", "cluster")


def test_lab_runs_are_trimmed_to_their_recorded_workload_span():
    path, row = _lab_file("none")
    run = load_run(path)
    a = dt.datetime.fromisoformat(row["workload_start"])
    b = dt.datetime.fromisoformat(row["workload_end"])
    assert recorded_span(run) == (a, b)
    kept, trim = trim_run(run)
    assert trim.how == "recorded workload span" and trim.mode == "span"
    assert trim.describe().startswith("Scored") and "left out" in trim.describe()
    ts = kept.frame["timestamp"]
    assert ts.min() >= a and ts.max() <= b
    assert trim.cut_start_s > 1.0 and trim.cut_end_s > 1.0  # start-up and teardown left out


# ----------------------------------------------------------------------------- pruning
def test_pruned_space_is_fitted_saved_and_reaches_detection(tmp_path):
    base = [make_run(60, 80, seed=s, profile_seed=1).run for s in (1, 2)]
    run = make_run(60, 80, seed=3, profile_seed=1).run
    pr = fit_pruning(base)
    assert 0 < len(pr.selected) < 80 and pr.params["threshold"] == 0.5
    path = save_pruning(pr, tmp_path / "pruning.json")
    assert json.loads(path.read_text())["selected"] == pr.selected
    assert load_pruning(path).selected == pr.selected
    full = detect_run(run, baseline=base, preset=FAST, prune=False, trim=False)
    for prune in (True, pr, str(path)):  # fitted on the baseline, given, read from the file
        # any one detector: evidence rows name the metrics each detector saw
        det = detect_run(run, baseline=base, preset=FAST, prune=prune, trim=False, min_agreement=1)
        assert det.config["pruning"]["applied"] and det.config["pruning"]["n_selected"] == len(pr.selected)
        keys = {parse_metric_name(m).key() for m in det.evidence["metric"].unique()}
        # every scored metric is a selected key (the evidence names the metrics seen)
        assert keys and keys <= set(pr.selected), keys - set(pr.selected)
    assert not full.config["pruning"]["applied"]
    with pytest.raises(ValueError, match="not a pruning file"):
        load_pruning(tmp_path / "missing.json")


# ----------------------------------------------------------------------------- thresholds
def test_robust_threshold_known_answer():
    s = np.r_[np.zeros(80) + np.linspace(-1, 1, 80), np.full(20, 10.0)]
    thr = robust_threshold(s, 0.01, 3)
    med = np.median(s)
    mad = 1.4826 * np.median(np.abs(s - med))
    assert thr == pytest.approx(med + 2.7131 * mad, rel=1e-3)
    assert (s > thr).sum() == 20  # the 20 % fault is flagged whole, the calm 80 % not at all


def test_sustained_keeps_runs_longer_than_a_spike():
    assert spike_windows(3.0, 1.0) == 3  # one sample lies in 3 windows of 3 s every 1 s
    f = np.array([1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1], bool)
    assert sustained(f, 4).tolist() == [False] * 5 + [True] * 5 + [False] * 2
    assert sustained(f, 1).tolist() == f.tolist() and sustained(f, 6).sum() == 0
    assert sustained(np.ones(4, bool), 4).all() and sustained(np.zeros(0, bool), 4).size == 0


def test_robust_flags_last_longer_than_a_spike_on_synthetic_data():
    """A lone run of 24 noisy metrics with three one-sample spikes in all of them and a 12 s
    shift of 8: with ``min_run=past_a_spike`` (4, the default for a run alone) robust mode
    flags the shift and none of the spikes, and the flags it keeps are runs of 4+ windows;
    with ``min_run=1`` the spikes are flagged, and the default's summary counts them as
    dropped."""
    base = make_run(60, 40, seed=5).run
    names = [c for c in base.frame.columns if c != "timestamp"][:24]
    rng = np.random.default_rng(7)
    X = rng.normal(size=(base.frame.height, len(names)))
    for i in (100, 250, 500):
        X[i] += 12.0  # one sample each
    X[300:420, :8] += 6.0  # 12 s
    frame = base.frame.select("timestamp").with_columns(
        *[pl.Series(n, 50.0 + X[:, j]) for j, n in enumerate(names)]
    )
    run = Run(base.meta, frame, [])
    assert past_a_spike(FAST) == 4
    det = detect_run(run, preset=FAST, trim=False, prune=False, min_run=past_a_spike(FAST))
    assert det.fit_mode == "robust" and det.config["min_run_windows"] == 4
    w = det.windows.sort("start")
    t0 = frame["timestamp"][0]
    s = (w["start"] - t0).dt.total_milliseconds().to_numpy() / 1000
    e = (w["end"] - t0).dt.total_milliseconds().to_numpy() / 1000
    flag = w["agreement"].to_numpy() >= 1
    plateau = (s >= 30.0) & (e <= 42.0)
    assert flag[plateau].mean() >= 0.8, flag[plateau].mean()
    spikes = np.zeros_like(flag)
    for t in (10.0, 25.0, 50.0):
        spikes |= (s <= t) & (e > t)
    assert spikes.any() and not flag[spikes].any()
    for m in det.methods:
        lab = w[f"label_{m}"].to_numpy().astype(bool)
        assert (sustained(lab, 4) == lab).all(), m  # every kept flag is in a run of 4+
    every = detect_run(run, preset=FAST, trim=False, prune=False, min_run=1).windows.sort("start")
    assert every["agreement"].to_numpy()[spikes].any()  # min_run=1: spikes flagged
    auto = detect_run(run, preset=FAST, trim=False, prune=False)  # min_run=None: by the mode
    assert auto.config["min_run_windows"] == 2 * past_a_spike(FAST) == 8  # an episode lasts
    a = auto.windows.sort("start")["agreement"].to_numpy() >= 1
    assert a[plateau].mean() >= 0.5 and not a[spikes].any()
    assert (a <= flag).all()  # 8 in a row keeps a subset of 4 in a row
    assert detect_run(run, preset=FAST, trim=False, prune=False, min_run=4).summary["short_runs_dropped"] == int(
        ((every["agreement"] >= 1) & ~pl.Series(flag)).sum()
    ) > 0
    # the 4-window rule is for a run alone: the paper's self-fit and baseline fits count every window
    assert detect_run(run, preset=FAST, trim=False, prune=False, thresholds="self").config[
        "min_run_windows"
    ] == 1
    assert detect_run(run, [base], preset=FAST, trim=False, prune=False, force_baseline=True).config[
        "min_run_windows"
    ] == 1
    with pytest.raises(ValueError, match="min_run must be a whole number >= 1"):
        detect_run(run, preset=FAST, min_run=0)


@pytest.mark.slow
def test_a_lone_cpu_contention_run_is_flagged_over_its_fault_and_fault_free_runs_stay_calm():
    """Issue #17 item 3 on recorded runs (labA, detected alone with the defaults: no baseline,
    ``min_run=4``), over both recorded CPU-contention runs: at least one is flagged over most
    of its episode windows with CPU on top, and the fault-free repeats of that workload stay
    calm. Measured (``scripts/studies/lone_runs.py``) on v3: MLP inference 1.0 of its episode
    windows, CNN training 0.97 (CPU both); the 30 fault-free labA runs median 0.023, mean
    0.041 (``min_run=1``: 0.23 / 0.26). On v2 CNN training was found (0.78) and MLP inference
    not (0), so which run is found is not stable between recordings; that one is, is what this
    checks."""
    meta = pl.read_csv(LAB / "meta_lab.csv", infer_schema_length=0)
    runs = meta.filter(pl.col("fault").str.starts_with("cpu_contention") & (pl.col("host") == "labA"))
    assert runs.height == 2
    found = []
    for row in runs.iter_rows(named=True):
        det = detect_run(load_run(str(LAB / row["source_file"].removeprefix("./"))))  # the defaults
        assert det.fit_mode == "robust" and not det.config["pruning"]["applied"]  # alone: every metric
        assert det.config["min_run_windows"] == 8
        cov, tops = _fault_coverage(det, row["run"])
        if cov >= 0.6 and tops.value_counts(sort=True)["top_subsystem"][0] == "cpu":
            found.append((row, det, cov))
    assert found, "neither CPU-contention run flagged over 0.6 of its episode windows with CPU first"
    row, det, cov = found[0]
    path = str(LAB / row["source_file"].removeprefix("./"))
    paper, _ = _fault_coverage(detect_run(load_run(path), thresholds="self"), row["run"])
    assert paper < cov
    base = meta.filter(
        (pl.col("fault") == "none") & (pl.col("host") == "labA") & (pl.col("model") == row["model"])
        & (pl.col("phase") == row["phase"])
    )
    paths = [str(LAB / r["source_file"].removeprefix("./")) for r in base.iter_rows(named=True)]
    shares = [detect_run(load_run(p)).summary["anomalous_share"] for p in paths]
    assert len(shares) == 5
    assert float(np.median(shares)) <= 0.05, shares
    assert max(shares) < det.summary["anomalous_share"], (shares, det.summary["anomalous_share"])


@pytest.mark.slow
def test_lone_fault_free_runs_flag_less_than_a_fault_run():
    """Fault-free recorded runs, alone, every window over a threshold (``min_run=1``): robust
    thresholds do not flag a fixed share (the share differs from run to run). Measured on the
    v2 recording (quiet machine, 90 s runs): 0.375-0.425 of the windows of the first three
    fault-free labA runs (on v1: 0.10-0.37); with the Z-score by family (v3) 0.11-0.48, far from
    the 1 % budget; the default for a run alone (``min_run=8``) brings them to 0-0.05 (test
    above). The bound guards against a worse regression; it is not the goal."""
    meta = pl.read_csv(LAB / "meta_lab.csv", infer_schema_length=0)
    rows = meta.filter((pl.col("fault") == "none") & (pl.col("host") == "labA")).head(3)
    shares = []
    for r in rows.iter_rows(named=True):
        det = detect_run(load_run(str(LAB / r["source_file"].removeprefix("./"))), min_run=1)
        shares.append(det.summary["anomalous_share"])
    assert len(set(shares)) > 1  # not a fixed share
    assert max(shares) <= 0.55, shares


@pytest.mark.slow
def test_a_lone_storage_run_is_flagged_over_most_of_its_fault_and_attributed():
    """Both recorded O_DIRECT read-burst runs, detected alone (no baseline, the defaults): most
    fault windows anomalous, storage first. The detectors, fitted on the run, miss the first
    (the disk is idle in 59 % of its windows, so ``sectors_read``'s MAD is 0 and the standard
    deviation that replaces it is set by the bursts themselves, 41 % of the windows: |z| 1.7);
    the sentinel rule for a run alone finds it: the quiet ``pgpgin`` moves in every sample of
    the windows inside the bursts. Measured on v3: 0.67 (every window inside an episode; the
    others overlap its edges) and 0.89, storage first in both; the detectors alone 0 and 0.36."""
    for model, phase in (("CNN", "infer"), ("Transformer", "train")):
        path, row = _lab_file("storage_read", model, phase)
        det = detect_run(load_run(path))
        assert det.config["sentinel_rule"] == "lone" and det.summary["sentinel_windows"] > 0
        cov, tops = _fault_coverage(det, row["run"])
        assert cov >= 0.6, (model, cov)
        assert tops.value_counts(sort=True)["top_subsystem"][0] == "storage", (model, tops.value_counts())
        quiet = det.windows.filter("sentinel")["sentinel_subsystem"].unique().to_list()
        assert quiet == ["storage"], quiet
    # without the rule (sentinel_samples=None: the detectors alone) the Z-score by family finds
    # it too (the storage family's level moves in every burst window); scored as the paper's
    # mean over every feature, it is missed
    path, row = _lab_file("storage_read", "CNN", "infer")
    det = detect_run(load_run(path), sentinel_samples=None, lone_sentinel=False)
    assert det.config["sentinel_rule"] is None and "sentinel" in det.windows.columns
    assert _fault_coverage(det, row["run"])[0] >= 0.6
    det = detect_run(load_run(path), sentinel_samples=None, lone_sentinel=False, by_subsystem=False, fold_cores=False)
    assert _fault_coverage(det, row["run"])[0] < 0.6


# ----------------------------------------------------------------------------- calibrated clip
@pytest.mark.slow
def test_calibrated_thresholds_on_recorded_runs_are_bounded_by_the_clip():
    """The CNN-training runs of labA: in a fault-free run left out of the calibration, the
    within-window variance of the page cache (``Memory:Cached``, ``Inactive_file``) reaches
    robust |z| of 10⁴-10⁸ against the other runs, so unclipped calibrated thresholds sit far
    above any fault. Measured here (pruning fitted on these five runs): Z-score 79.2 and
    Mahalanobis 119,244 unclipped, 2.11 and 460 with the default policy's ``z_clip``
    (10). A run detected alone, or against one baseline run, is never clipped."""
    from dataclasses import replace

    meta = pl.read_csv(LAB / "meta_lab.csv", infer_schema_length=0).filter(
        (pl.col("host") == "labA") & (pl.col("model") == "CNN") & (pl.col("phase") == "train")
    )
    path = lambda r: str(LAB / r["source_file"].removeprefix("./"))  # noqa: E731
    fault = meta.filter(pl.col("fault").str.starts_with("cpu_contention")).row(0, named=True)
    base = [load_run(path(r)) for r in meta.filter(pl.col("fault") == "none").iter_rows(named=True)]
    assert len(base) == 5
    run = load_run(path(fault))
    # FAST: the paper's windows, fewer trees; the Z-score's and Mahalanobis' thresholds do not
    # depend on the Isolation Forest's
    clipped = detect_run(run, baseline=base, thresholds="calibrated", preset=FAST)
    assert clipped.config["z_clip"] == 10.0 and clipped.fit_mode == "calibrated"
    unbounded = detect_run(run, baseline=base, thresholds="calibrated", z_clip=None, preset=FAST)
    assert unbounded.config["z_clip"] is None
    thr, thr0 = clipped.thresholds["labA"], unbounded.thresholds["labA"]
    assert thr["zscore"] <= 10.0
    assert thr0["zscore"] > 10 * thr["zscore"], (thr0, thr)
    assert thr0["mahalanobis"] > 10 * thr["mahalanobis"], (thr0, thr)
    assert detect_run(run, preset=FAST).config["z_clip"] == 10.0  # alone: robust thresholds, |z| clipped by family
    assert detect_run(run, by_subsystem=False, preset=FAST).config["z_clip"] is None
    assert detect_run(run, baseline=base[:1], preset=FAST).config["z_clip"] is None  # one baseline run
