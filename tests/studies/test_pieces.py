"""The studies as map + reduce over runs give the tables of the studies on the list of runs
(a small subset of the bundled lab data, one run loaded at a time)."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reveal_lab import pruning, studies
from reveal_lab.config import data_dir
from reveal_lab.pipeline import fit_pruning
from reveal_lab.scale import map_runs, study_refs
from reveal_lab.telemetry import TelemetryWarning

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (data_dir() / "meta_lab.csv").exists(), reason="no bundled lab dataset"),
]

SEL = {"max_runs_per_workload": 2}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        yield


def _mapped(fn, *args, fault_free=False, max_seconds=40.0, **sel):
    refs = study_refs("", fault_free=fault_free, **{**SEL, **sel})
    res = map_runs(fn, refs, *args, max_seconds=max_seconds, fault_free=fault_free, progress=False)
    runs = studies.load_study_runs("", max_seconds=max_seconds, fault_free=fault_free, **{**SEL, **sel})
    assert res.run_ids == [r.meta.run_id for r in runs] and res.skipped.height == 0
    return res.pieces, runs


def test_overview_pieces_equal_the_tables_on_the_runs():
    pieces, runs = _mapped(studies.overview_piece, 500)
    table, samples = studies.reduce_overview(pieces)
    assert_frame_equal(table, studies.run_table(runs))
    assert_frame_equal(samples, studies.usage_samples(runs, max_samples_per_run=500))


def test_pruning_pieces_equal_pruning_on_the_frames():
    pieces, runs = _mapped(studies.pruning_piece)
    result, space = studies.reduce_pruning(pieces, 0.5)
    frames: dict[str, list] = {}
    for r in runs:
        frames.setdefault(r.meta.workload, []).append(r.frame)
    direct = pruning.prune(frames, 0.5)
    assert result.union == direct.union and result.selected == direct.selected
    assert_frame_equal(result.clusters, direct.clusters)
    for w, sp in direct.spaces.items():
        assert np.array_equal(result.spaces[w].corr, sp.corr, equal_nan=True)
        assert np.array_equal(result.spaces[w].variance, sp.variance)
    fitted = fit_pruning([r for r in runs if studies.is_fault_free(r)] or runs, 0.5)
    assert space.to_dict() == fitted.to_dict()


def test_pruning_accumulator_is_the_mean_correlation_over_runs():
    """Independent of the accumulator: the mean over runs of each pair's correlation."""
    runs = studies.load_study_runs("", max_seconds=40.0, **SEL)
    runs = [r for r in runs if r.meta.workload == runs[0].meta.workload]
    frames = [r.frame for r in runs]
    sp = pruning.metric_space(frames)
    a, b = sp.keys[0], sp.keys[-1]
    rs = []
    for f in frames:
        piece = pruning.run_correlation(f)
        if a in piece.keys and b in piece.keys:
            r = piece.corr[piece.keys.index(a), piece.keys.index(b)]
            if np.isfinite(r):
                rs.append(r)
    assert len(rs) >= 2 and sp.corr[0, -1] == pytest.approx(np.mean(rs))


def test_dtw_pieces_equal_the_study_on_the_traces():
    kw = {"by_phase": True, "max_metrics": 5}
    pieces, runs = _mapped(studies.dtw_piece, True, 64, fault_free=True, max_seconds=30.0)
    prepared = studies.reduce_dtw(pieces, max_metrics=5)
    raw = studies.collect_traces(runs, **kw)
    assert {w: sorted(m) for w, m in prepared.items()} == {w: sorted(m) for w, m in raw.items()}
    a = studies.dtw_reproducibility(prepared, length=64, pairing="auto", prepared=True)
    b = studies.dtw_reproducibility(raw, length=64, pairing="auto")
    assert a.pairs.height > 0
    assert_frame_equal(a.pairs, b.pairs)
    assert_frame_equal(a.distances, b.distances)


def test_granularity_pieces_equal_the_intervals_of_the_runs():
    grans = [(3.0, 1.0), (5.0, 2.0)]
    settings = studies.setting_policies(["paper"])
    pieces, runs = _mapped(studies.granularity_piece, grans, settings, "smoke", None,
                           max_runs_per_workload=1, max_runs=2, max_seconds=40.0)
    got = studies.reduce_granularity(pieces, settings)["paper"]
    want = studies.granularity_intervals(
        runs,
        grans,
        detect=lambda r, wc: studies.detect_windows(r, wc, "smoke", pruning=None, policy=settings["paper"]),
    )
    assert got.height > 0
    assert_frame_equal(got, want)


def test_detection_by_the_map_equals_run_detection():
    from reveal_lab.scale import detect_runs

    sel = {"max_runs_per_workload": 3, "max_runs": 6}
    refs = study_refs("", **sel)
    runs = studies.load_study_runs("", max_seconds=40.0, **sel)
    settings = studies.setting_policies(["paper", "default"])
    got, mapped = detect_runs(refs, settings, preset="smoke", max_seconds=40.0, progress=False)
    assert mapped.run_ids == [r.meta.run_id for r in runs] and mapped.skipped.height == 0
    assert {f["run_id"]: f["fault"] for f in mapped.pieces}
    modes = set()
    for p, policy in settings.items():
        w, e = studies.run_detection(runs, preset="smoke", policy=policy)
        assert_frame_equal(got[p][0], w)
        assert_frame_equal(got[p][1], e)
        modes |= set(w["fit_mode"].unique())
    assert len(modes) >= 2  # runs fitted on baselines and runs alone both covered


def test_window_feature_pieces_equal_the_table_on_the_runs():
    from reveal_lab.config import get_preset

    window = get_preset("smoke").window
    pieces, runs = _mapped(studies.window_feature_piece, window, 20, max_runs_per_workload=1)
    flagged = {(runs[0].meta.run_id, 3): True}
    X, rows = studies.reduce_window_features(pieces, flagged)
    X0, rows0 = studies.window_feature_table(runs, window, anomalous=flagged, max_windows_per_run=20)
    assert X.shape[0] == rows.height > 0 and int(rows["anomalous"].sum()) == 1
    assert np.array_equal(X, X0, equal_nan=True)
    assert_frame_equal(rows, rows0)


def test_lazy_runs_give_the_crosshost_study_of_the_runs():
    from reveal_lab.scale import lazy_runs

    facts, runs = _mapped(studies.run_facts, max_runs_per_workload=3)
    lazy = lazy_runs(study_refs("", max_runs_per_workload=3), facts, 40.0)
    assert [r.meta.run_id for r in lazy] == [r.meta.run_id for r in runs]
    assert_frame_equal(lazy[0].frame, runs[0].frame)
    want = studies.crosshost_subsystem(runs, "memory")
    assert want.height > 0
    assert_frame_equal(studies.crosshost_subsystem(lazy, "memory"), want)


def test_window_feature_fold_keeps_only_the_shared_pairs_as_pieces_come():
    def part(run, keys, n):
        m = {k: np.arange(n, dtype=float) + 10 * i + 100 * len(keys) for i, k in enumerate(keys)}
        return m, pl.DataFrame({"run_id": run, "workload": "w", "window_id": np.arange(n, dtype=np.int64)})

    pieces = [
        [part("a", ["x", "y", "z", "q"], 3)],
        [part("b", ["z", "y", "x"], 2), part("b", ["y", "x", "z", "r"], 1)],  # two hosts; q gone
        [part("c", ["y", "z", "x", "s"], 4)],
        [part("d", ["x", "z"], 2)],  # y gone: the kept blocks shrink again
    ]
    fold = studies.WindowFeatureFold()
    for p in pieces:
        fold(p)
        assert all(b.shape[1] == len(fold.common) for b in fold.blocks)
    assert fold.common == ["x", "z"]
    X, rows = fold.result({("c", 2): True})
    parts = [pt for p in pieces for pt in p]
    want = np.vstack([np.column_stack([m["x"], m["z"]]) for m, _ in parts])
    assert np.array_equal(X, want) and X.shape == (12, 2)
    assert rows["run_id"].to_list() == ["a"] * 3 + ["b"] * 3 + ["c"] * 4 + ["d"] * 2
    assert rows["anomalous"].to_list() == [False] * 8 + [True] + [False] * 3
    X2, rows2 = studies.reduce_window_features(pieces, {("c", 2): True})
    assert np.array_equal(X, X2)
    assert_frame_equal(rows, rows2)
    no_share = studies.WindowFeatureFold()
    no_share([part("a", ["x"], 2)])
    no_share([part("b", ["y"], 2)])
    with pytest.raises(ValueError, match="share no metric-feature pair"):
        no_share.result()
    with pytest.raises(ValueError, match="no runs to project"):
        studies.WindowFeatureFold().result()


def test_window_feature_fold_through_the_map_equals_the_table_on_the_runs():
    from reveal_lab.config import get_preset

    window = get_preset("smoke").window
    refs = study_refs("", **{**SEL, "max_runs_per_workload": 2})
    fold = studies.WindowFeatureFold()
    res = map_runs(studies.window_feature_piece, refs, window, 20, max_seconds=40.0, progress=False, fold=fold)
    assert res.pieces == [] and len(res.run_ids) == len(refs)
    runs = studies.load_study_runs("", max_seconds=40.0, **{**SEL, "max_runs_per_workload": 2})
    X, rows = fold.result()
    X0, rows0 = studies.window_feature_table(runs, window, max_windows_per_run=20)
    assert X.shape[0] == rows.height > 0
    assert np.array_equal(X, X0, equal_nan=True)
    assert_frame_equal(rows, rows0)


def test_granularity_runs_fit_the_paper_setting_on_the_workloads_other_runs(monkeypatch):
    """Table 2's study by the per-run map: the paper's setting is fitted on the run's workload's
    other fault-free runs (loaded beside it), the default's runs are detected alone."""
    import reveal_lab.studies._granularity as gran
    from reveal_lab.scale import granularity_runs

    seen: dict[tuple[str, str], list[str]] = {}
    real = gran.detect_windows

    def spy(run, window, preset="paper", pruning=None, policy=None, baseline=None):  # noqa: ANN001, ANN202
        seen[(run.meta.run_id, policy.name)] = [b.meta.run_id for b in baseline or []]
        return real(run, window, preset, pruning, policy, baseline)

    monkeypatch.setattr(gran, "detect_windows", spy)
    refs = study_refs("", max_runs_per_workload=3, max_runs=6)
    settings = studies.setting_policies(["paper", "default"])
    mapped = granularity_runs(refs, [(3.0, 1.0)], settings, "smoke", max_seconds=40.0, progress=False)
    assert mapped.skipped.height == 0 and len(mapped.run_ids) == 6
    ids = set(mapped.run_ids)
    for rid in ids:
        assert rid not in seen[(rid, "paper")]  # never fitted on itself
        assert set(seen[(rid, "paper")]) <= ids and seen[(rid, "default")] == []
    assert any(seen[(rid, "paper")] for rid in ids)  # the workload's others, where it has them
