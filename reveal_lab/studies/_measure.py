"""Reproduce measures what it reports (§5.3): a short collector-overhead run on this
machine (the collector beside a bare ``perf stat -I``, at 100 and 600 ms, as Fig. 5) and
the pipeline's run times per window (features with our kernels and with tsfresh, Parquet,
each detector, end to end), each row marked with the machine it ran on (CPU model,
cores, load average before and after).

Both are bounded in time (``seconds`` per interval; a fixed number of windows), so the
numbers are indicative: on a shared machine they carry its load, which is recorded.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from reveal_lab.machine import machine_info

__all__ = [
    "machine_info",
    "machine_label",
    "measure_collector_overhead",
    "measure_runtimes",
    "overhead_comparison",
    "OVERHEAD_COLUMNS",
    "RUNTIME_COLUMNS",
]

OVERHEAD_COLUMNS = ("interval_ms", "process", "pct_of_core", "bytes_per_s", "channels", "seconds", "machine", "note")
RUNTIME_COLUMNS = ("step", "seconds", "std", "per", "n", "repeats", "machine", "note")
#: perf stat's events here: software events (hardware counters are often not exposed in VMs)
PERF_EVENTS = "task-clock,context-switches,cpu-migrations,page-faults"
_CLI = [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())"]
_TICK = os.sysconf("SC_CLK_TCK")


def machine_label(before: dict[str, object], after: dict[str, object] | None = None) -> str:
    """``"<model>, <n> cores, load 1-min x → y"``: the ``machine`` column of a measurement."""
    lb = before["loadavg"][0]  # type: ignore[index]
    la = (after or before)["loadavg"][0]  # type: ignore[index]
    return f"{before['cpu_model']}, {before['cores']} cores, load avg (1 min) {lb} → {la}"


def _tree(pid: int) -> list[int]:
    out = [pid]
    for t in glob.glob(f"/proc/{pid}/task/*/children"):
        with contextlib.suppress(OSError, ValueError):
            out += [q for k in Path(t).read_text().split() for q in _tree(int(k))]
    return out


def _cpu_seconds(pid: int, seen: dict[str, float]) -> float:
    """On-CPU seconds of ``pid`` and its children: each thread's scheduler time, remembered
    in ``seen`` (thread -> last value) across calls, so a thread that exits between two
    readings keeps what it had used and the difference never goes negative (the
    collector's start-up thread exits after handing over to the compiled loop)."""
    for p in _tree(pid):
        for t in glob.glob(f"/proc/{p}/task/*"):
            try:
                ns = int(Path(t, "schedstat").read_text().split()[0])
            except (OSError, IndexError, ValueError):
                try:
                    f = Path(t, "stat").read_text().rsplit(")", 1)[1].split()
                    ns = int((int(f[11]) + int(f[12])) / _TICK * 1e9)
                except (OSError, IndexError, ValueError):
                    continue
            seen[t] = max(seen.get(t, 0.0), ns / 1e9)
    return sum(seen.values())


def _stop(p: subprocess.Popen, timeout_s: float = 20.0) -> None:
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout_s)


def _wait_for(path: Path, proc: subprocess.Popen, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def _folder_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def measure_collector_overhead(
    intervals_ms: Sequence[int] = (100, 600),
    *,
    seconds: float = 8.0,
    warmup_s: float = 2.0,
    probes: str = "procfs",
    perf_interval_ms: int | None = 100,
    start_timeout_s: float = 60.0,
) -> pl.DataFrame:
    """CPU (% of one core) of ``reveal-lab collect --probes PROBES`` at each interval,
    and of a bare ``perf stat -I`` at ``perf_interval_ms`` running beside the collector
    at that interval, over ``seconds`` after ``warmup_s`` (start-up excluded), with the
    collector's bytes on disk per second. Columns :data:`OVERHEAD_COLUMNS`.

    All processes run at once and are measured over the same window, so the whole
    measurement takes about ``warmup_s + seconds`` plus one collector start-up.
    A process that cannot run here (e.g. ``perf`` missing or not permitted) gives a row
    with an empty value and a note saying why.
    """
    if seconds <= 0 or warmup_s < 0:
        raise ValueError(f"seconds must be > 0 and warmup_s >= 0, got {seconds}, {warmup_s}")
    before = machine_info()
    rows: list[dict[str, object]] = []
    perf = shutil.which("perf")
    work = Path(tempfile.mkdtemp(prefix="reveal-lab-overhead-"))
    procs: dict[tuple[float, str], subprocess.Popen] = {}
    outs: dict[float, Path] = {}
    notes: dict[tuple[float, str], str] = {}
    try:
        # every process at once, measured over the same window (start-up is the slow part)
        for iv in intervals_ms:
            outs[float(iv)] = work / f"run-{iv}"
            procs[(float(iv), "collector")] = subprocess.Popen(
                [*_CLI, "collect", "--out", str(outs[float(iv)]), "--interval", f"{iv}ms", "--probes", probes],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        if perf_interval_ms is not None:
            key = (float(perf_interval_ms), "perf stat")
            if perf is None:
                notes[key] = "perf is not installed here"
            else:
                procs[key] = subprocess.Popen(
                    [perf, "stat", "-I", str(perf_interval_ms), "-x,", "-a", "-e", PERF_EVENTS, "-o", os.devnull],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
        deadline = time.monotonic() + start_timeout_s
        for iv, out in outs.items():
            p = procs[(iv, "collector")]
            if not _wait_for(out / "channels.json", p, max(deadline - time.monotonic(), 0.0)):
                notes[(iv, "collector")] = f"did not start within {start_timeout_s:g} s"
        time.sleep(warmup_s)
        live = {k: p for k, p in procs.items() if p.poll() is None and k not in notes}
        for k, p in procs.items():
            if k not in live and k not in notes:
                err = p.stderr.read()[-300:].decode(errors="replace").strip() if p.stderr else ""
                notes[k] = f"exited with {p.returncode}: {err}"
        seen: dict[tuple[float, str], dict[str, float]] = {k: {} for k in live}
        c0 = {k: _cpu_seconds(p.pid, seen[k]) for k, p in live.items()}
        b0, t0 = {iv: _folder_bytes(o) for iv, o in outs.items()}, time.monotonic()
        time.sleep(seconds)
        c1 = {k: _cpu_seconds(p.pid, seen[k]) for k, p in live.items()}
        b1, t1 = {iv: _folder_bytes(o) for iv, o in outs.items()}, time.monotonic()
        for (iv, name) in live:
            channels = None
            if name == "collector":
                with contextlib.suppress(OSError, ValueError):
                    channels = len(json.loads((outs[iv] / "channels.json").read_text()))
            rows.append(
                {
                    "interval_ms": iv,
                    "process": name,
                    "pct_of_core": 100.0 * (c1[(iv, name)] - c0[(iv, name)]) / (t1 - t0),
                    "bytes_per_s": (b1[iv] - b0[iv]) / (t1 - t0) if name == "collector" else None,
                    "channels": channels,
                    "seconds": round(t1 - t0, 2),
                    "note": f"probes {probes}" if name == "collector" else f"events {PERF_EVENTS}",
                }
            )
    finally:
        for p in procs.values():
            _stop(p)
            if p.stderr:
                p.stderr.close()
        shutil.rmtree(work, ignore_errors=True)
    for (iv, name), why in notes.items():
        rows.append({"interval_ms": iv, "process": name, "seconds": None, "note": why})
    rows.sort(key=lambda r: (r["interval_ms"], r["process"]))
    label = machine_label(before, machine_info())
    schema = {c: pl.Float64 for c in ("interval_ms", "pct_of_core", "bytes_per_s", "seconds")} | {
        "process": pl.String,
        "channels": pl.Int64,
        "machine": pl.String,
        "note": pl.String,
    }
    df = pl.DataFrame([{**r, "machine": label} for r in rows], schema=schema)
    return df.select(OVERHEAD_COLUMNS)


def _timed(fn, repeat: int = 1) -> list[float]:  # noqa: ANN001
    """Seconds of each of ``repeat`` calls of ``fn``."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def _mean_std(times: Sequence[float], per: int = 1) -> tuple[float, float | None]:
    """Mean and sample standard deviation of ``times`` divided by ``per`` (``None`` for one time).

    >>> _mean_std([2.0, 4.0], per=2)
    (1.5, 0.7071067811865476)
    """
    a = np.asarray(times, dtype=np.float64) / per
    return float(a.mean()), (float(a.std(ddof=1)) if a.size > 1 else None)


def measure_runtimes(
    run,  # noqa: ANN001
    *,
    max_windows: int = 60,
    tsfresh_channels: int | None = None,
    tsfresh_windows: int = 2,
    preset: str = "smoke",
    repeat: int = 3,
) -> pl.DataFrame:
    """Run times on this machine for one run (``run``: a :class:`reveal_lab.io.Run`),
    on its first ``max_windows`` 3 s / 1 s windows: feature extraction per window with
    our kernels and with tsfresh (each of the first ``tsfresh_windows`` windows timed on
    its own, on ``tsfresh_channels`` channels, ``None``: all of them), writing the features
    as Parquet per window, each detector's fit + score, and
    :func:`reveal_lab.pipeline.detect_run` end to end per window (``preset``'s detector
    settings). Each step runs ``repeat`` times: ``seconds`` is the mean, ``std`` the sample
    standard deviation over the repeats (tsfresh: over its windows). Columns
    :data:`RUNTIME_COLUMNS`.
    """
    from reveal_lab.config import get_preset
    from reveal_lab.detectors import IsolationForestDetector, PCAMahalanobisDetector, ZScoreDetector
    from reveal_lab.features import make_windows, window_features
    from reveal_lab.pipeline import detect_run
    from reveal_lab.telemetry import Run

    before = machine_info()
    frame = run.frame
    wins = make_windows(frame).head(max_windows)
    if wins.height < 2:
        raise ValueError(f"run {run.run_id!r}: {wins.height} window(s); at least 2 are needed to time detectors")
    end = wins["end"].max()
    frame = frame.filter(pl.col("timestamp") < end)
    part = Run(run.meta, frame, [])
    window_features(frame.head(60))  # compile the kernels outside the timing
    wf = None

    def features() -> None:
        nonlocal wf
        wf = window_features(frame, windows=wins)

    t_feat = _timed(features, repeat)
    assert wf is not None
    n, n_ch = wf.n_windows, len(wf.pairs["metric"].unique()) if "metric" in wf.pairs.columns else wf.X.shape[1]
    rows = [("features_per_window", *_mean_std(t_feat, n), "window", n, repeat,
             f"numba kernels, {n_ch} channels, {wf.X.shape[1]} features")]
    X = wf.imputed() if hasattr(wf, "imputed") else np.nan_to_num(wf.X)
    with tempfile.TemporaryDirectory(prefix="reveal-lab-parquet-") as d:
        cols = {f"f{i}": X[:, i] for i in range(X.shape[1])}
        t_pq = _timed(lambda: pl.DataFrame(cols).write_parquet(Path(d) / "features.parquet"), repeat)
    rows.append(("parquet_per_window", *_mean_std(t_pq, n), "window", n, repeat,
                 "window features written as one Parquet file"))
    try:
        import tsfresh  # noqa: F401

        metrics = [c for c in frame.columns if c != "timestamp"][:tsfresh_channels]
        some = wins.head(max(int(tsfresh_windows), 1))
        times = []
        for i in range(some.height):
            one = some.slice(i, 1)
            sub = frame.select("timestamp", *metrics).filter(
                (pl.col("timestamp") >= one["start"][0]) & (pl.col("timestamp") < one["end"][0]))
            times += _timed(lambda sub=sub, one=one: window_features(sub, windows=one, backend="tsfresh"))
        rows.append(("tsfresh_per_window", *_mean_std(times), "window", len(times), 1,
                     f"tsfresh on {len(metrics)} channels, each of {len(times)} windows timed on its own"))
    except ImportError:
        rows.append(("tsfresh_per_window", None, None, "window", 0, 0, "tsfresh is not installed (extra 'studies')"))
    for name, det in (
        ("zscore", ZScoreDetector()),
        ("mahalanobis", PCAMahalanobisDetector()),
        ("iforest", IsolationForestDetector()),
    ):
        t = _timed(lambda det=det: det.fit(X).decision_function(X), repeat)
        rows.append((name, *_mean_std(t), "run", n, repeat, f"fit + score of {n} windows × {X.shape[1]} features"))
    pr = get_preset(preset)
    t_e2e = _timed(lambda: detect_run(part, preset=pr), repeat)
    rows.append(("end_to_end_per_window", *_mean_std(t_e2e, n), "window", n, repeat,
                 f"detect_run ({preset} preset) on {n} windows"))
    label = machine_label(before, machine_info())
    return pl.DataFrame(
        [dict(zip(RUNTIME_COLUMNS, (*r[:6], label, r[6]), strict=True)) for r in rows],
        schema={"step": pl.String, "seconds": pl.Float64, "std": pl.Float64, "per": pl.String, "n": pl.Int64,
                "repeats": pl.Int64, "machine": pl.String, "note": pl.String},
    )


def overhead_comparison(measured: pl.DataFrame, stored: pl.DataFrame | None = None, *, stored_label: str = "stored benchmark") -> pl.DataFrame:
    """Fig. 5's data: the collector's CPU per interval and perf stat's, measured here
    (:func:`measure_collector_overhead`) and, beside it, from the stored benchmark
    (:func:`reveal_lab.studies.collector_overhead_table`: its ``procfs`` collector and
    bare ``perf``). Columns ``source, process, interval_ms, pct_of_core``.

    >>> m = pl.DataFrame({"interval_ms": [100.0, 100.0], "process": ["collector", "perf stat"],
    ...                   "pct_of_core": [0.5, 0.2]})
    >>> s = pl.DataFrame({"interval_ms": [100.0, 100.0, 100.0], "process": ["procfs", "perf", "loop"],
    ...                   "pct_of_core": [0.4, 0.3, 0.1]})
    >>> overhead_comparison(m, s).rows()
    [('measured here', 'collector', 100.0, 0.5), ('measured here', 'perf stat', 100.0, 0.2), ('stored benchmark', 'collector', 100.0, 0.4), ('stored benchmark', 'perf stat', 100.0, 0.3)]
    """
    cols = ["source", "process", "interval_ms", "pct_of_core"]
    parts = [
        measured.filter(pl.col("pct_of_core").is_not_null()).select(
            pl.lit("measured here").alias("source"), "process", "interval_ms", "pct_of_core"
        )
    ]
    if stored is not None and stored.height:
        names = {"procfs": "collector", "perf": "perf stat"}
        parts.append(
            stored.filter(pl.col("process").is_in(list(names)))
            .select(
                pl.lit(stored_label).alias("source"),
                pl.col("process").replace_strict(names),
                pl.col("interval_ms").cast(pl.Float64),
                pl.col("pct_of_core").cast(pl.Float64),
            )
        )
    return pl.concat(parts, how="vertical").select(cols).sort("source", "process", "interval_ms")
