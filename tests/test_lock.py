"""Installs come from the lock: requirements/lock.txt pins every dependency that pyproject.toml
names (core and every extra), environment.yml agrees with it, and the environment the suite
runs in holds exactly the locked versions (``make test-latest`` runs with
REVEAL_LAB_LATEST=1 in an unlocked environment, where the last check does not apply)."""

from __future__ import annotations

import os
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: conda-forge names whose PyPI distribution has another name
CONDA_TO_PYPI = {"matplotlib-base": "matplotlib"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.lower())


def _lock() -> dict[str, str]:
    pins = {}
    for i, line in enumerate((ROOT / "requirements/lock.txt").read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==(\S+)", line.strip())
        assert m, f"requirements/lock.txt line {i}: expected NAME==VERSION, got {line!r}"
        pins[_norm(m.group(1))] = m.group(2)
    return pins


def _pyproject_requirements() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    names = {_norm(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0]) for r in reqs}
    return names - {"reveal-lab"}


def _environment_yml() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        m = re.fullmatch(r"\s*- ([A-Za-z0-9_.\-]+)==(\S+)(\s*#.*)?", line)
        if m:
            pins[_norm(CONDA_TO_PYPI.get(m.group(1), m.group(1)))] = m.group(2)
    return pins


def _public(version: str) -> str:
    return version.split("+", 1)[0]  # torch's local label (+cpu) is a build, not a release


def test_lock_pins_every_dependency_exactly():
    lock = _lock()
    missing = sorted(_pyproject_requirements() - set(lock))
    assert not missing, f"named in pyproject.toml but not pinned in requirements/lock.txt: {missing}"


def test_environment_yml_agrees_with_the_lock():
    lock, env = _lock(), _environment_yml()
    assert set(env) == _pyproject_requirements(), (
        f"environment.yml and pyproject.toml name different packages: "
        f"only in environment.yml {sorted(set(env) - _pyproject_requirements())}, "
        f"only in pyproject.toml {sorted(_pyproject_requirements() - set(env))}"
    )
    differ = {n: (v, lock.get(n)) for n, v in env.items() if _public(v) != _public(lock.get(n, ""))}
    assert not differ, f"environment.yml version vs lock: {differ}"


@pytest.mark.skipif(bool(os.environ.get("REVEAL_LAB_LATEST")), reason="make test-latest runs unlocked on purpose")
def test_this_environment_is_the_lock():
    differ = {}
    for name, version in _lock().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # an extra this environment did not install
        if installed != version:
            differ[name] = (installed, version)
    assert not differ, f"installed vs requirements/lock.txt: {differ} (scripts/bootstrap.sh installs from the lock)"
