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
    "run_table",
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
    ``"synth"``: synthetic runs, unless a folder of that name exists (a path that exists is
    the user's data, however it is spelled); anything else: a dataset folder that must exist."""
    if data is None or str(data) == "":
        root = data_dir()
        if not root.exists():
            raise FileNotFoundError(
                f"bundled dataset not found at {root}; pass a dataset folder "
                "(--data / data=...) or set REVEAL_DATA_DIR"
            )
        return root
    root = Path(data).expanduser()
    if str(data) == SYNTH and not root.exists():
        return SYNTH
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
    max_runs: int | None = None,
    fault_free: bool = False,
) -> list[str]:
    """Run ids from a dataset index, filtered and capped per workload (in index order);
    ``max_runs`` then keeps that many in total, taking the workloads in turn."""
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
    if fault_free and "fault" in idx.columns:
        idx = idx.filter(pl.col("fault").is_null() | pl.col("fault").cast(pl.String).is_in(["", "none"]))
    idx = idx.unique("run_id", maintain_order=True)
    if max_runs_per_workload:
        idx = idx.filter(pl.int_range(pl.len()).over("workload") < max_runs_per_workload)
    if max_runs:
        idx = (
            idx.with_row_index("_pos")
            .with_columns(pl.int_range(pl.len()).over("workload").alias("_turn"))
            .sort("_turn", "_pos")
            .head(max_runs)
            .sort("_pos")
        )
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
    max_runs: int | None = None,
    fault_free: bool = False,
) -> Iterator[Run]:
    """Runs for a study, loaded one at a time (see :func:`resolve_data` and :func:`select_runs`).

    ``fault_free`` leaves out runs with an injected fault (the lab dataset's ``fault``
    column, in the index or in the run's metadata); public runs carry no fault label.
    """
    root = resolve_data(data)
    wl = parse_list(workloads) if not isinstance(workloads, list) else workloads
    if root == SYNTH:
        synth = {r.meta.run_id: r for r in synthetic_runs()}
        index = pl.DataFrame({"run_id": list(synth), "workload": [r.meta.workload for r in synth.values()]})
        for rid in select_runs(
            index,
            workloads=wl,
            max_runs_per_workload=max_runs_per_workload or None,
            max_runs=max_runs or None,
        ):
            yield crop_run(synth[rid], max_seconds)
        return
    from reveal_lab.io import open_dataset

    ds = open_dataset(root)
    ids = select_runs(
        ds.index,
        workloads=wl,
        max_runs_per_workload=max_runs_per_workload or None,
        phase=phase or None,
        platform=platform or None,
        max_runs=max_runs or None,
        fault_free=fault_free,
    )
    for rid in ids:
        run = ds.load(rid)
        if fault_free and str(run.meta.extra.get("fault") or "none") not in ("", "none"):
            continue
        yield crop_run(run, max_seconds)


def load_study_runs(data: str | Path | None = None, **kwargs: object) -> list[Run]:
    """:func:`iter_study_runs` as a list."""
    return list(iter_study_runs(data, **kwargs))  # type: ignore[arg-type]


def run_table(runs: Sequence[Run]) -> pl.DataFrame:
    """One row per run: ``run_id, workload, platform, phase, hosts, n_rows, n_metrics,
    duration_s, interval_ms, n_warnings`` (the dataset overview table)."""
    rows = []
    for r in runs:
        ts = r.frame.get_column(TIMESTAMP)
        dur = (ts.max() - ts.min()).total_seconds() if r.frame.height > 1 else 0.0  # type: ignore[operator]
        step = ts.diff().dt.total_milliseconds().median() if r.frame.height > 1 else None
        rows.append(
            {
                "run_id": r.meta.run_id,
                "workload": r.meta.workload,
                "platform": r.meta.platform,
                "phase": r.meta.phase,
                "hosts": ",".join(r.meta.hosts),
                "n_rows": r.frame.height,
                "n_metrics": r.frame.width - 1,
                "duration_s": float(dur),
                "interval_ms": float(step) if step is not None else None,
                "n_warnings": len(r.warnings),
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "run_id": pl.String,
            "workload": pl.String,
            "platform": pl.String,
            "phase": pl.String,
            "hosts": pl.String,
            "n_rows": pl.Int64,
            "n_metrics": pl.Int64,
            "duration_s": pl.Float64,
            "interval_ms": pl.Float64,
            "n_warnings": pl.Int64,
        },
    )
