"""Notebook 07's per-run piece computes only its sampled windows' features: the same bytes
as every window's features computed and the sample taken after."""

from __future__ import annotations

import numpy as np
import pytest

from reveal_lab import studies
from reveal_lab.config import WindowConfig
from reveal_lab.features import pair_keys, window_features


@pytest.mark.parametrize("per_run", [7, 80, 10_000])
def test_window_feature_piece_equals_every_window_then_the_sample(per_run):
    window = WindowConfig()
    runs = studies.load_study_runs(max_runs_per_workload=1, max_runs=2, max_seconds=60.0)
    for run in runs:
        piece = studies.window_feature_piece(run, window, per_run)
        for (cols, meta), sub in zip(piece, run.split_hosts().values(), strict=True):
            wf = window_features(sub.frame, window)
            sel = np.arange(wf.n_windows)
            if wf.n_windows > per_run:
                sel = np.linspace(0, wf.n_windows - 1, per_run).astype(int)
            assert meta["window_id"].to_list() == wf.windows["window_id"].to_numpy()[sel].tolist()
            assert list(cols) == pair_keys(wf.pairs)
            for j, key in enumerate(cols):
                assert cols[key].tobytes() == wf.X[sel, j].tobytes(), key
