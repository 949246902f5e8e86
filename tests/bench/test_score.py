"""The separate scorer on hand-made output folders: the file contract and known answers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from reveal_lab.bench._score import read_attribution, read_scores, score_folder, score_server
from reveal_lab.telemetry import TelemetryError


def _data(tmp_path: Path) -> Path:
    """A 4-metric server: 20 test rows, anomalies at rows 3-5 (metrics 2, 4) and 12-13 (metric 1)."""
    d = tmp_path / "data"
    d.mkdir()
    rng = np.random.default_rng(0)
    for part, n in (("train", 30), ("test", 20)):
        with gzip.open(d / f"s-1_{part}.csv.gz", "wt") as fh:
            for row in rng.random((n, 4)):
                fh.write(",".join(f"{v:.4f}" for v in row) + "\n")
    y = np.zeros(20, dtype=int)
    y[3:6] = 1
    y[12:14] = 1
    with gzip.open(d / "s-1_test_label.csv.gz", "wt") as fh:
        fh.write("\n".join(str(v) for v in y) + "\n")
    (d / "s-1_interpretation_label.txt").write_text("3-5:2,4\n12-13:1\n")
    return d


def _out(tmp_path: Path, score, dec, attr, header="score,label") -> Path:
    o = tmp_path / "out"
    o.mkdir(exist_ok=True)
    lines = [header] + [f"{s},{d}" for s, d in zip(score, dec, strict=True)]
    (o / "s-1.scores.csv").write_text("\n".join(lines) + "\n")
    (o / "s-1.attribution.jsonl").write_text("".join(json.dumps(a) + "\n" for a in attr))
    return o


def test_known_answers(tmp_path: Path):
    d = _data(tmp_path)
    score = np.zeros(20)
    score[[4, 5, 13]] = [3.0, 2.0, 1.5]
    score[8] = 1.0  # a false positive below the anomalies
    dec = (score >= 1.5).astype(int)  # rows 4-5 and 13
    attr = [
        {"start": 4, "end": 6, "ranking": [4, 1, 2, 3]},  # L={2,4}: top 2 holds 4, top 3 holds 4, 2
        {"start": 13, "end": 14, "ranking": [3, 1, 2, 4]},
    ]  # metric 1 second; top floor(1.5)=1 -> miss
    r = score_server(_out(tmp_path, score, dec, attr), d, "s-1")
    # point-wise: best threshold 1.5 -> TP 3, FP 0, FN 2 -> F1 = 6/8
    assert r["best_f1"] == pytest.approx(0.75)
    # point-adjusted: both runs fully counted at 1.5 -> F1 = 1
    assert r["best_f1_pa"] == pytest.approx(1.0)
    assert r["decision_f1"] == pytest.approx(0.75)
    assert r["n_detected_segments"] == 2 and r["detected_segment_share"] == 1.0
    assert r["hit@100"] == pytest.approx((0.5 + 0.0) / 2)
    assert r["hit@150"] == pytest.approx((1.0 + 0.0) / 2)  # |L|=2 -> top 3 holds 4 and 2; |L|=1 -> top 1
    assert r["n_metrics"] == 4
    # InterFusion's weighting by true-positive rows: 2 rows (hit 1.0) and 1 row (hit 0.0)
    assert r["hit_tp_weighted@150"] == pytest.approx(2 / 3)
    # random level: k/D per segment: (2/4 + 1/4)/2 at 100 %, (3/4 + 1/4)/2 at 150 %
    assert r["random_hit@100"] == pytest.approx(0.375)
    assert r["random_hit@150"] == pytest.approx(0.5)
    agg = score_folder(tmp_path / "out", d)["mean"]["s"]
    assert agg["hit@150"] == pytest.approx(0.5)


def test_undetected_segments_are_not_scored_and_end_row_outside_labels_does_not_count(tmp_path: Path):
    d = _data(tmp_path)
    score = np.zeros(20)
    score[6] = 5.0  # row 6: just after the 3-5 segment (an end-exclusive reading would include it)
    dec = (score > 1).astype(int)
    r = score_server(_out(tmp_path, score, dec, [{"start": 6, "end": 7, "ranking": [2, 4, 1, 3]}]), d, "s-1")
    assert r["n_detected_segments"] == 0
    assert np.isnan(r["hit@150"])


def test_contract_violations_are_clear_errors(tmp_path: Path):
    d = _data(tmp_path)
    score, dec = np.zeros(20), np.zeros(20, dtype=int)
    dec[4] = 1
    good = [{"start": 4, "end": 5, "ranking": [1, 2, 3, 4]}]
    with pytest.raises(TelemetryError, match="header"):
        read_scores(_out(tmp_path, score, dec, good, header="anomaly_score,label") / "s-1.scores.csv")
    # a flagged run without its attribution line
    with pytest.raises(TelemetryError, match="runs without a segment"):
        score_server(_out(tmp_path, score, dec, []), d, "s-1")
    # extra keys, 0-based metric numbers, duplicated metrics
    for bad, what in (
        ({"start": 4, "end": 5, "ranking": [1], "x": 1}, "keys"),
        ({"start": 4, "end": 5, "ranking": [0, 1]}, "1.."),
        ({"start": 4, "end": 5, "ranking": [1, 1]}, "distinct"),
        ({"start": 5, "end": 4, "ranking": [1]}, "start < end"),
    ):
        o = _out(tmp_path, score, dec, [bad])
        with pytest.raises(TelemetryError, match=what):
            read_attribution(o / "s-1.attribution.jsonl", n_metrics=4)
    # too few rows
    o = _out(tmp_path, score[:10], dec[:10], [])
    with pytest.raises(TelemetryError, match="10 score rows for 20"):
        score_server(o, d, "s-1")
    # non-finite score
    (o / "s-1.scores.csv").write_text("score,label\nnan,0\n")
    with pytest.raises(TelemetryError, match="not finite"):
        read_scores(o / "s-1.scores.csv")
