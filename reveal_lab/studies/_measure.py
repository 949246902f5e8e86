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
import dataclasses
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

from reveal_lab.machine import machine_info

__all__ = [
    "machine_info",
    "machine_label",
    "measure_collector_overhead",
    "measure_runtimes",
    "overhead_comparison",
    "check_overhead",
    "gate_note",
    "mean_interval",
    "overhead_problems",
    "quiet_gate",
    "sd_interval",
    "LEVEL",
    "MIN_INTERVAL_COST_RATIO",
    "OVERHEAD_COLUMNS",
    "OVERHEAD_REPEAT_COLUMNS",
    "OverheadMeasurement",
    "RUNTIME_COLUMNS",
]

OVERHEAD_COLUMNS = (
    "interval_ms",
    "process",
    "pct_of_core",
    "pct_lo",
    "pct_hi",
    "pct_sd",
    "repeats",
    "bytes_per_s",
    "channels",
    "seconds",
    "quiet",
    "machine",
    "note",
)
#: one row per repeated window of :func:`measure_collector_overhead`
OVERHEAD_REPEAT_COLUMNS = (
    "interval_ms",
    "process",
    "repeat",
    "pct_of_core",
    "bytes_per_s",
    "seconds",
    "loadavg",
)
RUNTIME_COLUMNS = (
    "step",
    "seconds",
    "lo",
    "hi",
    "std",
    "std_lo",
    "std_hi",
    "per",
    "n",
    "repeats",
    "quiet",
    "machine",
    "note",
)
#: the confidence level of the live measurements' intervals
LEVEL = 0.95
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


def quiet_gate(
    max_load_per_core: float = 0.5, *, timeout_s: float = 60.0, poll_s: float = 1.0
) -> dict[str, object]:
    """Wait until this machine is quiet: its 1-minute load average per core at most
    ``max_load_per_core``, for at most ``timeout_s`` seconds. Returns ``quiet`` (whether
    it got there), ``load`` (the 1-minute load average when it stopped waiting),
    ``cores``, ``limit`` (the load it waited for) and ``waited_s``.

    >>> g = quiet_gate(1e9, timeout_s=0)
    >>> g["quiet"], g["waited_s"]
    (True, 0.0)
    """
    cores = os.cpu_count() or 1
    limit = max_load_per_core * cores
    t0 = time.monotonic()
    while True:
        load = os.getloadavg()[0]
        waited = round(time.monotonic() - t0, 1)
        if load <= limit or waited >= timeout_s:
            return {
                "quiet": load <= limit,
                "load": round(load, 2),
                "cores": cores,
                "limit": round(limit, 2),
                "waited_s": waited,
            }
        time.sleep(min(poll_s, max(timeout_s - waited, 0.0)))


def gate_note(gate: dict[str, object]) -> str:
    """The quiet gate's outcome in words, for a measurement's ``note``.

    >>> gate_note({"quiet": False, "load": 3.1, "limit": 1.0, "waited_s": 60.0})
    'NOT quiet: load avg (1 min) 3.1 > 1 after waiting 60 s'
    """
    if gate["quiet"]:
        return (f"quiet gate passed: load avg (1 min) {gate['load']:g} <= {gate['limit']:g} "
                f"after {gate['waited_s']:g} s")
    return (f"NOT quiet: load avg (1 min) {gate['load']:g} > {gate['limit']:g} "
            f"after waiting {gate['waited_s']:g} s")


def mean_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float, float, float]:
    """Mean, its Student-t interval at ``level`` (lower, upper) and the sample standard
    deviation of ``values``; one value: its interval is that value.

    >>> m, lo, hi, sd = mean_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> m, round(lo, 3), round(hi, 3), round(sd, 3)
    (3.0, 1.037, 4.963, 1.581)
    """
    from scipy import stats

    a = np.asarray(values, dtype=np.float64)
    m = float(a.mean())
    if a.size < 2:
        return m, m, m, 0.0
    sd = float(a.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, a.size - 1)) * sd / math.sqrt(a.size)
    return m, m - half, m + half, sd


def sd_interval(
    values: Sequence[float], level: float = LEVEL
) -> tuple[float | None, float | None, float | None]:
    """Sample standard deviation of ``values`` and its chi-square interval at ``level``
    (``None`` for fewer than two values).

    >>> sd, lo, hi = sd_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> round(sd, 3), round(lo, 3), round(hi, 3)
    (1.581, 0.947, 4.543)
    """
    from scipy import stats

    a = np.asarray(values, dtype=np.float64)
    if a.size < 2:
        return None, None, None
    sd, k = float(a.std(ddof=1)), a.size - 1
    lo = sd * math.sqrt(k / float(stats.chi2.ppf(0.5 + level / 2, k)))
    hi = sd * math.sqrt(k / float(stats.chi2.ppf(0.5 - level / 2, k)))
    return sd, lo, hi


def _settle(
    live: dict[tuple[float, str], subprocess.Popen],
    seen: dict[tuple[float, str], dict[str, float]],
    *,
    settle_pct: float,
    timeout_s: float,
    slice_s: float = 1.0,
    calm: int = 3,
) -> dict[tuple[float, str], float | None]:
    """Wait until every process of ``live`` is past its start-up: ``calm`` consecutive
    slices of ``slice_s`` each at most ``settle_pct`` % of a core (the collector loads and
    compiles its hot loop at a whole core for seconds after its first sample). Returns
    each process's seconds to settle, ``None`` for one that had not settled after
    ``timeout_s``."""
    t0 = time.monotonic()
    run = {k: 0 for k in live}
    settled: dict[tuple[float, str], float | None] = {k: None for k in live}
    prev = {k: _cpu_seconds(p.pid, seen[k]) for k, p in live.items()}
    tp = time.monotonic()
    while any(v is None for v in settled.values()) and time.monotonic() - t0 < timeout_s:
        time.sleep(slice_s)
        now = {k: _cpu_seconds(p.pid, seen[k]) for k, p in live.items()}
        t = time.monotonic()
        for k in live:
            if settled[k] is not None:
                continue
            pct = 100.0 * (now[k] - prev[k]) / (t - tp)
            run[k] = run[k] + 1 if pct <= settle_pct else 0
            if run[k] >= calm:
                settled[k] = round(t - t0, 1)
        prev, tp = now, t
    return settled


class OverheadMeasurement(NamedTuple):
    """:func:`measure_collector_overhead`'s result: one row per process and interval
    (:data:`OVERHEAD_COLUMNS`), one per repeat (:data:`OVERHEAD_REPEAT_COLUMNS`), the
    quiet gate's outcome (:func:`quiet_gate`)."""

    table: pl.DataFrame
    repeats: pl.DataFrame
    gate: dict[str, object]


def measure_collector_overhead(
    intervals_ms: Sequence[int] = (100, 600),
    *,
    seconds: float = 6.0,
    repeats: int = 5,
    probes: str = "procfs",
    perf_interval_ms: int | None = 100,
    start_timeout_s: float = 60.0,
    settle_pct: float = 20.0,
    quiet_load: float = 0.5,
    quiet_timeout_s: float = 60.0,
    level: float = LEVEL,
) -> OverheadMeasurement:
    """CPU (% of one core) of ``reveal-lab collect --probes PROBES`` at each interval,
    and of a bare ``perf stat -I`` at ``perf_interval_ms`` running beside the collectors,
    with the collector's bytes on disk per second.

    First the quiet gate (:func:`quiet_gate` at ``quiet_load`` per core, up to
    ``quiet_timeout_s``); then every process starts at once; the measurement begins once
    each is past its start-up (:func:`_settle`: ``settle_pct`` % of a core or less for
    3 s in a row, up to ``start_timeout_s``), so loading and compiling the collector's hot
    loop is outside it. Then ``repeats`` consecutive windows of ``seconds`` each, every
    process measured over the same window: ``pct_of_core`` is the mean over the windows,
    ``pct_lo``/``pct_hi`` its Student-t interval at ``level``, ``pct_sd`` their standard
    deviation. A process that cannot run or did not settle here gives a row with an
    empty value and a note saying why.

    One long function: the measurement's steps in the order they run (quiet gate, start-up excluded,
    repeats, intervals, sanity check), kept together so the timing reads top to bottom.
    """
    if seconds <= 0 or repeats < 2:
        raise ValueError(f"seconds must be > 0 and repeats >= 2, got {seconds}, {repeats}")
    gate = quiet_gate(quiet_load, timeout_s=quiet_timeout_s)
    before = machine_info()
    rows: list[dict[str, object]] = []
    per: list[dict[str, object]] = []
    perf = shutil.which("perf")
    work = Path(tempfile.mkdtemp(prefix="reveal-lab-overhead-"))
    procs: dict[tuple[float, str], subprocess.Popen] = {}
    outs: dict[float, Path] = {}
    notes: dict[tuple[float, str], str] = {}
    try:
        for iv in intervals_ms:
            outs[float(iv)] = work / f"run-{iv}"
            procs[(float(iv), "collector")] = subprocess.Popen(
                [
                    *_CLI,
                    "collect",
                    "--out",
                    str(outs[float(iv)]),
                    "--interval",
                    f"{iv}ms",
                    "--probes",
                    probes,
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        if perf_interval_ms is not None:
            key = (float(perf_interval_ms), "perf stat")
            if perf is None:
                notes[key] = "perf is not installed here"
            else:
                procs[key] = subprocess.Popen(
                    [
                        perf,
                        "stat",
                        "-I",
                        str(perf_interval_ms),
                        "-x,",
                        "-a",
                        "-e",
                        PERF_EVENTS,
                        "-o",
                        os.devnull,
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
        deadline = time.monotonic() + start_timeout_s
        for iv, out in outs.items():
            p = procs[(iv, "collector")]
            if not _wait_for(out / "channels.json", p, max(deadline - time.monotonic(), 0.0)):
                notes[(iv, "collector")] = f"did not start within {start_timeout_s:g} s"
        live = {k: p for k, p in procs.items() if p.poll() is None and k not in notes}
        seen: dict[tuple[float, str], dict[str, float]] = {k: {} for k in live}
        settled = _settle(live, seen, settle_pct=settle_pct, timeout_s=max(deadline - time.monotonic(), 3.0))
        for k, p in procs.items():
            if k in notes:
                continue
            if p.poll() is not None:
                err = p.stderr.read()[-300:].decode(errors="replace").strip() if p.stderr else ""
                notes[k] = f"exited with {p.returncode}: {err}"
            elif settled.get(k) is None:
                notes[k] = (
                    f"still above {settle_pct:g} % of a core {start_timeout_s:g} s after start "
                    "(start-up not over)"
                )
        live = {k: p for k, p in live.items() if k not in notes}
        for i in range(repeats):
            c0 = {k: _cpu_seconds(p.pid, seen[k]) for k, p in live.items()}
            b0, t0 = {iv: _folder_bytes(o) for iv, o in outs.items()}, time.monotonic()
            time.sleep(seconds)
            c1 = {k: _cpu_seconds(p.pid, seen[k]) for k, p in live.items()}
            b1, t1 = {iv: _folder_bytes(o) for iv, o in outs.items()}, time.monotonic()
            for iv, name in live:
                per.append(
                    {
                        "interval_ms": iv,
                        "process": name,
                        "repeat": i + 1,
                        "pct_of_core": 100.0 * (c1[(iv, name)] - c0[(iv, name)]) / (t1 - t0),
                        "bytes_per_s": (b1[iv] - b0[iv]) / (t1 - t0) if name == "collector" else None,
                        "seconds": round(t1 - t0, 3),
                        "loadavg": round(os.getloadavg()[0], 2),
                    }
                )
        for iv, name in live:
            channels = None
            if name == "collector":
                with contextlib.suppress(OSError, ValueError):
                    channels = len(json.loads((outs[iv] / "channels.json").read_text()))
            mine = [r for r in per if r["interval_ms"] == iv and r["process"] == name]
            m, lo, hi, sd = mean_interval([float(r["pct_of_core"]) for r in mine], level)
            total_s = sum(float(r["seconds"]) for r in mine)
            rows.append(
                {
                    "interval_ms": iv,
                    "process": name,
                    "pct_of_core": m,
                    "pct_lo": lo,
                    "pct_hi": hi,
                    "pct_sd": sd,
                    "repeats": len(mine),
                    "bytes_per_s": (
                        sum(float(r["bytes_per_s"]) * float(r["seconds"]) for r in mine) / total_s
                        if name == "collector"
                        else None
                    ),
                    "channels": channels,
                    "seconds": round(total_s, 2),
                    "note": (f"probes {probes}" if name == "collector" else f"events {PERF_EVENTS}")
                    + f"; settled {settled[(iv, name)]:g} s after start; "
                    + f"{len(mine)} windows of {seconds:g} s; "
                    f"{level:.0%} t-interval; {gate_note(gate)}",
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
    schema = {
        c: pl.Float64
        for c in ("interval_ms", "pct_of_core", "pct_lo", "pct_hi", "pct_sd", "bytes_per_s", "seconds")
    } | {
        "process": pl.String,
        "repeats": pl.Int64,
        "channels": pl.Int64,
        "quiet": pl.Boolean,
        "machine": pl.String,
        "note": pl.String,
    }
    table = pl.DataFrame([{**r, "machine": label, "quiet": bool(gate["quiet"])} for r in rows], schema=schema)
    rep_schema = {
        "interval_ms": pl.Float64,
        "process": pl.String,
        "repeat": pl.Int64,
        "pct_of_core": pl.Float64,
        "bytes_per_s": pl.Float64,
        "seconds": pl.Float64,
        "loadavg": pl.Float64,
    }
    rep = pl.DataFrame(per, schema=rep_schema).sort("interval_ms", "process", "repeat")
    return OverheadMeasurement(table.select(OVERHEAD_COLUMNS), rep.select(OVERHEAD_REPEAT_COLUMNS), gate)


#: the smallest ratio of the collector's CPU at its shortest interval to that at its longest
#: that a measurement may show, for intervals at least 3x apart: the shorter interval reads
#: every probe several times as often, so an equal cost means something else was measured
#: (the collector's start-up); a fixed cost per second (flushing) keeps it under the
#: intervals' ratio, not near 1
MIN_INTERVAL_COST_RATIO = 1.5


def overhead_problems(table: pl.DataFrame, *, cores: int | None = None) -> list[str]:
    """What makes a collector-overhead table (:func:`measure_collector_overhead`) impossible:
    a negative cost or one above every core; the collector costing about the same at its
    shortest and longest interval (at least 3x apart: under :data:`MIN_INTERVAL_COST_RATIO`
    times), or writing no more bytes per second at the shorter one; an interval that does
    not contain its mean. Empty when nothing is.

    >>> ok = pl.DataFrame({"interval_ms": [100.0, 600.0], "process": ["collector"] * 2,
    ...                    "pct_of_core": [0.5, 0.12], "pct_lo": [0.45, 0.1], "pct_hi": [0.55, 0.14],
    ...                    "bytes_per_s": [5000.0, 900.0]})
    >>> overhead_problems(ok)
    []
    >>> flat = ok.with_columns(pl.Series("pct_of_core", [0.5, 0.45]))
    >>> overhead_problems(flat)[0].split(":")[0]
    'the collector costs 0.5 % of a core at 100 ms and 0.45 % at 600 ms'

    """
    cores = cores or os.cpu_count() or 1
    out: list[str] = []
    got = table.filter(pl.col("pct_of_core").is_not_null())
    for r in got.iter_rows(named=True):
        if not 0.0 <= r["pct_of_core"] <= 100.0 * cores:
            out.append(
                f"{r['process']} at {r['interval_ms']:g} ms costs {r['pct_of_core']:.3g} % of a core, "
                f"outside 0-{100 * cores} % on {cores} cores"
            )
    col = got.filter(pl.col("process") == "collector").sort("interval_ms")
    if col.height >= 2 and col["interval_ms"][-1] >= 3 * col["interval_ms"][0]:
        a, b = col.row(0, named=True), col.row(-1, named=True)
        if a["pct_of_core"] < MIN_INTERVAL_COST_RATIO * b["pct_of_core"]:
            out.append(
                f"the collector costs {a['pct_of_core']:.3g} % of a core at {a['interval_ms']:g} ms and "
                f"{b['pct_of_core']:.3g} % at {b['interval_ms']:g} ms: reading "
                f"{b['interval_ms'] / a['interval_ms']:g}x as often must cost at least "
                f"{MIN_INTERVAL_COST_RATIO:g}x as much (start-up inside the measured window?)"
            )
        ba, bb = a.get("bytes_per_s"), b.get("bytes_per_s")
        if ba is not None and bb is not None and ba <= bb:
            out.append(
                f"the collector writes {ba:.0f} B/s at {a['interval_ms']:g} ms, no more than {bb:.0f} B/s "
                f"at {b['interval_ms']:g} ms"
            )
    if {"pct_lo", "pct_hi"} <= set(got.columns):
        bad = got.filter(
            ~pl.col("pct_of_core").is_between(pl.col("pct_lo") - 1e-12, pl.col("pct_hi") + 1e-12)
        )
        for r in bad.iter_rows(named=True):
            out.append(
                f"interval of {r['process']} at {r['interval_ms']:g} ms "
                f"({r['pct_lo']:.3g}-{r['pct_hi']:.3g}) "
                f"does not contain its mean {r['pct_of_core']:.3g}"
            )
    return out


def check_overhead(table: pl.DataFrame) -> pl.DataFrame:
    """``table`` when :func:`overhead_problems` finds nothing; else ``ValueError`` listing
    what is impossible (the notebook fails rather than publish it)."""
    problems = overhead_problems(table)
    if problems:
        raise ValueError("impossible collector-overhead measurement: " + "; ".join(problems))
    return table


def _timed(fn, repeat: int = 1, *, warm: bool = True) -> list[float]:  # noqa: ANN001
    """Seconds of each of ``repeat`` calls ``fn(i)`` (``i`` = 1 … ``repeat``), after one
    untimed call ``fn(0)`` when ``warm`` (imports, compiled code and first-touch caches
    outside the timing). ``fn`` takes the call's number, so a step with a cache keyed by its
    inputs can vary a seed and be timed doing the work each time.

    >>> calls = []
    >>> len(_timed(calls.append, 3)), calls
    (3, [0, 1, 2, 3])
    """
    if warm:
        fn(0)
    times = []
    for i in range(1, repeat + 1):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
    return times


def _stats(times: Sequence[float], per: int = 1, level: float = LEVEL) -> tuple[float | None, ...]:
    """Of ``times`` divided by ``per``: the mean and its t-interval (lower, upper), the
    sample standard deviation and its chi-square interval (``None`` for one time).

    >>> [round(v, 3) for v in _stats([2.0, 4.0, 6.0, 8.0, 10.0], per=2)]
    [3.0, 1.037, 4.963, 1.581, 0.947, 4.543]
    """
    a = np.asarray(times, dtype=np.float64) / per
    m, lo, hi, _ = mean_interval(a, level)
    sd, sd_lo, sd_hi = sd_interval(a, level)
    return (m, lo, hi, sd, sd_lo, sd_hi) if a.size > 1 else (m, None, None, None, None, None)


def measure_runtimes(
    run,  # noqa: ANN001
    *,
    max_windows: int = 60,
    tsfresh_channels: int | None = None,
    tsfresh_windows: int = 5,
    preset: str = "smoke",
    repeat: int = 5,
    level: float = LEVEL,
    quiet_load: float = 0.5,
    quiet_timeout_s: float = 0.0,
) -> pl.DataFrame:
    """Run times on this machine for one run (``run``: a :class:`reveal_lab.io.Run`),
    on its first ``max_windows`` 3 s / 1 s windows: feature extraction per window with
    our kernels and with tsfresh (each of the first ``tsfresh_windows`` windows timed on
    its own, on ``tsfresh_channels`` channels, ``None``: all of them), writing the features
    as Parquet per window, each detector's fit + score, and
    :func:`reveal_lab.pipeline.detect_run` end to end per window (``preset``'s detector
    settings). Each step runs ``repeat`` times (tsfresh: once on each of its windows):
    ``seconds`` is the mean, ``lo``/``hi`` its Student-t interval at ``level``, ``std`` the
    sample standard deviation and ``std_lo``/``std_hi`` its chi-square interval. Before
    timing, the quiet gate (:func:`quiet_gate` at ``quiet_load`` per core, up to
    ``quiet_timeout_s``): its outcome is in ``quiet`` and every row's note. Columns
    :data:`RUNTIME_COLUMNS`.

    One long function: the timings in the order they run (warm-up call, seeded repeats per stage,
    intervals), kept together so the timing reads top to bottom.
    """
    from reveal_lab.config import get_preset
    from reveal_lab.detectors import IsolationForestDetector, PCAMahalanobisDetector, ZScoreDetector
    from reveal_lab.features import make_windows, window_features
    from reveal_lab.pipeline import detect_run
    from reveal_lab.telemetry import Run

    gate = quiet_gate(quiet_load, timeout_s=quiet_timeout_s)
    before = machine_info()
    frame = run.frame
    wins = make_windows(frame).head(max_windows)
    if wins.height < 2:
        raise ValueError(
            f"run {run.run_id!r}: {wins.height} window(s); at least 2 are needed to time detectors"
        )
    end = wins["end"].max()
    frame = frame.filter(pl.col("timestamp") < end)
    part = Run(run.meta, frame, [])
    window_features(frame.head(60))  # compile the kernels outside the timing
    wf = None

    def features() -> None:
        nonlocal wf
        wf = window_features(frame, windows=wins)

    t_feat = _timed(lambda _: features(), repeat)
    assert wf is not None
    n, n_ch = (
        wf.n_windows,
        len(wf.pairs["metric"].unique()) if "metric" in wf.pairs.columns else wf.X.shape[1],
    )
    rows = [
        (
            "features_per_window",
            *_stats(t_feat, n, level),
            "window",
            n,
            repeat,
            f"numba kernels, {n_ch} channels, {wf.X.shape[1]} features",
        )
    ]
    X = wf.imputed() if hasattr(wf, "imputed") else np.nan_to_num(wf.X)
    with tempfile.TemporaryDirectory(prefix="reveal-lab-parquet-") as d:
        cols = {f"f{i}": X[:, i] for i in range(X.shape[1])}
        t_pq = _timed(lambda _: pl.DataFrame(cols).write_parquet(Path(d) / "features.parquet"), repeat)
    rows.append(
        (
            "parquet_per_window",
            *_stats(t_pq, n, level),
            "window",
            n,
            repeat,
            "window features written as one Parquet file",
        )
    )
    try:
        import tsfresh  # noqa: F401

        metrics = [c for c in frame.columns if c != "timestamp"][:tsfresh_channels]
        some = wins.head(max(int(tsfresh_windows), 1))
        times = []
        for i in range(some.height):
            one = some.slice(i, 1)
            sub = frame.select("timestamp", *metrics).filter(
                (pl.col("timestamp") >= one["start"][0]) & (pl.col("timestamp") < one["end"][0])
            )
            # the first window warms tsfresh up (imports, its pools) outside the timing
            times += _timed(
                lambda _, sub=sub, one=one: window_features(sub, windows=one, backend="tsfresh"), warm=i == 0
            )
        rows.append(
            (
                "tsfresh_per_window",
                *_stats(times, 1, level),
                "window",
                len(times),
                1,
                f"tsfresh on {len(metrics)} channels, each of {len(times)} windows timed on its own",
            )
        )
    except ImportError:
        rows.append(
            (
                "tsfresh_per_window",
                *([None] * 6),
                "window",
                0,
                0,
                "tsfresh is not installed (extra 'studies')",
            )
        )
    # each call its own seed: a forest fitted on the same windows with the same seed is reused
    # (fitted_isolation_forest), which would time a lookup, not a fit
    for name, make in (
        ("zscore", lambda i: ZScoreDetector()),
        ("mahalanobis", lambda i: PCAMahalanobisDetector()),
        ("iforest", lambda i: IsolationForestDetector(random_state=i)),
    ):
        t = _timed(lambda i, make=make: make(i).fit(X).decision_function(X), repeat)
        rows.append(
            (
                name,
                *_stats(t, 1, level),
                "run",
                n,
                repeat,
                f"fit + score of {n} windows × {X.shape[1]} features",
            )
        )
    pr = get_preset(preset)
    t_e2e = _timed(
        lambda i: detect_run(
            part,
            preset=dataclasses.replace(pr, detect=dataclasses.replace(pr.detect, seed=pr.detect.seed + i)),
        ),
        repeat,
    )
    rows.append(
        (
            "end_to_end_per_window",
            *_stats(t_e2e, n, level),
            "window",
            n,
            repeat,
            f"detect_run ({preset} preset) on {n} windows",
        )
    )
    label = machine_label(before, machine_info())
    return pl.DataFrame(
        [
            dict(
                zip(
                    RUNTIME_COLUMNS,
                    (*r[:10], bool(gate["quiet"]), label, f"{r[10]}; {gate_note(gate)}"),
                    strict=True,
                )
            )
            for r in rows
        ],
        schema={
            "step": pl.String,
            **{c: pl.Float64 for c in RUNTIME_COLUMNS[1:7]},
            "per": pl.String,
            "n": pl.Int64,
            "repeats": pl.Int64,
            "quiet": pl.Boolean,
            "machine": pl.String,
            "note": pl.String,
        },
    )


def overhead_comparison(
    measured: pl.DataFrame, stored: pl.DataFrame | None = None, *, stored_label: str = "stored benchmark"
) -> pl.DataFrame:
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
            stored.filter(pl.col("process").is_in(list(names))).select(
                pl.lit(stored_label).alias("source"),
                pl.col("process").replace_strict(names),
                pl.col("interval_ms").cast(pl.Float64),
                pl.col("pct_of_core").cast(pl.Float64),
            )
        )
    return pl.concat(parts, how="vertical").select(cols).sort("source", "process", "interval_ms")
