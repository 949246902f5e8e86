"""The bench's own choices, on seeded synthetic servers: row alignment of window scores,
attribution of a planted anomaly, determinism."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reveal_lab.bench import InterpretationSegment, LabelledServer
from reveal_lab.bench._labelled import LabelledConfig, bench_server
from reveal_lab.bench._score import read_attribution, read_scores

CFG = LabelledConfig(window_rows=10, iforest_estimators=25)


def _server(k: int = 300, metric: int = 4, shift: float = 6.0) -> LabelledServer:
    rng = np.random.default_rng(11)
    train = rng.normal(0.5, 0.05, size=(1200, 6))
    test = rng.normal(0.5, 0.05, size=(600, 6))
    test[k : k + 5, metric - 1] += shift * 0.05  # a 5-row level shift of one metric (1-based `metric`)
    labels = np.zeros(600, dtype=np.int8)
    labels[k : k + 5] = 1
    return LabelledServer("synth-1", train, test, labels, (InterpretationSegment(k, k + 4, (metric,), 1),))


def test_a_row_gets_the_window_ending_at_it(tmp_path: Path):
    k, W = 300, CFG.window_rows
    bench_server(_server(k), tmp_path, CFG)
    for det in ("zscore", "mahalanobis"):
        score, _ = read_scores(tmp_path / "detectors" / det / "synth-1.scores.csv")
        assert score.size == 600
        # windows ending before the shift do not see it; those ending at k .. k+4+W-1 do
        assert score[k - 1] < score[k : k + 5].min()
        assert k <= int(np.argmax(score)) <= k + 4 + W - 1
        assert score[k + 4 + W :].max() < score[k + 4 : k + W].max()


def test_the_planted_metric_is_ranked_first_and_runs_are_deterministic(tmp_path: Path):
    bench_server(_server(metric=4), tmp_path / "a", CFG)
    bench_server(_server(metric=4), tmp_path / "b", CFG)
    attr = read_attribution(tmp_path / "a" / "synth-1.attribution.jsonl", n_metrics=6)
    hit = [a for a in attr if a["start"] <= 304 and a["end"] > 300]
    assert hit, "the planted anomaly was not flagged"
    assert hit[0]["ranking"][0] == 4
    assert (tmp_path / "a" / "synth-1.scores.csv").read_bytes() == (
        tmp_path / "b" / "synth-1.scores.csv"
    ).read_bytes()


def test_too_short_training_is_a_clear_error(tmp_path: Path):
    s = _server()
    short = LabelledServer(s.name, s.train[:5], s.test, s.labels, s.segments)
    with pytest.raises(ValueError, match="training rows"):
        bench_server(short, tmp_path, CFG)


def test_robust_scale_floors_constant_metrics_and_falls_back_to_std():
    from reveal_lab.bench._labelled import robust_scale

    rng = np.random.default_rng(3)
    train = np.column_stack(
        [
            rng.normal(0.5, 0.1, 2000),  # ordinary: MAD-based scale ~0.1
            np.full(2000, 0.2),  # constant in training: the floor
            np.r_[np.zeros(1900), np.ones(100)],  # mostly one value: MAD 0, std instead
        ]
    )
    med, scale = robust_scale(train, 0.01)
    assert med[1] == pytest.approx(0.2)
    assert scale[0] == pytest.approx(0.1, rel=0.1)
    assert scale[1] == 0.01
    assert scale[2] == pytest.approx(train[:, 2].std())
    with pytest.raises(ValueError, match="deviation_floor"):
        robust_scale(train, 0.0)


def test_deviation_ranks_by_deviation_in_training_units_not_raw_size():
    from reveal_lab.bench._labelled import deviation_scores, robust_scale

    rng = np.random.default_rng(5)
    train = np.column_stack([rng.normal(0.5, 0.2, 3000), rng.normal(0.5, 0.01, 3000), np.full(3000, 0.3)])
    med, scale = robust_scale(train, 0.01)
    rows = np.tile(med, (4, 1))
    rows[:, 0] += 0.3  # large in raw units, 1.5 training scales
    rows[2, 1] += 0.1  # small in raw units, one row only, 10 training scales
    rows[:, 2] += 0.005  # constant metric moving by half the floor
    dev = deviation_scores(rows, med, scale)
    assert list(np.argsort(-dev)) == [1, 0, 2]
    assert dev[1] == pytest.approx(0.1 / scale[1])
    assert dev[2] == pytest.approx(0.5)
    assert deviation_scores(rows[:0], med, scale).tolist() == [0.0, 0.0, 0.0]


def _tight_and_noisy_server() -> LabelledServer:
    # a tight metric (2) and a noisy one (5) shift together by the same raw amount: in
    # training units the tight one moved far more
    rng = np.random.default_rng(7)
    train = rng.normal(0.5, 0.02, size=(1200, 6))
    train[:, 4] = rng.normal(0.5, 0.2, 1200)
    test = rng.normal(0.5, 0.02, size=(600, 6))
    test[:, 4] = rng.normal(0.5, 0.2, 600)
    test[300:306, 1] += 0.3
    test[300:306, 4] += 0.3
    labels = np.zeros(600, dtype=np.int8)
    labels[300:306] = 1
    return LabelledServer("synth-2", train, test, labels, (InterpretationSegment(300, 305, (2,), 1),))


METHODS = ("combined", "zscore", "mahalanobis", "iforest", "pcarecon")


def _files(root: Path, name: str) -> dict[str, Path]:
    return {
        m: root / (f"{name}.attribution.jsonl" if m == "combined" else f"detectors/{m}/{name}.attribution.jsonl")
        for m in METHODS
    }


def test_every_method_ranks_by_the_rule(tmp_path: Path):
    from dataclasses import replace

    from reveal_lab.bench._labelled import deviation_scores, robust_scale

    srv = _tight_and_noisy_server()
    for rule in ("window_z", "deviation"):
        bench_server(srv, tmp_path / rule, replace(CFG, attribution=rule))
        for m, f in _files(tmp_path / rule, "synth-2").items():
            attr = read_attribution(f, n_metrics=6)
            hit = [a for a in attr if a["start"] <= 305 and a["end"] > 300]
            assert hit and hit[0]["ranking"][0] == 2, (rule, m)
            if rule == "deviation":
                a, b = hit[0]["start"], hit[0]["end"]
                med, scale = robust_scale(srv.train, CFG.deviation_floor)
                dev = deviation_scores(srv.test[a:b], med, scale)
                assert hit[0]["ranking"][:2] == [int(i) + 1 for i in np.argsort(-dev)[:2]]
    # the detectors' own contributions stay available as a rule ("windows")
    bench_server(srv, tmp_path / "win", replace(CFG, attribution="windows"))
    assert (tmp_path / "win" / "detectors" / "pcarecon" / "synth-2.attribution.jsonl").stat().st_size > 0


def test_window_z_is_the_pipelines_metric_deviation(tmp_path: Path):
    """The bench's default ranking is reveal_lab.attribution.metric_deviation of the Z-score
    detector's |z|, the rule reveal-lab detect's evidence uses."""
    from reveal_lab.attribution import metric_deviation

    srv = _tight_and_noisy_server()
    absz = np.abs(np.random.default_rng(0).normal(size=(3, 10)))
    pm = np.repeat(np.arange(2), 5)
    m = metric_deviation(absz, pm, 2, cap=1e12)  # far from the cap: the largest |z|
    np.testing.assert_allclose(m, np.column_stack([absz[:, :5].max(1), absz[:, 5:].max(1)]))
    bench_server(srv, tmp_path, CFG)
    assert CFG.attribution == "window_z"
    attr = read_attribution(tmp_path / "synth-2.attribution.jsonl", n_metrics=6)
    assert attr and all(sorted(a["ranking"]) == list(range(1, 7)) for a in attr)


def test_pot_thresholds_flag_less_noise_than_in_sample_quantiles(tmp_path: Path):
    from dataclasses import replace

    srv = _server(metric=4, shift=10.0)
    bench_server(srv, tmp_path / "pot", CFG)
    bench_server(srv, tmp_path / "q", replace(CFG, threshold="quantile"))
    for root in ("pot", "q"):
        _, dec = read_scores(tmp_path / root / "synth-1.scores.csv")
        assert dec[300:305].any(), root  # the planted shift is found either way
    _, pot = read_scores(tmp_path / "pot" / "synth-1.scores.csv")
    _, q = read_scores(tmp_path / "q" / "synth-1.scores.csv")
    noise = np.r_[0:290, 330:600]
    assert pot[noise].mean() <= q[noise].mean()
    assert pot[noise].mean() < 0.01


def test_too_few_windows_for_calibration_is_a_clear_error(tmp_path: Path):
    from dataclasses import replace

    s = _server()
    short = LabelledServer(s.name, s.train[:40], s.test, s.labels, s.segments)
    with pytest.raises(ValueError, match="calibration"):
        bench_server(short, tmp_path, replace(CFG, calibration=0.2))


def test_unknown_attribution_rule_is_refused(tmp_path: Path):
    from dataclasses import replace

    from reveal_lab.bench._labelled import run_labelled

    with pytest.raises(ValueError, match="attribution must be"):
        run_labelled(tmp_path, tmp_path / "out", config=replace(CFG, attribution="nope"))
    with pytest.raises(ValueError, match="threshold must be"):
        run_labelled(tmp_path, tmp_path / "out", config=replace(CFG, threshold="nope"))
    with pytest.raises(ValueError, match="calibration must be"):
        run_labelled(tmp_path, tmp_path / "out", config=replace(CFG, calibration=1.0))
