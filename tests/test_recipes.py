"""The checks behind docs/CONTRIBUTING.md's recipes, each tried on a throwaway item.

Each recipe ("add a probe", "add a detector", "add a detection knob", "add a notebook or
figure"; "add a window feature" is in ``tests/features/test_feature_list.py``) has a
``*_problems`` check that is empty for the package as it is, and names the forgotten step
when a throwaway item is added without it.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest

import reveal_lab.collect.probes as probes_pkg
import reveal_lab.detectors as detectors_pkg
import reveal_lab.plots as plots_pkg
from reveal_lab.collect import ALL_PROBES, PROBES, Probe, probe_table
from reveal_lab.detectors import BaseDetector, DetectorEnsemble
from reveal_lab.notebooks import discover_notebooks, load_manifest

# -- probes ---------------------------------------------------------------------------------

INIT = "reveal_lab/collect/probes/__init__.py"


def probe_modules() -> list[str]:
    """Every module of ``reveal_lab/collect/probes``."""
    return [f"{probes_pkg.__name__}.{m.name}" for m in pkgutil.iter_modules(probes_pkg.__path__)]


def probe_problems(modules: Iterable[str], listed: Iterable[type[Probe]]) -> list[str]:
    """A probe class in ``modules`` whose name no probe in ``listed`` (``ALL_PROBES``) has (it
    would never run; a class sharing a listed probe's name is one of its implementations,
    such as ``perf``'s), and a listed probe without a name, a known group or a description."""
    listed = tuple(listed)
    names = {c.name for c in listed}
    problems = []
    for mod in modules:
        for _, cls in inspect.getmembers(importlib.import_module(mod), inspect.isclass):
            if cls.__module__ == mod and issubclass(cls, Probe) and cls.name and cls.name not in names:
                problems.append(f"probe {cls.name!r} ({mod}) is not in ALL_PROBES ({INIT})")
    try:
        probe_table(listed)
    except ValueError as exc:
        problems.append(str(exc))
    problems += [
        f"probe {c.name!r} has no description (reveal-lab collect --list shows it)"
        for c in listed
        if not getattr(c, "description", "")
    ]
    return problems


def test_every_probe_is_listed_once():
    assert probe_problems(probe_modules(), ALL_PROBES) == []
    assert list(PROBES) == [c.name for c in ALL_PROBES]


def test_a_forgotten_probe_step_is_caught(tmp_path, monkeypatch):
    """A throwaway probe module whose class is not in ALL_PROBES, then listed: the
    forgotten step is named; a probe without a name is refused."""
    (tmp_path / "throwaway_probe_mod.py").write_text(
        "from reveal_lab.collect import Probe\n\n"
        "class Throwaway(Probe):\n"
        '    name, group = "throwaway_probe", "procfs"\n'
        '    description = "a probe that exists only in this test"\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        mods = [*probe_modules(), "throwaway_probe_mod"]
        assert probe_problems(mods, ALL_PROBES) == [
            f"probe 'throwaway_probe' (throwaway_probe_mod) is not in ALL_PROBES ({INIT})"
        ]
        throwaway = sys.modules["throwaway_probe_mod"].Throwaway
        assert probe_problems(mods, (*ALL_PROBES, throwaway)) == []
    finally:
        sys.modules.pop("throwaway_probe_mod", None)

    class NoName(Probe):
        group = "procfs"

    with pytest.raises(ValueError, match="has no name"):
        probe_table([NoName])


# -- detectors ------------------------------------------------------------------------------


def detector_classes() -> list[type[BaseDetector]]:
    """Every concrete detector class defined in the modules of ``reveal_lab.detectors``."""
    out = []
    for m in pkgutil.iter_modules(detectors_pkg.__path__):
        mod = importlib.import_module(f"{detectors_pkg.__name__}.{m.name}")
        for _n, obj in inspect.getmembers(mod, inspect.isclass):
            concrete = issubclass(obj, BaseDetector) and not inspect.isabstract(obj)
            if concrete and obj.__module__ == mod.__name__:
                out.append(obj)
    return out


def detector_problems(classes: Iterable[type[BaseDetector]], exported: Iterable[str]) -> list[str]:
    """Per detector class: exported from ``reveal_lab.detectors``; a ``name`` of its own,
    unique; the contract on seeded data (``fit`` sets scores, threshold and labels;
    ``decision_function`` and ``explain`` have the right shapes; a planted outlier scores
    above the median); and it runs in a :class:`DetectorEnsemble`."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 6))
    X[7] += 9.0
    problems = []
    names: dict[str, str] = {}
    exported = set(exported)
    for cls in classes:
        label = cls.__name__
        if label not in exported:
            problems.append(f"{label} is not exported in reveal_lab.detectors.__all__")
        if cls.name == BaseDetector.name:
            problems.append(f"{label} has no name of its own (methods column, reports)")
        elif cls.name in names:
            problems.append(f"{label}: name {cls.name!r} is taken by {names[cls.name]}")
        names.setdefault(cls.name, label)
        det = cls().fit(X)
        shapes = (det.decision_scores_.shape, det.labels_.shape)
        if shapes != ((120,), (120,)) or not np.isfinite(det.threshold_):
            problems.append(f"{label}: fit must set decision_scores_[n], labels_[n] and a finite threshold_")
        if det.decision_function(X[:3]).shape != (3,) or det.explain(X[:3]).shape != (3, 6):
            problems.append(f"{label}: decision_function must give [n] and explain [n, n_features]")
        if not det.decision_scores_[7] > np.median(det.decision_scores_):
            problems.append(f"{label}: a planted outlier does not score above the median")
        res = DetectorEnsemble([cls()]).fit(X).result_
        if res.methods != [cls.name]:
            problems.append(f"{label}: the ensemble does not run it under its name")
    return problems


def test_every_detector_follows_the_recipe():
    classes = detector_classes()
    paper = {"ZScoreDetector", "PCAMahalanobisDetector", "IsolationForestDetector"}
    assert {c.__name__ for c in classes} >= paper
    assert detector_problems(classes, detectors_pkg.__all__) == []


class _Throwaway(BaseDetector):
    """Distance from the fit data's median, summed over features (a throwaway detector)."""

    def _fit(self, X):  # noqa: ANN001, ANN202
        self.center_ = np.median(X, axis=0)

    def _score(self, X):  # noqa: ANN001, ANN202
        return np.abs(X - self.center_).sum(axis=1)

    def _explain(self, X):  # noqa: ANN001, ANN202
        return np.abs(X - self.center_)


def test_a_forgotten_detector_step_is_caught():
    """The throwaway detector, neither named nor exported, then named like an existing one,
    then done right."""
    assert detector_problems([_Throwaway], detectors_pkg.__all__) == [
        "_Throwaway is not exported in reveal_lab.detectors.__all__",
        "_Throwaway has no name of its own (methods column, reports)",
    ]
    named = type("Named", (_Throwaway,), {"name": "zscore"})
    from reveal_lab.detectors import ZScoreDetector

    assert detector_problems([ZScoreDetector, named], [*detectors_pkg.__all__, "Named"]) == [
        "Named: name 'zscore' is taken by ZScoreDetector"
    ]
    done = type("Done", (_Throwaway,), {"name": "throwaway"})
    assert detector_problems([done], [*detectors_pkg.__all__, "Done"]) == []


# -- notebooks and figures ------------------------------------------------------------------


def notebook_problems(root: Path) -> list[str]:
    """Notebooks on disk missing from the manifest (they would never run), notebooks without
    their jupytext ``.py`` twin, and figure functions of ``reveal_lab.plots`` not exported."""
    manifest = load_manifest(root / "manifest.yml")  # raises for an entry without a notebook
    listed = {e.notebook for e in manifest.notebooks}
    on_disk = discover_notebooks(root)
    problems = [f"{p.name} is not in {root.name}/manifest.yml" for p in on_disk if p.name not in listed]
    twinless = [p for p in on_disk if not p.with_suffix(".py").exists()]
    problems += [f"{p.name} has no jupytext twin {p.stem}.py" for p in twinless]
    return problems


def figure_problems(module: object, exported: Iterable[str]) -> list[str]:
    """``plot_*`` functions a notebook could not import from ``reveal_lab.plots``."""
    exported = set(exported)
    return [
        f"{name} is not exported in reveal_lab.plots.__all__"
        for name, obj in inspect.getmembers(module, inspect.isfunction)
        if name.startswith("plot_") and obj.__module__ == module.__name__ and name not in exported
    ]


def test_every_notebook_and_figure_is_wired():
    from reveal_lab.notebooks import notebooks_dir

    assert notebook_problems(notebooks_dir()) == []
    figures = importlib.import_module("reveal_lab.plots._figures")
    assert figure_problems(figures, plots_pkg.__all__) == []


def _notebook(path: Path) -> None:
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def test_a_forgotten_notebook_step_is_caught(tmp_path):
    """A throwaway notebook left out of the manifest and without its twin; a manifest entry
    without its notebook; a plot function not exported."""
    _notebook(tmp_path / "01-a.ipynb")
    (tmp_path / "01-a.py").write_text("# %%\n")
    _notebook(tmp_path / "02-throwaway.ipynb")
    manifest = tmp_path / "manifest.yml"
    manifest.write_text(
        "kernel: reveal-lab\npresets: {smoke: {}, full: {}}\nnotebooks:\n  - notebook: 01-a.ipynb\n"
    )
    assert notebook_problems(tmp_path) == [
        "02-throwaway.ipynb is not in " + tmp_path.name + "/manifest.yml",
        "02-throwaway.ipynb has no jupytext twin 02-throwaway.py",
    ]
    (tmp_path / "02-throwaway.py").write_text("# %%\n")
    manifest.write_text(manifest.read_text() + "  - notebook: 02-throwaway.ipynb\n    figures: [throwaway]\n")
    assert notebook_problems(tmp_path) == []
    manifest.write_text(manifest.read_text() + "  - notebook: 03-missing.ipynb\n")
    with pytest.raises(ValueError, match="03-missing.ipynb does not exist"):
        notebook_problems(tmp_path)

    fake = type(sys)("throwaway_figures")

    def plot_throwaway():  # noqa: ANN202
        return None

    plot_throwaway.__module__ = fake.__name__
    fake.plot_throwaway = plot_throwaway
    assert figure_problems(fake, []) == ["plot_throwaway is not exported in reveal_lab.plots.__all__"]
    assert figure_problems(fake, ["plot_throwaway"]) == []


# -- detection knobs ------------------------------------------------------------------------

#: policy fields set without a flag of their own: ``name`` by ``--policy``, ``lone_sentinel``
#: by ``--sentinel-samples none``
KNOB_EXEMPT = {"name", "lone_sentinel"}


def knob_problems(policy_cls: type, knobs: Iterable) -> list[str]:
    """A policy field without a command-line row in ``knobs``, a row for a field the policy
    lacks, and a row whose flag does not set its field (parsed, then built into a policy)."""
    import argparse
    import dataclasses

    from reveal_lab.cli._policy import add_policy_arguments, policy_changes

    knobs = list(knobs)
    fields = {f.name for f in dataclasses.fields(policy_cls)}
    rows = {k.field for k in knobs}
    problems = [f"policy field {f!r} has no row in cli._policy.KNOBS" for f in sorted(fields - rows - KNOB_EXEMPT)]
    problems += [f"KNOBS row {f!r} is not a field of {policy_cls.__name__}" for f in sorted(rows - fields)]
    for k in knobs:
        if k.field not in fields:
            continue
        p = argparse.ArgumentParser()
        add_policy_arguments(p, [k.field], knobs=knobs)
        values = [[]] if k.options.get("action") else [[str(c)] for c in k.options.get("choices", ("2", "0.5"))]
        for value in values:  # a value the flag takes: one of its choices, a count or a share
            try:
                policy_cls().with_(**policy_changes(p.parse_args([k.flags[0], *value]), knobs))
                break
            except (ValueError, SystemExit):
                continue
        else:
            problems.append(f"{k.flags[0]} gives no valid {policy_cls.__name__} with {values}")
    return problems


def test_every_policy_field_has_a_flag():
    from reveal_lab.cli._policy import KNOBS
    from reveal_lab.pipeline import DetectionPolicy

    assert knob_problems(DetectionPolicy, KNOBS) == []


def test_a_forgotten_knob_step_is_caught():
    """A throwaway knob: a policy field without its flag, then with it; the flag sets the field."""
    import argparse
    import dataclasses

    from reveal_lab.cli._policy import KNOBS, Knob, add_policy_arguments, policy_changes
    from reveal_lab.cli._types import positive_int
    from reveal_lab.pipeline import DetectionPolicy

    @dataclasses.dataclass(frozen=True)
    class ThrowawayPolicy(DetectionPolicy):
        max_gap: int = 1

    assert knob_problems(ThrowawayPolicy, KNOBS) == ["policy field 'max_gap' has no row in cli._policy.KNOBS"]
    row = Knob("max_gap", ("--max-gap",), {"type": positive_int, "metavar": "N", "help": "windows bridged"})
    assert knob_problems(ThrowawayPolicy, [*KNOBS, row]) == []
    assert knob_problems(DetectionPolicy, [*KNOBS, row]) == [
        "KNOBS row 'max_gap' is not a field of DetectionPolicy"
    ]
    p = argparse.ArgumentParser()
    add_policy_arguments(p, knobs=[*KNOBS, row])
    assert ThrowawayPolicy().with_(**policy_changes(p.parse_args(["--max-gap", "3"]), [*KNOBS, row])).max_gap == 3


def test_every_policy_field_is_in_the_score_key_or_said_not_to_score():
    """The score cache's key (``pipeline._score.ScoreSettings``) holds every policy field that
    scoring one host reads; a field left out of it is listed with why it cannot change a score."""
    from reveal_lab.pipeline import DetectionPolicy, ResolvedPolicy
    from reveal_lab.pipeline._score import unkeyed_fields

    assert unkeyed_fields(DetectionPolicy, ResolvedPolicy) == []


def test_a_knob_forgotten_in_the_score_key_is_caught():
    """A throwaway knob added to the policy and its resolved form but neither to the score key
    nor to the fields said not to score: named; once in the key, the cached score's key moves."""
    import dataclasses

    from reveal_lab.pipeline import DetectionPolicy, ResolvedPolicy, get_policy
    from reveal_lab.pipeline._cache import content_key
    from reveal_lab.pipeline._score import ScoreSettings, unkeyed_fields

    @dataclasses.dataclass(frozen=True)
    class ThrowawayPolicy(DetectionPolicy):
        max_gap: int = 1

    @dataclasses.dataclass(frozen=True)
    class ThrowawayResolved(ResolvedPolicy):
        max_gap: int = 1

    want = ["max_gap: neither in ScoreSettings nor in UNSCORED_FIELDS"]
    assert unkeyed_fields(ThrowawayPolicy, ThrowawayResolved) == want

    @dataclasses.dataclass(frozen=True)
    class ThrowawayKey(ScoreSettings):
        max_gap: int = 1

    resolved = get_policy("default").resolve(baseline_runs=0, source="lab")
    fields = {f.name: getattr(resolved, f.name) for f in dataclasses.fields(resolved)}
    one, three = (ThrowawayResolved(**{**fields, "max_gap": g}) for g in (1, 3))
    assert content_key(ThrowawayKey.of(one)) != content_key(ThrowawayKey.of(three))
    assert content_key(ScoreSettings.of(one)) == content_key(ScoreSettings.of(three))
