"""The notebook manifest: which notebook makes which figures and tables, with
which parameters, in which preset (``notebooks/manifest.yml``).

Layout::

    kernel: reveal-lab
    presets: {smoke: {...}, full: {...}}      # parameters every notebook gets
    notebooks:
      - notebook: 02-pruning.ipynb
        title: Correlation pruning
        parameters: {thresholds: "0.3,0.5,0.7,0.9"}   # defaults for every preset
        presets: {smoke: {max_runs_per_workload: 1}}  # per-preset overrides
        figures: [fig4_pruning_curve]                  # files the notebook must write
        tables: [pruning_curve]

The runner always injects ``data``, ``out_dir`` and ``smoke``; every notebook
declares them (and every other manifest parameter) in its ``parameters`` cell.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reveal_lab.config import PROJECT_ROOT

__all__ = [
    "discover_notebooks",
    "NotebookEntry",
    "Manifest",
    "load_manifest",
    "notebooks_dir",
    "INJECTED",
    "PRESET_NAMES",
]

#: parameters the runner sets for every notebook
INJECTED: tuple[str, ...] = ("data", "out_dir", "smoke")
PRESET_NAMES: tuple[str, ...] = ("smoke", "full")
_SCALARS = (str, int, float, bool)


def notebooks_dir() -> Path:
    """``notebooks/`` at the project root."""
    return PROJECT_ROOT / "notebooks"


def discover_notebooks(root: str | Path | None = None) -> list[Path]:
    """The study notebooks on disk, ``NN-name.ipynb``, in run order."""
    return sorted(Path(root or notebooks_dir()).glob("[0-9][0-9]-*.ipynb"))


@dataclass(frozen=True)
class NotebookEntry:
    notebook: str
    title: str
    parameters: dict[str, Any]
    presets: dict[str, dict[str, Any]]
    figures: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    after: tuple[str, ...] = ()  # notebooks (stems, earlier in the manifest) this one starts after
    alone: bool = False  # runs with no other notebook beside it (it measures time)

    @property
    def stem(self) -> str:
        return Path(self.notebook).stem

    def parameters_for(self, preset: str, common: dict[str, Any]) -> dict[str, Any]:
        """Common preset parameters, then the notebook's defaults, then its preset overrides."""
        out = {k: v for k, v in common.items() if k in self.parameters or k in INJECTED}
        out.update(self.parameters)
        out.update(self.presets.get(preset, {}))
        return out


@dataclass(frozen=True)
class Manifest:
    path: Path
    kernel: str
    presets: dict[str, dict[str, Any]]
    notebooks: tuple[NotebookEntry, ...] = field(default_factory=tuple)

    @property
    def root(self) -> Path:
        return self.path.parent

    def entry(self, name: str) -> NotebookEntry:
        for e in self.notebooks:
            if name in (e.notebook, e.stem):
                return e
        raise KeyError(f"{name!r} is not in {self.path}; notebooks: {[e.stem for e in self.notebooks]}")

    def select(self, names: Sequence[str] | None) -> list[NotebookEntry]:
        """The entries ``names`` name (file names or stems), once each, in the manifest's
        order (the order ``after`` relies on); every entry when ``names`` is empty. A name
        that is not in the manifest is a ``ValueError`` listing those that are."""
        if not names:
            return list(self.notebooks)
        known = {n: e for e in self.notebooks for n in (e.notebook, e.stem)}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(
                f"--only {unknown[0]}: no such notebook in {self.path}; notebooks: "
                f"{', '.join(e.stem for e in self.notebooks)}"
            )
        chosen = {known[n].notebook for n in names}
        return [e for e in self.notebooks if e.notebook in chosen]

    def parameters(self, entry: NotebookEntry, preset: str) -> dict[str, Any]:
        if preset not in self.presets:
            raise ValueError(f"unknown preset {preset!r}; {self.path} defines {sorted(self.presets)}")
        return entry.parameters_for(preset, self.presets[preset])


def _err(path: Path, msg: str) -> ValueError:
    from reveal_lab.telemetry import TelemetryError

    return TelemetryError(msg, path=str(path))


def _check_scalars(path: Path, where: str, params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise _err(path, f"{where}: expected a mapping of parameters, got {type(params).__name__}")
    for k, v in params.items():
        if not isinstance(v, _SCALARS):
            raise _err(path, f"{where}: parameter {k!r} must be a scalar (str, int, float, bool), got {v!r}")
    return dict(params)


def load_manifest(path: str | Path | None = None) -> Manifest:
    """Read and check ``notebooks/manifest.yml`` (or a ``.json`` manifest)."""
    path = Path(path) if path else notebooks_dir() / "manifest.yml"
    if not path.exists():
        raise FileNotFoundError(f"notebook manifest {path} not found")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        raw = json.loads(text)
    else:
        import yaml

        raw = yaml.safe_load(text)
    if not isinstance(raw, dict) or "notebooks" not in raw:
        raise _err(path, "expected a mapping with 'kernel', 'presets' and 'notebooks'")
    presets = {
        name: _check_scalars(path, f"presets.{name}", p) for name, p in (raw.get("presets") or {}).items()
    }
    missing = [p for p in PRESET_NAMES if p not in presets]
    if missing:
        raise _err(path, f"presets {missing} are missing")
    entries = []
    seen_outputs: dict[str, str] = {}
    for i, e in enumerate(raw["notebooks"]):
        where = f"notebooks[{i}]"
        if not isinstance(e, dict) or "notebook" not in e:
            raise _err(path, f"{where}: expected a mapping with a 'notebook' key")
        nb = str(e["notebook"])
        if not (path.parent / nb).exists():
            raise _err(path, f"{where}: notebook {nb} does not exist next to the manifest")
        per = {
            p: _check_scalars(path, f"{where}.presets.{p}", v) for p, v in (e.get("presets") or {}).items()
        }
        unknown = sorted(set(per) - set(presets))
        if unknown:
            raise _err(path, f"{where}: presets {unknown} are not defined at the top level")
        figs = tuple(str(f) for f in e.get("figures") or ())
        tabs = tuple(str(t) for t in e.get("tables") or ())
        for o in (*(f"figures/{f}" for f in figs), *(f"tables/{t}" for t in tabs)):
            if o in seen_outputs:
                raise _err(path, f"{where}: output {o} is also made by {seen_outputs[o]}")
            seen_outputs[o] = nb
        after = e.get("after") or ()
        if isinstance(after, str) or not all(isinstance(a, str) for a in after):
            raise _err(path, f"{where}: 'after' must be a list of notebook names, got {after!r}")
        earlier = {x.stem for x in entries}
        late = [a for a in after if Path(a).stem not in earlier]
        if late:
            raise _err(path, f"{where}: 'after' names {late}, which are not earlier notebooks of the manifest "
                             f"(earlier: {sorted(earlier)})")
        alone = e.get("alone", False)
        if not isinstance(alone, bool):
            raise _err(path, f"{where}: 'alone' must be true or false, got {alone!r}")
        entries.append(
            NotebookEntry(
                nb,
                str(e.get("title") or Path(nb).stem),
                _check_scalars(path, f"{where}.parameters", e.get("parameters")),
                per,
                figs,
                tabs,
                tuple(Path(a).stem for a in after),
                alone,
            )
        )
    return Manifest(path, str(raw.get("kernel") or "reveal-lab"), presets, tuple(entries))
