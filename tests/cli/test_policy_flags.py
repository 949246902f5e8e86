"""The detection policy from the command line (cli._policy): one flag per field, flags not
given leave the named policy's values, the parser's copies of the pipeline's choices agree."""

from __future__ import annotations

import dataclasses

import pytest

from reveal_lab.cli import build_parser
from reveal_lab.cli._policy import KNOBS, POLICY_NAMES, THRESHOLD_CHOICES, policy_from_args
from reveal_lab.pipeline import POLICIES, THRESHOLD_MODES, TRIM_RULES, DetectionPolicy


def _detect(*flags: str):
    return build_parser().parse_args(["detect", "run.parquet", *flags])


def test_parser_choices_are_the_pipelines():
    assert set(POLICY_NAMES) == set(POLICIES)
    assert THRESHOLD_CHOICES == THRESHOLD_MODES
    fields = {f.name for f in dataclasses.fields(DetectionPolicy)}
    assert {k.field for k in KNOBS} <= fields
    trim = next(k for k in KNOBS if k.field == "trim")
    assert tuple(trim.options["choices"]) == TRIM_RULES
    from reveal_lab.cli._policy import PRUNE_METHOD_CHOICES, ZSCORE_CHOICES
    from reveal_lab.detectors import ZScoreDetector
    from reveal_lab.pipeline._policy import PRUNE_METHODS

    assert PRUNE_METHOD_CHOICES == PRUNE_METHODS and ZSCORE_CHOICES == ZScoreDetector.FORMS
    p = policy_from_args(
        _detect("--policy", "paper", "--zscore", "robust", "--quantile", "0.95", "--prune-method", "complete")
    )
    assert (p.name, p.zscore, p.quantile) == ("paper", "robust", 0.95)
    assert (p.prune_method, p.thresholds) == ("complete", "workload")


def test_no_flag_is_the_named_policy():
    assert policy_from_args(_detect()) == POLICIES["default"]
    assert policy_from_args(_detect("--policy", "paper")) == POLICIES["paper"]


@pytest.mark.parametrize(
    ("flags", "changes"),
    [
        (["--min-run", "3"], {"min_run": 3}),
        (["--min-agreement", "2"], {"min_agreement": 2}),
        (["--thresholds", "self"], {"thresholds": "self"}),
        (["--calibration", "median"], {"calibration": "median"}),
        (["--false-alarm-rate", "0.05"], {"false_alarm_rate": 0.05}),
        (["--trim", "none"], {"trim": "none"}),
        (["--no-prune"], {"prune": False}),
        (["--pruning", "p.json"], {"prune": "p.json"}),
        (["--z-clip", "none"], {"z_clip": None}),
        (["--z-clip", "4"], {"z_clip": 4.0}),
        (["--outlier-fence"], {"outlier_fence": True}),
        (["--no-outlier-fence"], {"outlier_fence": False}),
        (["--sentinel-samples", "none"], {"sentinel_samples": None, "lone_sentinel": False}),
        (["--sentinel-samples", "8"], {"sentinel_samples": 8}),
        (["--force"], {"force_baseline": True}),
    ],
)
def test_each_flag_sets_its_field(flags, changes):
    for name in POLICY_NAMES:
        got = policy_from_args(_detect("--policy", name, *flags))
        assert got == POLICIES[name].with_(**changes)


def test_a_bad_value_names_the_flag(capsys):
    with pytest.raises(SystemExit):
        _detect("--min-run", "0")
    assert "--min-run" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _detect("--policy", "ours")
    assert "--policy" in capsys.readouterr().err


def test_watch_takes_the_policy_flags_it_uses():
    args = build_parser().parse_args(["watch", "dir", "--min-agreement", "2", "--no-prune"])
    assert policy_from_args(args) == POLICIES["default"].with_(min_agreement=2, prune=False)
    args = build_parser().parse_args(["watch", "dir", "--policy", "paper", "--outlier-fence"])
    assert policy_from_args(args) == POLICIES["paper"].with_(outlier_fence=True)
    with pytest.raises(SystemExit):  # one metric space: --no-prune or --pruning FILE
        build_parser().parse_args(["watch", "dir", "--no-prune", "--pruning", "p.json"])


def test_scan_takes_the_outlier_fence():
    args = build_parser().parse_args(["scan", "data", "--no-outlier-fence"])
    assert policy_from_args(args).outlier_fence is False
    args = build_parser().parse_args(["scan", "data", "--policy", "paper", "--outlier-fence"])
    assert policy_from_args(args).outlier_fence is True
