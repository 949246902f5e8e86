"""What more workers buy a reproduction, from measured task times, for ``public_scale.py``.

* :func:`dispatch_overhead`: how many empty tasks per second a local Dask cluster of N
  single-threaded workers (``reveal_lab.scale.dask_client``) runs, submitted at once and
  gathered: the scheduler's cost per task, measured.
* :func:`makespan`: the end of a map step's tasks run in their order on the first free of N
  workers, one handed out per ``dispatch_s`` (a serial scheduler).
* :func:`reproduction_model`: a reproduction as its notebooks in turn, each its map steps (the
  per-run tasks of ``OUT/cache/tasks.tsv``, run on N workers, every step waiting for its last
  task) plus the rest of its time in the notebook's own process (kernel, reduce, figures: the
  notebook's seconds less its tasks', measured in process). Checked against the reproductions
  measured with workers; projected to the real dataset's 4,522 files from two in-process scales
  (:func:`projection`).

A model, not a measurement: it assumes a worker per core, tasks as long as measured in
process (no contention for memory bandwidth or disk), and the notebook's own work not
overlapping the map steps.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

#: notebook 05 compares each run with its own workload's median and at most this many other
#: workloads' medians (``max_other_workloads``, 32): the comparisons per run at the real scale
DTW_COMPARISONS_REAL = 33
DTW_NOTEBOOK = "05-dtw-reproducibility"


def _noop(i: int) -> int:
    return i


def dispatch_overhead(n_workers: int, tasks: int = 2000, rounds: int = 3) -> dict[str, Any]:
    """Empty tasks per second on a local Dask cluster of ``n_workers`` single-threaded
    workers (submitted at once with ``client.map`` and gathered; best of ``rounds``, after
    one warm-up round): ``dispatch_s``, the scheduler's seconds per task, is its inverse."""
    from reveal_lab.scale import dask_client

    best = float("inf")
    with dask_client(n_workers=n_workers, quiet=True) as client:
        for r in range(rounds + 1):
            t = time.perf_counter()
            keys = [f"noop-{r}-{i}" for i in range(tasks)]
            client.gather(client.map(_noop, range(tasks), pure=False, key=keys))
            if r:  # the first round warms the workers and the connections
                best = min(best, time.perf_counter() - t)
    return {
        "workers": n_workers,
        "tasks": tasks,
        "seconds": round(best, 4),
        "tasks_per_s": round(tasks / best, 1),
        "dispatch_s": round(best / tasks, 6),
    }


def makespan(durations: Sequence[float], workers: int, dispatch_s: float = 0.0) -> float:
    """When the last of ``durations`` ends, each task started in order on the first free of
    ``workers``, no two handed out less than ``dispatch_s`` apart.

    >>> makespan([1.0, 1.0, 1.0, 1.0], 2)
    2.0
    >>> makespan([3.0, 1.0, 1.0, 1.0], 2)
    3.0
    >>> makespan([1.0] * 4, 4, dispatch_s=0.5)
    2.5
    >>> makespan([], 3)
    0.0
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    free = [0.0] * workers
    nxt, end = 0.0, 0.0
    for d in durations:
        start = max(heapq.heappop(free), nxt)
        nxt = start + dispatch_s
        heapq.heappush(free, start + d)
        end = max(end, start + d)
    return end


def _cycled(values: Sequence[float], n: int) -> list[float]:
    """``values`` repeated in their order until there are ``n`` (deterministic)."""
    if not values or n <= 0:
        return []
    return [values[i % len(values)] for i in range(n)]


def steps_of(tasks: pl.DataFrame) -> dict[str, dict[str, list[float]]]:
    """Notebook → map step (task name) → the seconds of its tasks, in the order they were
    logged (``reveal_lab.scale.task_times``)."""
    out: dict[str, dict[str, list[float]]] = {}
    for nb, task, s in tasks.select("notebook", "task", "seconds").iter_rows():
        out.setdefault(nb, {}).setdefault(task, []).append(float(s))
    return out


def serial_seconds(
    notebook_seconds: Mapping[str, float], steps: Mapping[str, Mapping[str, list[float]]]
) -> dict[str, float]:
    """Each notebook's seconds outside its map steps (its own process's work), at least 0.

    >>> serial_seconds({"a.ipynb": 10.0, "b.ipynb": 3.0}, {"a": {"t": [2.0, 3.0]}})
    {'a': 5.0, 'b': 3.0}
    """
    out = {}
    for nb, s in notebook_seconds.items():
        stem = nb.removesuffix(".ipynb")
        out[stem] = max(float(s or 0.0) - sum(sum(v) for v in steps.get(stem, {}).values()), 0.0)
    return out


def model_wall(
    steps: Mapping[str, Mapping[str, list[float]]],
    serial: Mapping[str, float],
    workers: int,
    dispatch_s: float = 0.0,
    cores: int | None = None,
) -> float:
    """A reproduction's modelled seconds: per notebook, its serial seconds plus the makespan of
    each map step on ``workers`` (at most ``cores`` of them at once: workers beyond the cores
    share them); ``workers=0``: in process (every task one after the other, no dispatch)."""
    if workers == 0:
        return sum(serial.values()) + sum(sum(v) for st in steps.values() for v in st.values())
    w = min(workers, cores) if cores else workers
    spans = (makespan(v, w, dispatch_s) for st in steps.values() for v in st.values())
    return sum(serial.values()) + sum(spans)


def _fit_line(x0: float, y0: float, x1: float, y1: float) -> tuple[float, float]:
    """Intercept and slope (slope at least 0) through two points."""
    b = max((y1 - y0) / (x1 - x0), 0.0) if x1 != x0 else 0.0
    return max(y0 - b * x0, 0.0), b


def projection(
    lo: Mapping[str, Any],
    hi: Mapping[str, Any],
    tasks_hi: pl.DataFrame,
    real_runs: int,
    workers: Sequence[int],
    dispatch_s: float,
    bytes_factor: float = 1.0,
    dtw_comparisons: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The real dataset's reproduction on each of ``workers`` (0: in process), in hours.

    ``lo``/``hi``: two in-process reproductions of the proxy (``runs``, ``notebook_seconds``,
    ``map_steps`` as ``public_scale.py`` measures them); ``tasks_hi``: the larger one's task
    log. Map steps: the larger one's tasks, cycled to ``real_runs`` tasks per step per run of
    the proxy (a step with two tasks a run keeps two), each × ``bytes_factor`` (the real files'
    mean size over the proxy's). A notebook's serial seconds: a line through the two scales in
    runs, its part per run × ``bytes_factor``; notebook 05's in comparisons (``dtw_comparisons``:
    the proxy's comparisons per run at ``lo`` and ``hi``; the real one
    :data:`DTW_COMPARISONS_REAL`), of traces resampled to one length whatever the file's size."""
    steps = steps_of(tasks_hi)
    per_run = {nb: {t: len(v) / hi["runs"] for t, v in st.items()} for nb, st in steps.items()}
    real_steps = {
        nb: {t: [d * bytes_factor for d in _cycled(v, round(per_run[nb][t] * real_runs))]
             for t, v in st.items()}
        for nb, st in steps.items()
    }
    s_lo = serial_seconds(lo["notebook_seconds"], _steps_from_budget(lo))
    s_hi = serial_seconds(hi["notebook_seconds"], steps)
    serial, lines = {}, {}
    for nb in s_hi:
        x0, x1, x = lo["runs"], hi["runs"], real_runs
        if nb == DTW_NOTEBOOK and dtw_comparisons:
            x0, x1 = lo["runs"] * dtw_comparisons[0], hi["runs"] * dtw_comparisons[1]
            x = real_runs * DTW_COMPARISONS_REAL
        a, b = _fit_line(x0, s_lo.get(nb, 0.0), x1, s_hi[nb])
        dtw = nb == DTW_NOTEBOOK and dtw_comparisons
        unit = "run x comparison" if dtw else "run"
        lines[nb] = {"fixed_s": round(a, 2), "per_unit_s": round(b, 5), "unit": unit}
        # a run's share grows with its samples; 05's comparisons are of traces resampled to one length
        serial[nb] = a + b * x * (1.0 if dtw else bytes_factor)
    hours = {
        str(n): round(model_wall(real_steps, serial, n, dispatch_s) / 3600, 2) for n in workers
    }
    map_h = sum(sum(v) for st in real_steps.values() for v in st.values()) / 3600
    return {
        "real_runs": real_runs,
        "bytes_factor": round(bytes_factor, 3),
        "dispatch_s": dispatch_s,
        "hours": hours,
        "map_steps_h_in_process": round(map_h, 2),
        "serial_h": round(sum(serial.values()) / 3600, 2),
        "serial_by_notebook_h": {nb: round(s / 3600, 3) for nb, s in sorted(serial.items())},
        "serial_lines": lines,
    }


def _steps_from_budget(measured: Mapping[str, Any]) -> dict[str, dict[str, list[float]]]:
    """A reproduction's map steps as totals (one 'task' of the step's whole seconds) from its
    ``map_steps`` budget: enough for :func:`serial_seconds`."""
    ms = measured.get("map_steps") or {}
    runs = ms.get("runs") or measured.get("runs") or 0
    out: dict[str, dict[str, list[float]]] = {}
    for s in ms.get("steps", []):
        out.setdefault(s["notebook"], {})[s["task"]] = [float(s["seconds_per_run"] or 0.0) * runs]
    return out


def mean_member_bytes(data: Path) -> float:
    """The mean uncompressed size of the run files in a public-layout folder's zips."""
    import zipfile

    sizes = [
        i.file_size
        for z in sorted(Path(data).glob("Reveal_*.zip"))
        for i in zipfile.ZipFile(z).infolist()
        if i.filename.endswith(".txt")
    ]
    return sum(sizes) / len(sizes) if sizes else 0.0
