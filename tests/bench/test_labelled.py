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
