"""The linter passes: ``ruff check`` over the repository with pyproject.toml's rules (``make test``
runs it first too), and each file listed there as an exception still exists."""

from __future__ import annotations

import subprocess
import sys
import tomllib
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
