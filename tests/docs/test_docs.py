"""docs/ARCHITECTURE.md and docs/CONTRIBUTING.md name only what exists: every path, module,
function, class and ``name(signature)`` they write in backticks is looked up in this checkout,
and every link stays inside the repository.

What counts as a name (the rest of a backticked span, such as a command, a flag or a value, is
prose): a span with a ``/`` or ending in a source suffix is a path (``<placeholder>`` and ``*``
match any part); a dotted Python name (``reveal_lab.pipeline.detect_run``, ``pipeline._score.ScoreSettings``,
``DetectionPolicy.resolve``, ``polars.DataFrame``) is imported and looked up attribute by
attribute; a bare name is looked up among reveal_lab's module-level names when it is written as a
call (``detect_run(run, policy=)``), in CamelCase or in UPPER_CASE; each parameter a call names
must be one of the callable's."""

from __future__ import annotations

import builtins
import importlib
import inspect
import pkgutil
import re
from functools import cache
from pathlib import Path

import pytest

import reveal_lab

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("docs/ARCHITECTURE.md", "docs/CONTRIBUTING.md")
#: suffixes that make a span without a ``/`` a source path (``report.md`` is an output's name)
SOURCE_SUFFIXES = (".py", ".toml", ".sh", ".ipynb")
#: suffixes of files a command writes (``summary.json``): prose, not something in the checkout
OUTPUT_SUFFIXES = {"json", "csv", "html", "md", "yml", "parquet", "png", "jsonl", "tsv", "zip", "txt", "j2"}
NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
CALL = re.compile(rf"({NAME.pattern})\((.*)\)")


def spans(doc: str) -> list[tuple[int, str]]:
    """The backticked spans of ``doc`` outside fenced code blocks, with their line numbers.

    >>> spans("a `x` b\\n```\\n`y`\\n```\\n`z(a, b)`")
    [(1, 'x'), (5, 'z(a, b)')]
    """
    out, fenced = [], False
    for i, line in enumerate(doc.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out += [(i, m) for m in re.findall(r"`([^`\n]+)`", line)]
    return out


def kind_of(span: str) -> str:
    """``path``, ``name``, ``call`` or ``prose``.

    >>> [kind_of(s) for s in ("reveal_lab/pipeline/_policy.py", "_score.py", "summary.json",
    ...     "reveal_lab.pipeline.detect_run", "detect_run(run, policy=)", "KNOBS", "min_run",
    ...     "make test", "--policy paper", "$REVEAL_LAB_CACHE", "config[\\"policy\\"]", "out/reproduce",
    ...     "tests/test_lint.py::test_ruff_check_passes", "report.md")]
    ['path', 'path', 'prose', 'name', 'call', 'name', 'prose', 'prose', 'prose', 'prose', 'prose', 'prose', \
'path', 'prose']
    """
    s = span.strip()
    if not s or s[0] in "-$\"'/~." or "://" in s or s.startswith(("out/", "OUT/", "RAW/")):
        return "prose"
    if CALL.fullmatch(s):
        return "call"
    if " " in s or "=" in s or "[" in s or "|" in s:
        return "prose"
    if "/" in s or s.split("::", 1)[0].endswith(SOURCE_SUFFIXES):
        return "path"
    if not NAME.fullmatch(s):
        return "prose"
    if "." in s:
        return "prose" if s.rsplit(".", 1)[1] in OUTPUT_SUFFIXES else "name"
    camel = s[0].isupper() and any(c.islower() for c in s)
    upper = s.isupper() and ("_" in s or (s.isalpha() and len(s) > 3))  # not a rule code (C901)
    return "name" if camel or upper else "prose"


def path_problem(span: str, root: Path = ROOT) -> str | None:
    """Why the path ``span`` names nothing in the checkout at ``root``, or ``None``; a
    ``file.py::name`` names a function or class defined in that file."""
    span, _, test = span.partition("::")
    if test:
        file = root / span
        if not file.is_file():
            return "no such file"
        defined = re.search(rf"^\s*(?:async )?(?:def|class) {re.escape(test)}\b", file.read_text(), re.M)
        return None if defined else f"{span} defines no {test}"
    pattern = re.sub(r"<[^>]*>", "*", span.rstrip("/"))
    if ".." in Path(pattern).parts:
        return "points outside the repository"
    if "/" not in pattern:  # a bare file name: anywhere in the package, scripts or tests
        tops = ("reveal_lab", "scripts", "tests", "benchmarks", "docs")
        found = [p for top in tops for p in (root / top).rglob(pattern)]
        return None if found or (root / pattern).exists() else f"no such file in {', '.join(tops)}"
    for base in (root, root / "reveal_lab"):
        if any(base.glob(pattern)) if "*" in pattern else (base / pattern).exists():
            return None
    return "no such path (from the repository root or reveal_lab/)"


@cache
def module_names() -> dict[str, list[object]]:
    """Every module-level name of every reveal_lab module, with the objects it names."""
    names: dict[str, list[object]] = {}
    for info in pkgutil.walk_packages(reveal_lab.__path__, "reveal_lab."):
        mod = importlib.import_module(info.name)
        names.setdefault(info.name.rsplit(".", 1)[1], []).append(mod)
        for key, value in vars(mod).items():
            names.setdefault(key, []).append(value)
    return names


def resolve(dotted: str) -> list[object]:
    """The objects ``dotted`` can name: a module path (``reveal_lab.x.y``, or ``x.y`` inside
    reveal_lab, or a third-party module) then attributes; or a reveal_lab name then attributes."""
    parts = dotted.split(".")
    starts: list[tuple[object, list[str]]] = []
    for prefix in (["reveal_lab"], []):
        full = prefix + parts
        for cut in range(len(full), 0, -1):
            try:
                mod = importlib.import_module(".".join(full[:cut]))
            except ImportError:
                continue
            if full[:cut] != ["reveal_lab"] or not prefix:
                starts.append((mod, full[cut:]))
            break
    starts += [(obj, parts[1:]) for obj in module_names().get(parts[0], [])]
    if hasattr(builtins, parts[0]):
        starts.append((getattr(builtins, parts[0]), parts[1:]))
    found = []
    for obj, rest in starts:
        for attr in rest:
            fields = getattr(obj, "__dataclass_fields__", {})
            if hasattr(obj, attr) or attr in fields:
                obj = getattr(obj, attr, fields.get(attr))
            else:
                break
        else:
            found.append(obj)
    return found


def parameters(text: str) -> list[str]:
    """The parameter names a written call names: ``run, baseline=None, *, policy=...`` gives
    ``run, baseline, policy``; values, ``...``, ``*args`` and ``**kwargs`` are not names.

    >>> parameters("frame, config, backend=\\"numba\\", f=g(a, b), *, x=, ...")
    ['frame', 'config', 'backend', 'f', 'x']
    """
    items, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    names = []
    for item in (i.strip() for i in items):
        name = item.split("=", 1)[0].strip()
        if re.fullmatch(r"[A-Za-z_]\w*", name):
            names.append(name)
    return names


def accepts(obj: object, names: list[str]) -> list[str]:
    """The names in ``names`` that ``obj``'s signature lacks (all of them if it has none)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return names
    params = sig.parameters
    return [n for n in names if n not in params]


def problems(doc: str, root: Path = ROOT) -> list[str]:
    """What ``doc`` (a path under ``root``) names that does not exist, one line each."""
    text = (root / doc).read_text()
    out = []
    for line, span in spans(text):
        kind = kind_of(span)
        where = f"{doc}:{line}: `{span}`"
        if kind == "path":
            why = path_problem(span, root)
            if why:
                out.append(f"{where}: {why}")
        elif kind == "name":
            if not resolve(span):
                out.append(f"{where}: no such module, function, class or attribute")
        elif kind == "call":
            m = CALL.fullmatch(span.strip())
            objs = [o for o in resolve(m.group(1)) if callable(o)]
            if not objs:
                out.append(f"{where}: `{m.group(1)}` is not a callable of reveal_lab")
                continue
            wanted = parameters(m.group(2))
            missing = min((accepts(o, wanted) for o in objs), key=len)
            if missing:
                out.append(f"{where}: `{m.group(1)}` has no parameter {', '.join(missing)}")
    for line_no, line in enumerate(text.splitlines(), 1):
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            path = target.split("#", 1)[0]
            here = (root / doc).parent
            if "://" in target or target.startswith("mailto:"):
                out.append(f"{doc}:{line_no}: link {target}: outside the repository")
            elif path and not here.joinpath(path).resolve().is_relative_to(root.resolve()):
                out.append(f"{doc}:{line_no}: link {target}: outside the repository")
            elif path and not here.joinpath(path).exists():
                out.append(f"{doc}:{line_no}: link {target}: no such file")
    return out


@pytest.mark.parametrize("doc", DOCS)
def test_the_doc_names_only_what_exists(doc):
    found = problems(doc)
    assert not found, f"{len(found)} names in {doc} do not exist:\n" + "\n".join(found)


def test_the_checker_catches_a_missing_name(tmp_path):
    """A renamed function, a parameter it lost, a missing path and an outside link are each caught."""
    doc = tmp_path / "docs" / "X.md"
    doc.parent.mkdir()
    doc.write_text(
        "`reveal_lab.pipeline.detect_run` `detect_run(run, policy=)`\n"
        "`reveal_lab.pipeline.detect_runs_renamed` `detect_run(run, force_baseline=True)`\n"
        "`reveal_lab/pipeline/_gone.py` [x](../../elsewhere.md) [y](https://example.org)\n"
    )
    found = problems("docs/X.md", tmp_path)
    text = "\n".join(found)
    assert "detect_runs_renamed" in text
    assert "has no parameter force_baseline" in text
    assert "_gone.py" in text
    assert "elsewhere.md: outside the repository" in text
    assert "https://example.org: outside the repository" in text
    assert not any(":1:" in f for f in found), found
