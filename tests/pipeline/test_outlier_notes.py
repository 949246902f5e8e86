"""The report's note on the outlier fence speaks only of thresholds the fence set: a threshold
replaced afterwards (calibrated or robust) was not capped, whatever the fit did."""

from __future__ import annotations

import numpy as np

from reveal_lab.detectors import ZScoreDetector
from reveal_lab.pipeline._baseline_check import outlier_notes


def _fenced() -> ZScoreDetector:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    X[:6] += 1e6  # six extreme windows: beyond the fence, at most 10 % of the fit
    return ZScoreDetector().fit(X)


def test_a_capped_threshold_is_noted():
    d = _fenced()
    assert d.n_beyond_fence_ == 6
    notes = outlier_notes({"zscore": d}, where="run h")
    assert len(notes) == 1 and "capped" in notes[0] and "zscore" in notes[0]


def test_a_replaced_threshold_is_not_said_to_be_capped():
    d = _fenced()
    assert outlier_notes({"zscore": d}, where="run h", replaced={"zscore"}) == []
    assert len(outlier_notes({"zscore": d, "other": _fenced()}, where="run h", replaced={"zscore"})) == 1
