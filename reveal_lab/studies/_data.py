"""Which runs a study looks at: the bundled lab dataset, a public-dataset copy,
or seeded synthetic runs (``data="synth"``), chosen by the notebook parameters."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path

import polars as pl

from reveal_lab.config import data_dir
from reveal_lab.telemetry import TIMESTAMP, Run

__all__ = [
    "resolve_data",
    "select_runs",
    "iter_study_runs",
    "load_study_runs",
    "crop_run",
    "synthetic_runs",
    "parse_list",
]

SYNTH = "synth"


def parse_list(text: str | Sequence[str] | None) -> list[str] | None:
    """Notebook parameters are scalars: ``"a,b"`` → ``["a", "b"]``; ``""``/``None`` → ``None``.

    >>> parse_list("a, b"), parse_list(""), parse_list(["x"])
    (['a', 'b'], None, ['x'])
    """
    if text is None:
        return None
    if isinstance(text, str):
        items = [t.strip() for t in text.split(",") if t.strip()]
    else:
        items = [str(t) for t in text]
    return items or None


def resolve_data(data: str | Path | None) -> str | Path:
    """``None``/``""``: the bundled dataset (:func:`reveal_lab.config.data_dir`);
    ``"synth"``: synthetic runs; anything else: a dataset folder that must exist."""
    if data is None or str(data) == "":
        root = data_dir()
        if not root.exists():
            raise FileNotFoundError(
                f"bundled dataset not found at {root}; pass a dataset folder "
                "(--data / data=...) or set REVEAL_DATA_DIR"
            )
        return root
    if str(data) == SYNTH:
        return SYNTH
    root = Path(data).expanduser()
    if not root.exists():
        raise FileNotFoundError(f"dataset folder {root} does not exist")
    return root


def synthetic_runs(
    n_workloads: int = 3,
    runs_per_workload: int = 4,
    n_seconds: float = 40.0,
    n_channels: int = 80,
    seed: int = 0,
) -> list[Run]:
    """Seeded synthetic runs with planted anomalies, one workload per seed family.

    Runs of one workload share their step period (their seed's first draw), so
    workloads differ the way real ones do; each run has one planted anomaly.
    """
    from reveal_lab.synth import TARGET_SUBSYSTEMS, Anomaly, make_run

    runs = []
    for w in range(n_workloads):
        for r in range(runs_per_workload):
            sub = TARGET_SUBSYSTEMS[(w + r) % len(TARGET_SUBSYSTEMS)]
            a0 = n_seconds * (0.3 + 0.1 * (r % 3))
            sr = make_run(
                n_seconds,
                n_channels=n_channels,
                seed=seed + 1000 * w + r,
                anomalies=[Anomaly(sub, a0, a0 + n_seconds * 0.1)],
                run_id=f"synth-w{w}-r{r}",
            )
            meta = dataclasses.replace(sr.run.meta, workload=f"SYNTH{w}__Training__synthetic")
            runs.append(Run(meta, sr.run.frame, list(sr.run.warnings)))
    return runs


def select_runs(
    index: pl.DataFrame,
    *,
    workloads: Sequence[str] | None = None,
    max_runs_per_workload: int | None = None,
    phase: str | None = None,
    platform: str | None = None,
) -> list[str]:
    """Run ids from a dataset index, filtered and capped per workload (in index order)."""
    idx = index
    if workloads:
        unknown = sorted(set(workloads) - set(idx.get_column("workload").to_list()))
        if unknown:
            raise ValueError(f"workloads not in the dataset: {unknown}")
        idx = idx.filter(pl.col("workload").is_in(list(workloads)))
    if phase:
        idx = idx.filter(pl.col("phase") == phase)
    if platform:
        idx = idx.filter(pl.col("platform") == platform)
    idx = idx.unique("run_id", maintain_order=True)
    if max_runs_per_workload:
        idx = idx.filter(pl.int_range(pl.len()).over("workload") < max_runs_per_workload)
    return idx.get_column("run_id").to_list()


def crop_run(run: Run, max_seconds: float | None) -> Run:
    """The first ``max_seconds`` of a run (``None``/0: unchanged)."""
    if not max_seconds:
        return run
    t0 = run.frame.get_column(TIMESTAMP).min()
    import datetime as dt

    frame = run.frame.filter(pl.col(TIMESTAMP) < t0 + dt.timedelta(seconds=float(max_seconds)))
    return Run(run.meta, frame, list(run.warnings))


def iter_study_runs(
    data: str | Path | None = None,
    *,
    workloads: str | Sequence[str] | None = None,
    max_runs_per_workload: int | None = None,
    max_seconds: float | None = None,
    phase: str | None = None,
    platform: str | None = None,
) -> Iterator[Run]:
    """Runs for a study, loaded one at a time (see :func:`resolve_data`)."""
    root = resolve_data(data)
    wl = parse_list(workloads) if not isinstance(workloads, list) else workloads
    if root == SYNTH:
        seen: dict[str, int] = {}
        for run in synthetic_runs():
            w = run.meta.workload or ""
            if (wl and w not in wl) or (max_runs_per_workload and seen.get(w, 0) >= max_runs_per_workload):
                continue
            seen[w] = seen.get(w, 0) + 1
            yield crop_run(run, max_seconds)
        return
    from reveal_lab.io import open_dataset

    ds = open_dataset(root)
    ids = select_runs(
        ds.index,
        workloads=wl,
        max_runs_per_workload=max_runs_per_workload or None,
        phase=phase or None,
        platform=platform or None,
    )
    for rid in ids:
        yield crop_run(ds.load(rid), max_seconds)


def load_study_runs(data: str | Path | None = None, **kwargs: object) -> list[Run]:
    """:func:`iter_study_runs` as a list."""
    return list(iter_study_runs(data, **kwargs))  # type: ignore[arg-type]
