"""The on-disk run cache: equal results read back, a new key for new contents or settings."""

from __future__ import annotations

import dataclasses
import warnings

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reveal_lab.config import get_preset
from reveal_lab.pipeline import detect_run
from reveal_lab.pipeline._cache import cache_stats, content_key, memoize, using_cache
from reveal_lab.synth import Anomaly, make_run
from reveal_lab.telemetry import Run


def _runs() -> list[Run]:
    out = []
    for seed in range(3):
        planted = [Anomaly("cpu", 20.0, 26.0)]
        sr = make_run(40.0, n_channels=40, seed=seed, anomalies=planted, run_id=f"r{seed}")
        out.append(Run(dataclasses.replace(sr.run.meta, workload="W"), sr.run.frame, []))
    return out


def _detect(run: Run, baseline: list[Run]) -> tuple[pl.DataFrame, pl.DataFrame]:
    det = detect_run(run, baseline=baseline, preset=get_preset("smoke"), prune=False, trim=False)
    return det.windows, det.evidence


def test_detection_read_back_equals_computed(tmp_path):
    runs = _runs()
    plain = _detect(runs[0], runs[1:])
    with using_cache(tmp_path):
        before = cache_stats()
        cold = _detect(runs[0], runs[1:])
        mid = cache_stats()
        warm = _detect(runs[0], runs[1:])
        after = cache_stats()
    assert mid["misses"] > before["misses"]
    assert after["misses"] == mid["misses"] and after["hits"] > mid["hits"]  # all read back
    assert list((tmp_path / "score").rglob("*.pkl"))
    for a, b, c in zip(plain, cold, warm, strict=True):
        assert_frame_equal(a, b)
        assert_frame_equal(a, c)


def test_baseline_features_are_shared_between_runs(tmp_path):
    runs = _runs()
    with using_cache(tmp_path):
        _detect(runs[0], runs[1:])
        before = cache_stats().get("features_hits", 0)
        _detect(runs[1], [runs[0], runs[2]])  # run 2's baseline features were computed for run 0
        assert cache_stats().get("features_hits", 0) > before


def test_changed_contents_or_settings_give_new_keys():
    f = pl.DataFrame({"a": [1.0, 2.0]})
    assert content_key(f, "x") == content_key(f.clone(), "x")
    assert content_key(f, "x") != content_key(f.with_columns(pl.col("a") * 2), "x")
    assert content_key(f, "x") != content_key(f.rename({"a": "b"}), "x")
    assert content_key(f, get_preset("smoke")) != content_key(f, get_preset("paper"))


def test_warnings_are_raised_again_when_read_back(tmp_path):
    @memoize("warns")
    def noisy(x: int) -> int:
        warnings.warn(f"odd input {x}", UserWarning, stacklevel=1)
        return x + 1

    with using_cache(tmp_path):
        for _ in range(2):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                assert noisy(3) == 4
            assert [str(w.message) for w in caught] == ["odd input 3"]


def test_off_without_a_folder(tmp_path):
    calls = []

    @memoize("off")
    def f(x: int) -> int:
        calls.append(x)
        return x

    with using_cache(None):
        f(1)
        f(1)
    assert calls == [1, 1]
    with pytest.raises(TypeError):
        content_key(object())


@pytest.mark.parametrize("value", ["0", "off", "FALSE", "no"])
def test_a_value_that_says_off_is_off_not_a_folder(tmp_path, monkeypatch, value):
    calls = []

    @memoize("off")
    def f(x: int) -> int:
        calls.append(x)
        return x

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REVEAL_LAB_CACHE", value)
    f(1)
    f(1)
    assert calls == [1, 1] and list(tmp_path.iterdir()) == []
    monkeypatch.setenv("REVEAL_LAB_CACHE", "./0")  # a folder named 0, said as a path
    f(2)
    f(2)
    assert calls == [1, 1, 2] and (tmp_path / "0").is_dir()


def _score_hits_misses() -> tuple[int, int]:
    s = cache_stats()
    return s.get("score_hits", 0), s.get("score_misses", 0)


def test_policies_that_score_alike_share_scores(tmp_path):
    """A policy that differs only after scoring (its name, min_agreement) reads the scores
    back and gives what computing them gives; a field scoring reads (the false-alarm rate,
    the clip, the outlier fence) computes afresh."""
    from reveal_lab.pipeline import get_policy

    runs = _runs()

    def detect(policy):
        det = detect_run(runs[0], baseline=runs[1:], preset=get_preset("smoke"), policy=policy,
                         prune=False, trim=False)
        return det.windows, det.evidence

    base = get_policy("default")
    alike = dataclasses.replace(base.with_(min_agreement=1), name="renamed")
    with using_cache(tmp_path):
        detect(base)
        h0, m0 = _score_hits_misses()
        shared = detect(alike)
        h1, m1 = _score_hits_misses()
        assert (h1 > h0, m1) == (True, m0)  # read back, nothing computed
        detect(base.with_(false_alarm_rate=0.05))
        detect(base.with_(z_clip=5.0))
        detect(base.with_(outlier_fence=False))
        h2, m2 = _score_hits_misses()
        assert (h2, m2 - m1) == (h1, 3)  # each changed scoring field computed afresh
    for a, b in zip(detect(alike), shared, strict=True):  # uncached
        assert_frame_equal(a, b)


def test_space_fitted_on_baseline_runs_is_shared_and_fresh_on_change(tmp_path):
    """The pruned space fitted on baseline runs: runs scored against the same baseline runs
    fit it once and read back the same space; another baseline run fits afresh."""
    from reveal_lab.pipeline._pruning import fit_pruning
    from reveal_lab.pipeline._view import fitted_space

    runs = _runs()

    def detect(run, baseline):
        return detect_run(run, baseline=baseline, preset=get_preset("smoke"), prune=True, trim=False)

    with using_cache(tmp_path):
        first = detect(runs[0], runs[1:])
        m0 = cache_stats().get("pruning_misses", 0)
        again = fitted_space(runs[1:], get_preset("smoke").prune.threshold)
        assert cache_stats().get("pruning_misses", 0) == m0  # read back
        changed = Run(runs[2].meta, runs[2].frame.with_columns(pl.col(runs[2].frame.columns[1]) * 2.0), [])
        fitted_space([runs[1], changed], get_preset("smoke").prune.threshold)
        assert cache_stats().get("pruning_misses", 0) == m0 + 1
    plain = fit_pruning(runs[1:], get_preset("smoke").prune.threshold, trim=False)
    assert (again.selected, again.params) == (plain.selected, plain.params)
    assert first.config["pruning"]["n_selected"] == len(plain.selected)


def test_baseline_silent_counters_read_back_and_fresh_on_change(tmp_path):
    """The sentinel rule's silent counters of baseline runs: read back equal to computing them;
    a baseline run whose silent counter moves gives a fresh, smaller set."""
    import datetime as dt

    from reveal_lab.pipeline._sentinel import per_interval_counts, silent_counters
    from reveal_lab.pipeline._view import baseline_silent
    from reveal_lab.telemetry import RunMeta

    t = [dt.datetime(2026, 1, 1, 0, 0, s) for s in range(4)]

    def run(i, ofo):
        f = pl.DataFrame({"timestamp": t, "Nstat_diff:TcpExtTCPOFOQueue.h1[count]": ofo,
                          "Nstat_diff:TcpInSegs.h1[count]": [5.0, 1.0, 7.0, 2.0]})
        return Run(RunMeta(run_id=f"b{i}", hosts=("h1",)), f, [])

    base = [run(0, [0.0] * 4), run(1, [0.0] * 4)]
    plain = silent_counters([per_interval_counts(b, True) for b in base])
    with using_cache(tmp_path):
        first = baseline_silent(base, True)
        m0 = cache_stats().get("silent_misses", 0)
        back = baseline_silent(base, True)
        assert cache_stats().get("silent_misses", 0) == m0
        moved = baseline_silent([base[0], run(1, [0.0, 3.0, 0.0, 0.0])], True)
        assert cache_stats().get("silent_misses", 0) == m0 + 1
    assert first == back == plain == {"Nstat_diff:TcpExtTCPOFOQueue"}
    assert moved == set()


def test_keys_of_mappings_follow_every_entry():
    """A mapping of plain entries (a baseline's {(metric, feature): column}) and one holding
    arrays: changing any one entry, or a value deep in an array, gives a new key."""
    import numpy as np

    cols = {(f"m{i}", f"f{j}"): 10 * i + j for i in range(50) for j in range(5)}
    moved = dict(cols)
    moved[("m49", "f4")] = -1
    renamed = {(k[0], k[1] + "x") if k == ("m0", "f0") else k: v for k, v in cols.items()}
    assert len({content_key(cols), content_key(moved), content_key(renamed)}) == 3
    assert content_key(cols) == content_key(dict(cols))
    big = np.zeros(5000)
    big2 = big.copy()
    big2[2500] = 1.0  # hidden in the middle of numpy's abbreviated repr
    assert content_key({"x": big}) != content_key({"x": big2})


def test_views_of_one_frame_judge_its_columns_once(tmp_path):
    """A run's views (its own, as a baseline run, in another space) read one catalogue back and
    equal the views computed without the cache; another frame is judged afresh."""
    from reveal_lab.pipeline._view import detection_view

    frame = _runs()[0].frame
    cols = [c for c in frame.columns if c != "timestamp"]
    calls = [(None, False), (None, True), (cols[:10], False)]
    plain = [detection_view.uncached(frame, sel, keep_constant=kc) for sel, kc in calls]
    with using_cache(tmp_path):
        m0 = cache_stats().get("catalogue_misses", 0)
        cached = [detection_view(frame, sel, keep_constant=kc) for sel, kc in calls]
        assert cache_stats().get("catalogue_misses", 0) - m0 == 1
        detection_view(_runs()[1].frame)
        assert cache_stats().get("catalogue_misses", 0) - m0 == 2
    for (fa, na), (fb, nb) in zip(plain, cached, strict=True):
        assert_frame_equal(fa, fb)
        assert na == nb


def test_outlier_fence_is_part_of_the_score_key():
    """The paper policy with and without the outlier fence: the scoring settings and their
    cache keys differ, so a score cached under one setting is never read for the other."""
    from reveal_lab.pipeline import get_policy
    from reveal_lab.pipeline._score import ScoreSettings

    off = ScoreSettings.of(get_policy("paper").resolve(baseline_runs=0, source="lab"))
    on = ScoreSettings.of(get_policy("paper", outlier_fence=True).resolve(baseline_runs=0, source="lab"))
    assert (off.outlier_fence, on.outlier_fence) == (False, True)
    assert dataclasses.replace(off, outlier_fence=True) == on
    assert content_key(off) != content_key(on)
