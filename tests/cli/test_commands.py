"""Every listed command is in the CLI, and a listed command whose module is missing is an
error at start-up, not a silently shorter ``reveal-lab --help``."""

from __future__ import annotations

import pytest

import reveal_lab.cli as cli
import reveal_lab.cli._dataset as dataset_cli
from reveal_lab.config import PRESETS, get_preset


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


def test_presets_name_settings_and_policies_name_decisions():
    assert get_preset("paper") is PRESETS["paper"] and get_preset("smoke") != get_preset("paper")
    with pytest.raises(ValueError, match=r"unknown preset 'full'; expected one of \['paper', 'smoke'\]"):
        get_preset("full")



def _option(command: str, dest: str):  # noqa: ANN202 - an argparse action
    sub = next(a for a in cli.build_parser()._actions if a.dest == "command")
    (opt,) = [a for a in sub.choices[command]._actions if a.dest == dest]
    return opt


def test_calibration_choices_are_the_pipelines_rules():
    """``detect`` and ``evaluate`` offer exactly :data:`reveal_lab.pipeline.CALIBRATION_RULES`
    (the CLI writes them out so that building the parser imports no pipeline)."""
    from reveal_lab.pipeline import CALIBRATION_RULES

    for command in ("detect", "evaluate"):
        assert tuple(_option(command, "calibration").choices) == CALIBRATION_RULES, command


def test_threshold_choices_are_the_pipelines_modes():
    """``detect --thresholds`` offers exactly :data:`reveal_lab.pipeline.THRESHOLD_MODES`."""
    from reveal_lab.pipeline import THRESHOLD_MODES

    assert tuple(_option("detect", "thresholds").choices) == THRESHOLD_MODES


def test_decision_flags_have_no_default_of_their_own():
    """``--z-clip`` and ``--sentinel-samples`` leave the policy's value when not given (the
    help's defaults are the policy's: so the two cannot drift) and accept ``none``."""
    import argparse

    from reveal_lab.cli._policy import SENTINEL_DEFAULT, Z_CLIP_DEFAULT
    from reveal_lab.pipeline import DetectionPolicy

    assert (Z_CLIP_DEFAULT, SENTINEL_DEFAULT) == (DetectionPolicy.z_clip, DetectionPolicy.sentinel_samples)
    for command in ("detect", "evaluate"):
        opt = _option(command, "z_clip")
        assert opt.default is argparse.SUPPRESS, command
        assert opt.type("none") is None and opt.type("2.5") == 2.5, command
        assert _option(command, "sentinel_samples").type("none") is None, command
