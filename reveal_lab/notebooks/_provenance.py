"""What a notebook's outputs were made from: the data (by content), the preset, its
parameters, the code (``reveal_lab`` and the notebook itself) and the notebooks it starts
after. ``reproduce --resume`` keeps an output only when all of them are unchanged, and a
notebook run alone refuses an earlier notebook's outputs in ``--out`` made from other inputs.

The data's identity is a digest of every file under the dataset folder (their relative paths
and bytes), so a run file changed under the same name is another dataset.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "run.txt").write_text("a")
>>> before = data_identity(str(d))
>>> _ = (d / "run.txt").write_text("b")
>>> before == data_identity(str(d)), data_identity("synth")
(False, 'synth')
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from reveal_lab.notebooks._manifest import Manifest, NotebookEntry

__all__ = ["data_identity", "code_identity", "input_keys", "describe_change"]


def data_identity(data: str, exclude: Iterable[Path] = ()) -> str:
    """``"synth"`` for the synthetic runs, else a digest of the files under the folder
    ``data`` (relative paths and contents, in path order); folders in ``exclude`` (the
    reproduction's own output and cache, when they lie inside it) are left out."""
    if data == "synth":
        return "synth"
    root = Path(data)
    skip = {Path(p).resolve() for p in exclude}
    h = hashlib.blake2b(digest_size=16)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if (here / d).resolve() not in skip)
        for name in sorted(filenames):
            p = here / name
            if not p.is_file():
                continue
            h.update(p.relative_to(root).as_posix().encode() + b"\0")
            with open(p, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            h.update(b"\0")
    return f"files:{h.hexdigest()}"


def code_identity() -> str:
    """A digest of every ``reveal_lab/**/*.py`` file: changed code gives new keys."""
    import reveal_lab

    root = Path(reveal_lab.__file__).resolve().parent
    h = hashlib.blake2b(digest_size=16)
    for p in sorted(root.rglob("*.py")):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _notebook_digest(manifest: Manifest, entry: NotebookEntry) -> str:
    return hashlib.blake2b((manifest.root / entry.notebook).read_bytes(), digest_size=16).hexdigest()


def input_keys(
    manifest: Manifest,
    *,
    preset: str,
    data: str,
    overrides: Mapping[str, Mapping[str, Any]],
    code: str,
) -> dict[str, dict[str, Any]]:
    """``{notebook: inputs}`` for every notebook of the manifest: ``data`` (its identity),
    ``preset``, ``parameters`` (the manifest's with ``overrides`` over them), ``code``, the
    notebook's own ``source`` digest, and ``after``: the ``key`` of each notebook it starts
    after; ``key`` is a digest of all of these."""
    keys: dict[str, dict[str, Any]] = {}
    by_stem: dict[str, str] = {}
    for e in manifest.notebooks:
        params = {k: v for k, v in manifest.parameters(e, preset).items() if k not in ("data", "out_dir")}
        params.update(overrides.get(e.notebook, {}))
        inputs: dict[str, Any] = {
            "data": data,
            "preset": preset,
            "parameters": json.loads(json.dumps(params, sort_keys=True, default=str)),
            "code": code,
            "source": _notebook_digest(manifest, e),
            "after": {a: keys[by_stem[a]]["key"] for a in e.after if a in by_stem},
        }
        inputs["key"] = hashlib.blake2b(json.dumps(inputs, sort_keys=True).encode(), digest_size=16).hexdigest()
        keys[e.notebook] = inputs
        by_stem[e.stem] = e.notebook
    return keys


#: how each input is named when it changed
_WHAT = {
    "data": "the data",
    "preset": "the preset",
    "parameters": "the parameters",
    "code": "the reveal_lab code",
    "source": "the notebook",
    "after": "the notebooks it starts after",
}


def describe_change(recorded: Mapping[str, Any] | None, now: Mapping[str, Any]) -> str:
    """Which inputs differ between a recorded ``inputs`` and the current one, in words.

    >>> describe_change({"data": "a", "preset": "smoke", "key": "1"}, {"data": "b", "preset": "smoke", "key": "2"})
    'the data differs'
    >>> describe_change(None, {"key": "2"})
    'no record of what they were made from'
    """
    if not recorded or "key" not in recorded:
        return "no record of what they were made from"
    changed = [_WHAT.get(k, k) for k in now if k != "key" and recorded.get(k) != now.get(k)]
    if not changed:
        return "unchanged"
    return ", ".join(changed) + (" differ" if len(changed) > 1 else " differs")
