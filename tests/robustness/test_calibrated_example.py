"""The README's example run with three fault-free baseline runs of its workload: the calibrated
thresholds either find its three labelled CPU-contention episodes or the report says why they
cannot (a few outlying windows of a fault-free baseline run set a threshold above the whole run)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from reveal_lab.io import load_run
from reveal_lab.pipeline import detect_run

from .conftest import ROOT

STEM = "infer_MLPforImageClassification_synthetic_2026-11-26T08-{}_labA"
FOLDER = ROOT / "data/lab/infer_separated"
RUN, BASELINES = "12-33", ("06-55", "25-53", "44-38")


def _load(t: str):  # noqa: ANN202
    return load_run(FOLDER / f"{STEM.format(t)}.parquet")


@pytest.mark.skipif(not (FOLDER / f"{STEM.format(RUN)}.parquet").exists(), reason="data/lab is not here")
def test_the_readme_example_with_three_baselines_finds_its_episodes_or_says_why_not():
    run_name = STEM.format(RUN)[: -len("_labA")]
    labels = pl.read_csv(ROOT / "data/lab/labels.csv").filter(pl.col("run") == run_name)
    episodes = list(zip(labels["start"].str.to_datetime(), labels["end"].str.to_datetime(), strict=True))
    assert len(episodes) == 3
    det = detect_run(_load(RUN), [_load(t) for t in BASELINES])
    flagged = det.windows.filter(det.decision)
    spans = list(zip(flagged["start"], flagged["end"], strict=True))
    found = [any(not (b <= s or a >= e) for a, b in spans) for s, e in episodes]
    if all(found):
        return
    why = [w for w in det.warnings if "no window of this run reaches a calibrated threshold" in w]
    assert why, f"episodes found {found}, and the report does not say why not: {det.warnings}"
    # what the note says holds: every detector's threshold is above every window of the run
    for host, thresholds in det.thresholds.items():
        for m, thr in thresholds.items():
            top = float(np.nanmax(det.windows[f"score_{m}"].to_numpy()))
            assert top < thr, (host, m, top, thr)
            if f"{m} {thr:.3g}" in why[0]:
                assert f"this run's highest {top:.3g}" in why[0], why[0]
    assert any(STEM.format(t) in why[0] for t in BASELINES), why[0]
    # with in-sample thresholds the episodes are flagged: the note is about the calibration only
    plain = detect_run(_load(RUN), [_load(t) for t in BASELINES], thresholds="baseline")
    assert not [w for w in plain.warnings if "calibrated threshold" in w]
    assert plain.windows.filter(plain.decision).height > 0
