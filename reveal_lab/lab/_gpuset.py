"""The labelled GPU-host set: collector recordings of a GPU training host, each with what was
injected and, where a training job ran, its step times, in the lab layout.

A raw recording is an unmodified ``reveal-lab collect`` run folder plus ``labels.json``
(``collector_popen``, the ``job`` that ran, if any, and the ``faults``: kind, start and end
in epoch seconds) and, where a job ran, ``steps.csv`` (``t``: a step's wall start in epoch
seconds, ``step_s``: its duration). :func:`build_gpu_host_set` writes:

* ``raw/<name>/``: each raw folder as it was (the collector's values, its log, the labels
  and step times);
* ``host_separated/*.parquet``: each recording in the public grammar (``view="dataset"``),
  readable by :func:`~reveal_lab.io.open_dataset`;
* ``meta_lab.csv``: one row per recording; ``workload_start``/``workload_end`` are the job's
  steady span (:func:`~reveal_lab.io.steady_span`: from its first step no slower than twice its median step
  to the end of its last), so ``detect`` scores a job run over the job, as a lab run; a
  recording without a job has no span and is scored whole;
* ``labels.csv``: one row per fault (lab format, ``scope=episode``), its subsystem from
  :data:`GPU_FAULT_SUBSYSTEMS`, its ``magnitude`` the job's slowdown (:func:`slowdown`: median
  step inside the fault over the median step of the job outside every fault; unit
  ``step time x``) where a job ran. A GPU co-tenant's label starts when its CUDA context was
  created (``cuda_context_at``): its process holds GPU memory from then on.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from reveal_lab.io import (
    EXTRA_META_COLUMNS,
    LABEL_COLUMNS,
    META_COLUMNS,
    JobPace,
    ms_to_stamp,
    read_job_pace,
    steady_span,
)
from reveal_lab.lab._labels import write_csv

__all__ = [
    "GPU_FAULT_SUBSYSTEMS",
    "slowdown",
    "build_gpu_host_set",
    "GPU_SET_SPLIT",
]

#: the folder of the set's Parquet recordings (a ``*_separated`` folder: open_dataset finds it)
GPU_SET_SPLIT = "host_separated"
#: the subsystem each injected kind loads (the label's ``expected_subsystem``)
GPU_FAULT_SUBSYSTEMS: dict[str, str] = {
    "cpu_contention": "cpu",
    "loader_cpu": "cpu",
    "gpu_cotenant": "gpu",
    "gpu_cotenant_compute": "gpu",
    "gpu_cotenant_bandwidth": "gpu",
    "gpu_matmul_bf16": "gpu",
    "gpu_memory_60GB_bandwidth": "gpu",
    "pcie_h2d": "gpu",
    "host_memory": "memory",
    "storage_write": "storage",
    "network": "network",
}


def slowdown(pace: JobPace, fault: tuple[float, float], faults: Sequence[tuple[float, float]]) -> float:
    """The job's median step inside ``fault`` over its median step in its steady span outside
    every one of ``faults`` (1.0: no change).

    >>> p = JobPace(np.arange(10.0), np.array([1, 1, 1, 2, 2, 1, 1, 1, 1, 1.0]))
    >>> slowdown(p, (3.0, 5.0), [(3.0, 5.0)])
    2.0
    """
    a, b = steady_span(pace)
    calm = (pace.t >= a) & (pace.t < b)
    for s, e in faults:
        calm &= ~((pace.t >= s) & (pace.t < e))
    base = float(np.median(pace.step_s[calm])) if calm.any() else float("nan")
    return pace.median_between(*fault) / base


def _recording(raw: Path, out: Path) -> tuple[dict, list[dict], str]:
    """One raw recording written into ``out``: ``(meta row, label rows, README line)``; the
    host is the one its columns name."""
    from reveal_lab.io import read_collector_run
    from reveal_lab.lab._dataset import drop_missing_columns, write_run
    from reveal_lab.telemetry import Run, RunMeta

    lab = json.loads((raw / "labels.json").read_text())
    run = read_collector_run(raw, view="dataset")
    host = run.meta.hosts[0]
    frame, dropped = drop_missing_columns(run.frame)
    job = lab.get("job")
    # a job named model_phase_dataset (transformer_train_bf16): Transformer for Training, bf16
    words = job["name"].split("_") if job else []
    model, task, dataset = ("GPUPhases", "Host", "idle") if not job else (
        words[0].capitalize(), "Training", words[-1] if len(words) > 1 else "synthetic"
    )
    stamp = frame["timestamp"][0].strftime("%Y-%m-%dT%H-%M-%S")
    stem = f"host_{model}for{task}_{dataset}_{stamp}"
    fn = f"{stem}_{host}.parquet"
    source = f"./{GPU_SET_SPLIT}/{fn}"
    pace = read_job_pace(raw / "steps.csv") if (raw / "steps.csv").exists() else None
    span = steady_span(pace) if pace is not None else None
    faults = [(f["start"], f["end"]) for f in lab["faults"]]
    rmeta = RunMeta(
        run_id=f"{stem}_{host}", hosts=(host,), workload=f"{model}__{task}__{dataset}", model=model, task=task,
        dataset=dataset, phase="host", mode="host", platform="collector", source_path=source,
        start_time=run.meta.start_time, interval_ms=run.meta.interval_ms,
        extra={"fault": "+".join(f["kind"] for f in lab["faults"]) or "none", "world_size": 1,
               "dropped_all_missing_columns": dropped, "recording": raw.name},
    )
    write_run(Run(rmeta, frame), out / GPU_SET_SPLIT / fn)
    meta_row = {
        "source_file": source, "n_rows": frame.height, "n_cols": frame.width - 1, "phase": "host",
        "mode": "host", "model": model, "task": task, "dataset": dataset, "model_task": f"{model}for{task}",
        "workload": rmeta.workload, "run": stem, "host": host, "run_group": stem, "world_size": 1,
        "fault": rmeta.extra["fault"], "repeat": 0, "seed": "",
        "start": str(frame["timestamp"][0]), "end": str(frame["timestamp"][-1]),
        "steps": len(pace.t) if pace is not None else "",
        "workload_start": ms_to_stamp(round(span[0] * 1000)) if span else "",
        "workload_end": ms_to_stamp(round(span[1] * 1000)) if span else "",
        "n_dropped_nan_columns": dropped,
    }
    labels = []
    for f in lab["faults"]:
        start = f.get("cuda_context_at", f["start"])
        slow = slowdown(pace, (f["start"], f["end"]), faults) if pace is not None else None
        labels.append({
            "run": stem, "host": host, "fault_type": f["kind"],
            "start": ms_to_stamp(round(start * 1000)), "end": ms_to_stamp(round(f["end"] * 1000)),
            "expected_subsystem": GPU_FAULT_SUBSYSTEMS.get(f["kind"], "gpu"),
            "magnitude": "" if slow is None else round(slow, 3), "unit": "" if slow is None else "step time x",
            "scope": "episode", "source_file": source,
        })
    t0 = lab["collector_popen"]
    what = ", ".join(
        f"{f['kind']} at {f['start'] - t0:.0f} s for {f['end'] - f['start']:.0f} s"
        + (f" (job step x{lb['magnitude']})" if lb["magnitude"] != "" else "")
        for f, lb in zip(lab["faults"], labels, strict=True)
    )
    line = f"| {raw.name} | `{fn}` | {frame.height / 10:.0f} | {job['name'] if job else 'none'} | {what} |"
    return meta_row, labels, line


def build_gpu_host_set(raws: Sequence[str | Path], out: str | Path) -> Path:
    """The set (module doc) of the raw recordings ``raws`` written into ``out`` (its Parquet,
    ``meta_lab.csv``, ``labels.csv``, ``raw/`` and a README table); ``out``."""
    out = Path(out)
    (out / GPU_SET_SPLIT).mkdir(parents=True, exist_ok=True)
    meta_rows, label_rows, lines = [], [], []
    for r in sorted(Path(p) for p in raws):
        if not (r / "labels.json").exists():
            raise ValueError(f"{r}: no labels.json (expected a collector folder with what was injected)")
        dest = out / "raw" / r.name
        if dest.resolve() != r.resolve():
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(r, dest)
        m, lb, line = _recording(r, out)
        meta_rows.append(m)
        label_rows += lb
        lines.append(line)
    write_csv(out / "meta_lab.csv", meta_rows, [*META_COLUMNS, *EXTRA_META_COLUMNS])
    write_csv(out / "labels.csv", label_rows, LABEL_COLUMNS)
    (out / "recordings.md").write_text(
        "| raw | file | seconds | job | faults (from the collector's start) |\n|---|---|---|---|---|\n"
        + "\n".join(lines) + "\n"
    )
    return out
