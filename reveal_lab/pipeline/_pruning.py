"""Which metrics a run is scored on: the pruned space (paper §4.1) fitted on fault-free
runs (the dataset's, the baseline runs or the run itself), saved as ``pruning.json`` and
reused."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from reveal_lab.pipeline._trim import TrimRule, trim_arguments, trim_run
from reveal_lab.telemetry import Run

__all__ = ["Pruning", "fit_pruning", "pruning_frame", "pruning_of", "save_pruning", "load_pruning"]


@dataclass
class Pruning:
    """A saved diagnostic space: the union of the selected metric keys and how it was fitted."""

    selected: list[str]
    params: dict[str, Any]
    by_workload: dict[str, list[str]]

    def to_dict(self) -> dict[str, Any]:
        return {"selected": self.selected, "params": self.params, "by_workload": self.by_workload}


def fit_pruning(
    runs: Iterable[Run],
    threshold: float = 0.5,
    *,
    method: str = "complete",
    trim: bool | str = True,
    rule: TrimRule | None = None,
) -> Pruning:
    """Prune (paper §4.1, :func:`reveal_lab.pruning.prune`) on ``runs`` (fault-free runs of
    the dataset, the baseline runs, or the run itself), grouped by workload; each run is
    trimmed (:func:`trim_run`; ``trim`` a mode of :data:`TRIM_RULES`, ``True`` for ``auto``,
    ``False`` for ``none``) and gets its derived metrics first, so the space holds the
    metrics the detectors see."""
    from reveal_lab.pruning import prune

    frames: dict[str, list[pl.DataFrame]] = {}
    ids = []
    for r in runs:
        frames.setdefault(r.meta.workload or "unknown", []).append(pruning_frame(r, trim, rule))
        ids.append(r.run_id)
    if not frames:
        raise ValueError("fit_pruning needs at least one run")
    return pruning_of(prune(frames, threshold, method=method), ids, trim)


def pruning_frame(run: Run, trim: bool | str = True, rule: TrimRule | None = None) -> pl.DataFrame:
    """One run as :func:`fit_pruning` prunes it: trimmed (a mode of :data:`TRIM_RULES`,
    ``True`` for ``auto``), its derived metrics added."""
    from reveal_lab.derive import add_derived

    mode, _ = trim_arguments(trim)
    if mode != "none":
        run, _ = trim_run(run, rule, mode=mode)
    return add_derived(run.frame)


def pruning_of(res: Any, fitted_on: Sequence[str], trim: bool | str = True) -> Pruning:
    """The saved space of a :class:`reveal_lab.pruning.PruneResult` fitted on the runs
    ``fitted_on`` (each one's frame from :func:`pruning_frame`)."""
    params = {
        "threshold": res.threshold,
        "method": res.method,
        "trim": trim,
        "fitted_on": list(fitted_on),
        "n_selected": len(res.union),
        "n_metrics": int(sum(len(sp.keys) for sp in res.spaces.values()) / max(len(res.spaces), 1)),
    }
    return Pruning(res.union, params, res.selected)


def save_pruning(p: Pruning, path: str | Path) -> Path:
    """Write ``pruning.json`` (selected keys, parameters, per-workload selections)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(p.to_dict(), indent=1))
    return path


def load_pruning(path: str | Path) -> Pruning:
    """Read a file written by :func:`save_pruning`."""
    path = Path(path)
    try:
        d = json.loads(path.read_text())
        return Pruning(list(d["selected"]), dict(d.get("params", {})), dict(d.get("by_workload", {})))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a pruning file (expected JSON with 'selected'): {exc}") from exc
