"""The install recipes agree: ``environment.yml`` mirrors ``pyproject.toml``, the
default environment has JupyterLab, and ``make`` targets share one bootstrap stamp."""

from __future__ import annotations

import re
import tomllib

import pytest

from reveal_lab.config import PROJECT_ROOT

yaml = pytest.importorskip("yaml")

#: pip name -> conda-forge name where they differ
CONDA_NAME = {"matplotlib": "matplotlib-base"}


def _split(req: str) -> tuple[str, str]:
    """``"dask[dataframe]>=2024.1"`` -> ``("dask", ">=2024.1")``."""
    m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*(.*?)\s*", req)
    assert m, f"unparsed requirement {req!r}"
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def _pyproject() -> dict:
    return tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())


def _expand(extras: dict[str, list[str]], name: str) -> list[str]:
    out = []
    for req in extras[name]:
        m = re.fullmatch(r"reveal-lab\[([^\]]+)\]", req)
        if m:
            for sub in m.group(1).split(","):
                out += _expand(extras, sub.strip())
        else:
            out.append(req)
    return out


def test_default_environment_has_jupyterlab_and_hypothesis():
    extras = _pyproject()["project"]["optional-dependencies"]
    names = {_split(r)[0] for r in _expand(extras, "all")}
    assert {"jupyterlab", "hypothesis", "pytest"} <= names


def test_license_is_an_spdx_string():
    """A TOML table (``{ text = "MIT" }``) makes setuptools >= 77 warn on every install."""
    proj = _pyproject()
    assert proj["project"]["license"] == "MIT"
    assert any(r.startswith("setuptools>=77") for r in proj["build-system"]["requires"])


def test_make_targets_share_one_bootstrap_stamp():
    """``make lab`` used to bootstrap ``all,workloads,lab``, overwriting the stamp so the
    next ``make test`` reinstalled everything: every target now goes through ``setup``
    (one extras set), and bootstrap.sh keeps one stamp line per extras set."""
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    calls = re.findall(r"scripts/bootstrap\.sh\s*(\S*)", makefile)
    assert calls == ["all,workloads"], calls
    lab = re.search(r"^lab:\s*(.*)$", makefile, re.M)
    assert lab and lab.group(1).split("##")[0].split() == ["setup"]
    boot = (PROJECT_ROOT / "scripts" / "bootstrap.sh").read_text()
    assert 'echo "$want" > "$stamp"' not in boot  # would forget the other sets


def test_bootstrap_reinstalls_only_for_a_new_extras_set(tmp_path):
    """scripts/bootstrap.sh run for real in a copy of the project, with a fake
    ``.venv/bin/python`` that records its pip calls: alternating two extras sets
    installs each once, through requirements/lock.txt; changing pyproject.toml or the lock
    installs again. Broken variant: the
    old single-line stamp reinstalls on every switch (4 installs, not 2)."""
    import os
    import shutil
    import subprocess
    import sys

    proj = tmp_path / "proj"
    (proj / "scripts").mkdir(parents=True)
    shutil.copy(PROJECT_ROOT / "scripts" / "bootstrap.sh", proj / "scripts" / "bootstrap.sh")
    shutil.copy(PROJECT_ROOT / "pyproject.toml", proj / "pyproject.toml")
    (proj / "requirements").mkdir()
    shutil.copy(PROJECT_ROOT / "requirements" / "lock.txt", proj / "requirements" / "lock.txt")
    log = tmp_path / "pip.log"
    fake = proj / ".venv" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    fake.chmod(0o755)
    # only the tools the script needs: no apt-get, so its root-only branch is skipped
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "cat", "sha256sum", "cut", "grep", "mv", "id", "dirname"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    env = {"PATH": str(bin_dir), "PYTHON": sys.executable}

    def boot(extras: str) -> None:
        subprocess.run(
            ["bash", str(proj / "scripts" / "bootstrap.sh"), extras], env=env, check=True, timeout=60,
            capture_output=True,
        )

    def installs() -> list[str]:
        return [ln for ln in log.read_text().splitlines() if " -e ." in ln]

    for extras in ("all,workloads", "lab", "all,workloads", "lab"):
        boot(extras)
    # every install goes through the lock (pip constraints)
    assert installs() == [
        "-m pip install -q -c requirements/lock.txt -e .[all,workloads]",
        "-m pip install -q -c requirements/lock.txt -e .[lab]",
    ]
    (proj / "pyproject.toml").write_text((proj / "pyproject.toml").read_text() + "\n# changed\n")
    boot("all,workloads")
    assert len(installs()) == 3
    # a moved lock installs again
    lock = proj / "requirements" / "lock.txt"
    lock.write_text(lock.read_text() + "# moved\n")
    boot("all,workloads")
    assert len(installs()) == 4
