"""The linter passes: ``ruff check`` over the repository with pyproject.toml's rules (``make test``
runs it first too), and each file listed there as an exception still exists and still breaks
each rule it is excused from (a file fixed leaves the list)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff() -> list[str]:
    try:
        import ruff  # noqa: F401 - only asks whether it is installed
    except ImportError:
        pytest.skip("ruff is not installed (make setup installs it from requirements/lock.txt)")
    return [sys.executable, "-m", "ruff"]


def test_ruff_check_passes():
    done = subprocess.run(
        [*_ruff(), "check", "--no-cache", "--output-format", "concise", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    rules = "the rules of pyproject.toml [tool.ruff]"
    assert done.returncode == 0, f"ruff check ({rules}):\n{done.stdout}{done.stderr}"


def test_every_lint_exception_names_a_file():
    ignores = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]["per-file-ignores"]
    gone = [pattern for pattern in ignores if not any(ROOT.glob(pattern))]
    assert not gone, f"pyproject.toml [tool.ruff.lint.per-file-ignores] names no file for: {gone}"


def test_every_lint_exception_is_still_needed():
    ignores = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]["per-file-ignores"]
    globs = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in ignores.items() if "*" in k)
    done = subprocess.run(
        [*_ruff(), "check", "--no-cache", "--exit-zero", "--output-format", "json",
         "--config", f"lint.per-file-ignores = {{{globs}}}", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    broken: dict[str, set[str]] = defaultdict(set)
    for v in json.loads(done.stdout):
        broken[Path(v["filename"]).relative_to(ROOT).as_posix()].add(v["code"])
    stale = {f: sorted(set(codes) - broken[f]) for f, codes in ignores.items() if "*" not in f}
    stale = {f: codes for f, codes in stale.items() if codes}
    assert not stale, (
        "pyproject.toml [tool.ruff.lint.per-file-ignores] excuses files from rules they no longer "
        f"break; delete these: {stale}"
    )
