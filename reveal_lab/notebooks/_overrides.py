"""Notebook parameters given on the command line (``reproduce --param NAME=VALUE``) and
where an interrupted reproduction resumes (``reproduce --resume``)."""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reveal_lab.notebooks._limits import check_parameters, check_window, flag_name
from reveal_lab.notebooks._manifest import INJECTED, Manifest, NotebookEntry
from reveal_lab.notebooks._params import notebook_parameters

__all__ = ["parse_param", "notebook_overrides", "STATUS_FILE", "read_status", "write_status", "resume_from"]

#: per-notebook completion records of a reproduction, in ``OUT/notebooks/``
STATUS_FILE = "status.json"


def parse_param(text: str) -> tuple[str, Any]:
    """``"NAME=VALUE"`` → ``(NAME, VALUE)``; VALUE is a Python literal when it reads as
    one (``4``, ``0.5``, ``True``, ``"a,b"``), else the text itself.

    >>> parse_param("max_runs=4"), parse_param("platform=gpu"), parse_param("trim=False")
    (('max_runs', 4), ('platform', 'gpu'), ('trim', False))
    >>> parse_param("oops")
    Traceback (most recent call last):
    ...
    ValueError: --param 'oops': expected NAME=VALUE
    """
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise ValueError(f"--param {text!r}: expected NAME=VALUE")
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        value = raw.strip()
    return name, value


def _coerce(name: str, value: Any, declared: Any, where: str, given: str) -> Any:
    """``value`` as the type of the parameter cell's ``declared`` default; ``given`` says how
    the value was given (``--param NAME=VALUE`` or a flag) in the error."""
    if isinstance(value, str) and isinstance(declared, (int, float)) and not isinstance(declared, bool):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            pass
    if isinstance(declared, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes"):
            return True
        if text in ("false", "0", "no"):
            return False
    elif isinstance(declared, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif isinstance(declared, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(declared, str):
        return value if isinstance(value, str) else str(value)
    raise ValueError(
        f"{given}: {where} declares {name} = {declared!r} "
        f"({type(declared).__name__}); give a {type(declared).__name__}"
    )


def notebook_overrides(
    manifest: Manifest,
    entries: Sequence[NotebookEntry],
    params: Mapping[str, Any],
    flags: Mapping[str, str] | None = None,
) -> dict[str, dict[str, Any]]:
    """``{notebook: {name: value}}``: each parameter for the notebooks whose parameters
    cell declares it, converted to the declared type and checked against its range
    (:func:`reveal_lab.notebooks._limits.check_parameters`, the flags' ranges), and each
    notebook's ``stride_s`` no longer than its ``window_s``.

    ``flags``: the names set by a flag of their own (``{"workers": "--workers"}``): errors
    name that flag, and a notebook that does not declare one simply does not get it.
    A ``--param`` name that none of ``entries`` declares, or one the runner sets itself
    (``data``, ``out_dir``, ``smoke``), is a ``ValueError`` listing the names that can be given.
    """
    flags = flags or {}
    declared = {e.notebook: notebook_parameters(manifest.root / e.notebook) for e in entries}
    known = sorted({n for d in declared.values() for n in d} - set(INJECTED))
    out: dict[str, dict[str, Any]] = {e.notebook: {} for e in entries}
    for name, value in params.items():
        given = flag_name(name, value, flags)
        if name in INJECTED:
            raise ValueError(f"--param {name}: set by reproduce itself (--data, --out, --preset)")
        users = [nb for nb, d in declared.items() if name in d]
        if not users and name not in flags:
            raise ValueError(
                f"--param {name}: no notebook run here declares it; known parameters: {', '.join(known)}"
            )
        for nb in users:
            out[nb][name] = _coerce(name, value, declared[nb][name], nb, given)
            check_parameters({name: out[nb][name]}, flags)
    for nb, given_here in out.items():
        if given_here.keys() & {"window_s", "stride_s"}:
            check_window({**declared[nb], **given_here}, nb)
    return out


def read_status(out: Path) -> dict[str, Any]:
    """The completion records of ``out`` (``{}`` when there are none or they are unreadable)."""
    path = Path(out) / "notebooks" / STATUS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_status(out: Path, notebook: str, record: Mapping[str, Any]) -> None:
    """Record one notebook's outcome (status, seconds, parameters) in ``out``."""
    path = Path(out) / "notebooks" / STATUS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    data = read_status(out)
    data[notebook] = dict(record)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str), encoding="utf-8")
    tmp.replace(path)


def resume_from(
    out: Path, entries: Sequence[NotebookEntry], keys: Mapping[str, Mapping[str, Any]], outputs: Any
) -> int:
    """The index of the first of ``entries`` without a complete output in ``out``: its
    record says ``ok`` and was made from the same inputs (``keys[notebook]["key"]``, see
    :func:`reveal_lab.notebooks._provenance.input_keys`: data, preset, parameters, code,
    the notebooks it starts after), and its executed copy and every figure and table the
    manifest lists exist (``outputs(entry)`` gives those paths). Every notebook from there
    on runs again (later notebooks read earlier ones' outputs)."""
    status = read_status(out)
    for i, e in enumerate(entries):
        rec = status.get(e.notebook) or {}
        same = rec.get("status") == "ok" and (rec.get("inputs") or {}).get("key") == keys[e.notebook]["key"]
        files = [Path(out) / "notebooks" / e.notebook, *outputs(e)]
        if not same or not all(p.exists() for p in files):
            return i
    return len(entries)
