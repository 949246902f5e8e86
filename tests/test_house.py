"""The house rules of ``reveal_lab``'s layout (CONTRIBUTING.md, "Imports"):

* no module of one subpackage imports a private name (a dotted part with a leading
  underscore: ``reveal_lab.io._public``, ``from reveal_lab.attribution._words import _fmt``)
  of another subpackage, function-local imports included;
* no import cycle between subpackages.

The check is implemented here with :mod:`ast` (it needs nothing beside the repository); the
team's tool ``../shared/tools/house_check.py``, when present beside the checkout, must agree.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import reveal_lab

PACKAGE = Path(reveal_lab.__file__).resolve().parent


@functools.cache
def _parse(text: str, name: str) -> ast.Module:
    """``ast.parse`` of one file's text, parsed once per text in this process (the checks
    below read the same package)."""
    return ast.parse(text, name)


def _is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def scan(root: Path) -> tuple[list[str], list[list[str]]]:
    """``(crossings, cycles)`` of the package at ``root``: each crossing as
    ``file:line module [name]``, each cycle as the sorted subpackages of one strongly
    connected component of the subpackage import graph."""
    top = root.name
    crossings: list[str] = []
    edges: dict[str, set[str]] = defaultdict(set)
    for f in sorted(root.rglob("*.py")):
        parts = f.relative_to(root.parent).with_suffix("").parts
        mod = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        here = mod.split(".")[1] if "." in mod else ""
        for node in ast.walk(_parse(f.read_text(), str(f))):
            targets: list[tuple[str, str]] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if f.name == "__init__.py" else mod.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    full = ".".join(base + ([node.module] if node.module else []))
                else:
                    full = node.module or ""
                targets = [(full, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [(a.name, "") for a in node.names]
            for full, name in targets:
                if not full.startswith(top + "."):
                    continue
                there = full.split(".")[1]
                if not here or there == here:
                    continue
                edges[here].add(there)
                path = full.split(".")[2:] + ([name] if name else [])
                if any(_is_private(p) for p in path):
                    crossings.append(f"{f.relative_to(root.parent)}:{node.lineno} {full} {name}".rstrip())
    return crossings, _cycles(edges)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


@functools.cache
def _package_scan() -> tuple[list[str], list[list[str]]]:
    """:func:`scan` of the package, once per process (two tests read it)."""
    return scan(PACKAGE)


def test_no_private_imports_across_subpackages():
    crossings, _ = _package_scan()
    assert crossings == [], "import the public name from the subpackage instead:\n" + "\n".join(crossings)


def test_no_cycles_between_subpackages():
    _, cycles = _package_scan()
    assert cycles == [], f"subpackages importing each other: {cycles}"


def test_the_check_finds_what_it_guards(tmp_path):
    """A throwaway package with one private crossing (function-local) and one cycle is caught."""
    pkg = tmp_path / "toy"
    for sub in ("a", "b"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "_impl.py").write_text("def f():\n    from toy.b._impl import g\n    return g\n")
    (pkg / "b" / "_impl.py").write_text("from toy.a import _impl\n\ndef g():\n    return 1\n")
    crossings, cycles = scan(pkg)
    assert crossings == ["toy/a/_impl.py:2 toy.b._impl g", "toy/b/_impl.py:1 toy.a _impl"]
    assert cycles == [["a", "b"]]
    (pkg / "a" / "_impl.py").write_text("from toy.b import g\n")  # public name, one direction
    (pkg / "b" / "_impl.py").write_text("def g():\n    return 1\n")
    assert scan(pkg) == ([], [])


def test_shared_house_tool_agrees():
    tool = PACKAGE.parent.parent / "shared" / "tools" / "house_check.py"
    if not tool.is_file():
        pytest.skip(f"{tool} is not beside this checkout")
    out = subprocess.run(
        [sys.executable, str(tool), str(PACKAGE)], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert out.splitlines()[0] == "crossings 0 cycles 0", out


def test_no_function_over_120_lines_without_a_reason():
    """A function of more than 120 lines (docstring included) says why in its docstring
    ("One long function: ..."); the others are short sequences of named steps."""
    root = PACKAGE
    long = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(_parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > 120 and "One long" not in (ast.get_docstring(node) or ""):
                    long.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({n} lines)")
    assert long == []


def test_test_module_basenames_do_not_clash():
    """pytest imports a test module outside a package by its basename: two ``test_x.py`` in
    folders without ``__init__.py`` stop the collection of a fresh clone (one inside a package
    is imported under the package's name and does not clash)."""
    from collections import defaultdict

    tests = Path(__file__).parent
    by_name: dict[str, list[Path]] = defaultdict(list)
    for f in tests.rglob("test_*.py"):
        by_name[f.name].append(f.parent)
    clashes = {
        name: [str(d.relative_to(tests)) for d in dirs]
        for name, dirs in by_name.items()
        if sum(not (d / "__init__.py").exists() for d in dirs) > 1
    }
    assert not clashes, f"test modules with the same basename outside packages: {clashes}"
