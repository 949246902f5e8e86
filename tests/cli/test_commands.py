"""Every listed command is in the CLI, and a listed command whose module is missing is an
error at start-up, not a silently shorter ``reveal-lab --help``."""

from __future__ import annotations

import pytest

import reveal_lab.cli as cli
import reveal_lab.cli._dataset as dataset_cli
from reveal_lab.config import PRESET_ALIASES, PRESETS, get_preset


def _commands(parser) -> set[str]:
    sub = next(a for a in parser._actions if a.dest == "command")
    return set(sub.choices)


def test_every_listed_command_is_registered():
    assert _commands(cli.build_parser()) == set(cli.COMMAND_MODULES)


def test_a_missing_command_module_is_an_error(monkeypatch):
    monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "no_such_command"))
    with pytest.raises(ModuleNotFoundError, match="no_such_command"):
        cli.build_parser()


def test_a_missing_dataset_verb_module_is_an_error(monkeypatch):
    monkeypatch.setattr(dataset_cli, "PARTS", (*dataset_cli.PARTS, "_dataset_no_such_verb"))
    with pytest.raises(ModuleNotFoundError, match="_dataset_no_such_verb"):
        cli.build_parser()


def test_full_is_the_paper_preset_under_another_name():
    assert get_preset("full") is PRESETS["paper"]
    assert set(PRESET_ALIASES).isdisjoint(PRESETS)
    assert get_preset("smoke") != get_preset("paper")
    with pytest.raises(ValueError, match="full"):
        get_preset("nope")



def test_calibration_choices_are_the_pipelines_rules():
    """``detect`` and ``evaluate`` offer exactly :data:`reveal_lab.pipeline.CALIBRATION_RULES`
    (the CLI writes them out so that building the parser imports no pipeline)."""
    from reveal_lab.pipeline import CALIBRATION_RULES

    sub = next(a for a in cli.build_parser()._actions if a.dest == "command")
    for command in ("detect", "evaluate"):
        (opt,) = [a for a in sub.choices[command]._actions if a.dest == "calibration"]
        assert tuple(opt.choices) == CALIBRATION_RULES and opt.default == CALIBRATION_RULES[0], command


def test_threshold_choices_are_the_pipelines_modes():
    """``detect --thresholds`` offers exactly :data:`reveal_lab.pipeline.THRESHOLD_MODES`."""
    from reveal_lab.pipeline import THRESHOLD_MODES

    sub = next(a for a in cli.build_parser()._actions if a.dest == "command")
    (opt,) = [a for a in sub.choices["detect"]._actions if a.dest == "thresholds"]
    assert tuple(opt.choices) == THRESHOLD_MODES and opt.default == "auto"


def test_z_clip_flags_default_to_the_detect_config():
    """``detect --z-clip`` and ``evaluate --z-clip`` start from
    :attr:`DetectConfig.calibrated_z_clip` (so the two cannot drift) and accept ``none``."""
    from reveal_lab.config import DetectConfig

    sub = next(a for a in cli.build_parser()._actions if a.dest == "command")
    for command in ("detect", "evaluate"):
        (opt,) = [a for a in sub.choices[command]._actions if a.dest == "z_clip"]
        assert opt.default == DetectConfig().calibrated_z_clip == 10.0, command
        assert opt.type("none") is None and opt.type("2.5") == 2.5, command
