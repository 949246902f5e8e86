"""Collect telemetry into a run folder: open the probes once, write the run's metadata and
channels, run the sampling loop (:mod:`reveal_lab.collect._loop`), close the run."""

from __future__ import annotations

import datetime as dt
import gc
import json
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from reveal_lab.collect._compiled import CompileLog, Upgrade, is_direct, make_batch, make_burst, proc_tables
from reveal_lab.collect._format import FORMAT_VERSION, META_FILE
from reveal_lab.collect._loop import run_loop
from reveal_lab.collect._probe import MISSING_INT, Probe, ProbeContext, ProbeUnavailable
from reveal_lab.collect._registry import PROBES, probe_periods, resolve_probes, tick_divisors
from reveal_lab.collect._start import RESERVE_BYTES, RunStart
from reveal_lab.collect._writer import DiskFull, RunWriter, write_json_atomic
from reveal_lab.machine import machine_info
from reveal_lab.telemetry import sanitize_host

__all__ = ["collect", "CollectOptions", "CollectResult", "host_info"]

log = logging.getLogger("reveal_lab.collect")


@dataclass(frozen=True)
class CollectOptions:
    """How :func:`collect` samples (its keyword arguments), checked on creation."""

    interval_s: float = 0.1
    duration_s: float | None = None
    probes: str | list[str] | None = "all"
    host: str | None = None
    cgroup_root: str | None = None
    max_cgroups: int = 16
    perf_events: tuple[str, ...] | None = None
    gpu_backend: str = "auto"
    flush_s: float = 1.0
    segment_s: float = 300.0
    #: per-probe options (:class:`~reveal_lab.collect.ProbeContext`'s ``options``)
    options: dict[str, Any] | None = None
    handle_signals: bool = True
    #: where the procfs probes read ``/proc`` and ``/sys`` (another tree in the kernel's
    #: formats, e.g. a synthetic host of many cores: :func:`~reveal_lab.collect.write_proc_tree`)
    proc_root: str = "/proc"
    sys_root: str = "/sys"

    def __post_init__(self) -> None:
        if self.interval_s < 0.01:
            raise ValueError(f"interval {self.interval_s}s is below the 10 ms minimum")
        if self.duration_s is not None and self.duration_s <= 0:
            raise ValueError(f"duration must be positive, got {self.duration_s}")


@dataclass
class CollectResult:
    out: Path
    samples: int
    missed_ticks: int
    status: str  # complete | interrupted | disk-full | error
    probes_used: list[str]
    probes_skipped: dict[str, str]
    meta: dict[str, Any] = field(default_factory=dict)


def host_info() -> dict[str, Any]:
    """Host facts for ``meta.json``: :func:`reveal_lab.machine.machine_info` and the
    collector's network namespace and user id."""
    try:
        netns = os.readlink("/proc/self/ns/net")
    except OSError:
        netns = None
    return {**machine_info(), "net_namespace": netns, "uid": os.getuid()}


def _safe_close(probe: Probe) -> None:
    try:
        probe.close()
    except Exception:  # noqa: BLE001 - half-opened probes may lack attributes
        pass


def _open_probes(names: list[str], ctx: ProbeContext) -> tuple[list[Probe], dict[str, str]]:
    used: list[Probe] = []
    skipped: dict[str, str] = {}
    for name in names:
        probe = PROBES[name]()
        try:
            probe.open(ctx)
            if not probe.channels:
                raise ProbeUnavailable("found nothing to measure")
        except ProbeUnavailable as exc:
            skipped[name] = str(exc)
            log.warning("probe %s skipped: %s", name, exc)
            _safe_close(probe)
            continue
        except Exception as exc:  # noqa: BLE001 - a broken probe must not stop the collector
            skipped[name] = f"error while opening: {type(exc).__name__}: {exc}"
            log.warning("probe %s skipped: %s", name, skipped[name])
            _safe_close(probe)
            continue
        used.append(probe)
        log.info("probe %s: %d channels", name, len(probe.channels))
    return used, skipped


def collect(out: str | Path, **options: Any) -> CollectResult:
    """Collect telemetry into ``out`` until ``duration_s`` passes or SIGINT/SIGTERM;
    ``options`` are the fields of :class:`CollectOptions`.

    Returns a :class:`CollectResult`; the run reads back with
    :func:`reveal_lab.io.read_collector_run`. Raises ``FileExistsError`` when
    ``out`` already holds a run and ``ValueError`` for bad arguments.
    """
    opts = CollectOptions(**options)
    out = Path(out)
    # flags first: a bad --probes must not leave an output folder behind
    names = resolve_probes(opts.probes)
    if not names:
        raise ValueError(f"--probes {opts.probes!r} leaves no probe to run")
    divisors = tick_divisors(probe_periods(opts.probes), opts.interval_s)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out} is a file, not a directory; choose a new --out")
    start = RunStart(out)
    try:
        start.lock()
        if (out / META_FILE).exists():
            raise FileExistsError(
                f"{out} already holds a collector run ({META_FILE}); choose a new --out"
            )
        start.writing = True
        result = _collect_locked(out, start, names, divisors, opts)
    except BaseException:
        start.undo()  # a failed start leaves nothing behind (not even an empty folder)
        raise
    finally:
        start.unlock()
    return result


def _channels(used: list[Probe], host: str) -> list[dict[str, Any]]:
    """The run's channels (``channels.json``): every probe's integer channels, then its float
    ones, in probe order; a channel name two probes produce is refused."""
    channels: list[dict[str, Any]] = []
    for dtype in ("i", "f"):
        for p in used:
            channels += [c.to_dict(host, p.name) for c in p.channels if c.dtype == dtype]
    names_seen: dict[str, str] = {}
    for c in channels:
        if c["name"] in names_seen:
            raise RuntimeError(f"channel {c['name']} produced by both {names_seen[c['name']]} and {c['probe']}")
        names_seen[c["name"]] = c["probe"]
    return channels


def _row_plan(
    used: list[Probe], every: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list, list[int], list[int]]:
    """The sample row and each probe's slices of it: ``(row_big, row_i, row_f, plan, int_off,
    float_off)``; ``row_big`` holds the integer row, then room for the batched reads of
    tables whose probes post-process them; ``plan`` is ``(probe, ints, floats, every)``."""
    ni = sum(p.n_int for p in used)
    nf = sum(p.n_float for p in used)
    scratch = sum(t.n for p in used if not is_direct(p) for t in proc_tables(p))
    row_big = np.full(ni + scratch, MISSING_INT, dtype=np.int64)
    row_i = row_big[:ni]
    row_f = np.full(nf, np.nan, dtype=np.float64)
    plan = []
    int_off, float_off = [], []
    a = b = 0
    for p in used:
        plan.append((p, row_i[a : a + p.n_int], row_f[b : b + p.n_float], every.get(p.name, 1)))
        int_off.append(a)
        float_off.append(b)
        a += p.n_int
        b += p.n_float
    return row_big, row_i, row_f, plan, int_off, float_off


def _start_meta(
    host_name: str,
    info: dict[str, Any],
    used: list[Probe],
    skipped: dict[str, str],
    names: list[str],
    every: dict[str, int],
    opts: CollectOptions,
    wall0: int,
    mono0: int,
    n_channels: int,
    batch_tables: int,
) -> dict[str, Any]:
    """``meta.json`` as the run starts (``status: running``): host, clock, probes, settings."""
    tz = dt.datetime.now().astimezone().utcoffset()
    interval_s = opts.interval_s
    return {
        "format_version": FORMAT_VERSION,
        "status": "running",
        "host": host_name,
        **info,
        "gpu_models": next((p.info.get("models") for p in used if p.name == "gpu"), []),
        "interval_ms": interval_s * 1000,
        "duration_s": opts.duration_s,
        "start_time": dt.datetime.fromtimestamp(wall0 / 1e9, dt.UTC).isoformat(),
        "clock": {
            "wall_ns": wall0,
            "mono_ns": mono0,
            "utc_offset_s": tz.total_seconds() if tz is not None else 0.0,
            "monotonic_resolution_s": time.get_clock_info("monotonic").resolution,
            "timestamps": "wall_ns at start + (t_mono_ns - mono_ns), UTC, naive",
        },
        # where the procfs probes read /proc and /sys (another tree: a synthetic host)
        "proc_root": opts.proc_root,
        "sys_root": opts.sys_root,
        "probes_requested": names,
        "probes_used": [p.name for p in used],
        "probes_skipped": skipped,
        # probes sampled every N ticks only; their values are null on the other ticks
        "probe_every_ticks": every,
        "probe_period_ms": {n: d * interval_s * 1000 for n, d in every.items()},
        "probe_info": {p.name: p.info for p in used},
        # proc tables read in one compiled call per tick (0: each probe reads its own)
        "batch_read_tables": batch_tables,
        "n_channels": n_channels,
        "flush_s": opts.flush_s,
        "segment_s": opts.segment_s,
        "python": sys.version.split()[0],
        "argv": sys.argv,
        "pid": os.getpid(),
    }


def _close_run(
    out: Path,
    start: RunStart,
    writer: RunWriter,
    meta: dict[str, Any],
    used: list[Probe],
    skipped: dict[str, str],
    status: str,
    error: str | None,
    missed: int,
    stop: dict[str, Any],
    loop_stats: dict[str, int],
) -> CollectResult:
    """The run closed after the loop: the writer's last segment, ``meta.json`` with how it
    ended (a full disk still gets its final ``meta.json`` from the space kept at start)."""
    samples = writer.n_records
    end_wall = time.time_ns()
    try:
        writer.close(time.monotonic_ns(), roll=status != "disk-full")
    except DiskFull as exc:
        status, error = "disk-full", str(exc)
        log.error("%s", exc)
    meta.update(
        status=status if not (status == "complete" and stop["signal"]) else "interrupted",
        error=error,
        samples=samples,
        missed_ticks=missed,
        end_time=dt.datetime.fromtimestamp(end_wall / 1e9, dt.UTC).isoformat(),
        segments=writer.segment + (1 if writer.seg_records else 0),
        bytes_journal_written=writer.bytes_journal,
        bytes_segments=writer.bytes_segments,
        probe_errors={p.name: getattr(p, "errors", 0) for p in used if getattr(p, "errors", 0)},
        # ticks run by the compiled hot loop and by the interpreter (see _burst.py)
        hot_loop=loop_stats,
        relayouts={p.name: sum(t.relayouts for t in p.own_tables()) for p in used if p.own_tables()},
    )
    if status == "disk-full":
        meta.update(status="disk-full")
    # the space kept at start makes room for the final meta.json even on a full disk
    start.release_reserve()
    try:
        write_json_atomic(out / META_FILE, meta)
    except DiskFull as exc:
        status = "disk-full"
        log.error("%s (meta.json still says 'running')", exc)
    if status == "disk-full":
        log.error(
            "output disk full: collector stopped after %d samples; everything up to the last "
            "sync (≤ %g s before) is readable in %s",
            samples,
            meta["flush_s"],
            out,
        )
    return CollectResult(
        out,
        samples,
        missed,
        meta["status"] if status != "disk-full" else status,
        [p.name for p in used],
        skipped,
        meta,
    )


def _load_scanner() -> None:
    """Load (or compile) the scanner's Python-called signatures now, so that the cache
    holds everything a deferred start loads (nothing without numba)."""
    from reveal_lab.collect.probes import _scan

    try:
        _scan.load()
    except ImportError:
        pass


def _attach_quietly(compiles: CompileLog) -> None:
    """Log numba's compilations from here on (nothing without numba)."""
    try:
        compiles.attach()
    except ImportError:
        pass


def _collect_locked(
    out: Path, start: RunStart, names: list[str], divisors: dict[str, int], opts: CollectOptions
) -> CollectResult:
    """:func:`collect` once ``out`` is locked: open the probes, write ``meta.json``, run the
    loop, close the run (one run's probes, signal handlers and numba deferral opened here
    and undone in its ``finally``).

    One long function: the collector's run in the order it happens (open the probes, start, sample,
    flush, close), kept together so its error handling reads top to bottom.
    """
    interval_s, duration_s, flush_s, segment_s = opts.interval_s, opts.duration_s, opts.flush_s, opts.segment_s
    info = host_info()
    host_name = sanitize_host(opts.host or info["hostname"])
    ctx = ProbeContext(
        host=host_name,
        interval_s=interval_s,
        cgroup_root=opts.cgroup_root,
        max_cgroups=opts.max_cgroups,
        perf_events=opts.perf_events,
        gpu_backend=opts.gpu_backend,
        options=dict(opts.options or {}),
        proc_root=opts.proc_root,
        sys_root=opts.sys_root,
    )
    from reveal_lab.collect.probes import _scan

    # numba's import and start-up (most of a second) off the way to the first sample: a
    # thread imports numba while the probes open and checks that its cache holds the
    # compiled code; the first ticks then scan in Python while the thread loads it (see
    # Upgrade). Without it in the cache, it is compiled here, before the first sample.
    defer = os.environ.get("REVEAL_LAB_COLLECT_DEFER", "1") != "0" and _scan._FAST is None
    compiles = CompileLog()
    upgrade = Upgrade(compiles) if defer else None
    _scan.DEFER = defer
    try:
        used, skipped = _open_probes(names, ctx)
    except BaseException:
        _scan.DEFER = False
        raise
    stop = {"flag": False, "signal": None}
    old_handlers = {}
    # how the compiled code came (meta.json's compiled_code): "deferred" (loaded from the
    # cache while the first ticks ran in Python) or "before sampling" (loaded or compiled)
    code: dict[str, Any] = {"start": "deferred" if defer else "before sampling"}
    try:
        if not used:
            why = "; ".join(f"{k}: {v}" for k, v in skipped.items())
            raise RuntimeError(f"no probe could be opened ({why})")
        channels = _channels(used, host_name)
        every = {p.name: divisors[p.name] for p in used if divisors.get(p.name, 1) > 1}
        row_big, row_i, row_f, plan, int_off, float_off = _row_plan(used, every)
        ni = row_i.size
        self_probe = next((p for p in used if p.name == "self"), None)

        def build_hot() -> tuple[Any, Any, Any, Any]:
            batch, batch_of, direct = make_batch(plan, row_big, int_off, ni)
            hot = make_burst(
                plan, list(zip(int_off, float_off, strict=True)), batch, batch_of, direct, row_i, row_f
            )
            return batch, batch_of, direct, hot

        if upgrade is not None:
            upgrade.checked.wait()
            if upgrade.error is None and not upgrade.cached:
                log.info("compiling the collector's hot loop for this CPU before sampling (numba caches it)")
                upgrade = None
                code["start"] = "before sampling"
        if upgrade is not None:
            batch = batch_of = direct = hot = None
        else:
            _scan.DEFER = False
            _attach_quietly(compiles)
            t0 = time.monotonic()
            _load_scanner()
            batch, batch_of, direct, hot = build_hot()
            code["prepare_s"] = round(time.monotonic() - t0, 3)
            if compiles.events:
                names = ", ".join(sorted({e[0] for e in compiles.events}))
                log.info("compiled in %.1f s: %s", code["prepare_s"], names)

        wall0, mono0 = time.time_ns(), time.monotonic_ns()
        meta = _start_meta(
            host_name, info, used, skipped, names, every, opts, wall0, mono0, len(channels),
            len(batch.tables) if batch is not None else 0,
        )
        start.reserve(RESERVE_BYTES + 2 * len(json.dumps(meta, indent=1, default=str)))
        write_json_atomic(out / META_FILE, meta)
        writer = RunWriter(out, channels, flush_s=flush_s, segment_s=segment_s)
        start.started = True  # from here on, what is written is a (readable) run
        log.info(
            "collecting %d channels from %d probes every %g ms into %s (host %s)",
            len(channels),
            len(used),
            interval_s * 1000,
            out,
            host_name,
        )

        if opts.handle_signals:

            def on_signal(signum: int, frame: object) -> None:  # noqa: ARG001
                stop["flag"] = True
                stop["signal"] = signum

            for s in (signal.SIGINT, signal.SIGTERM):
                old_handlers[s] = signal.signal(s, on_signal)

        # everything allocated so far lives as long as the run: keep it out of the
        # cyclic collector's full passes (the loop itself allocates little)
        gc.freeze()
        loop_stats: dict[str, int] = {}
        status, error, missed = run_loop(
            writer,
            plan,
            row_i,
            row_f,
            self_probe,
            stop,
            interval_s,
            duration_s,
            mono0,
            batch,
            batch_of,
            direct,
            loop_stats,
            hot,
            upgrade,
            build_hot,
        )
        if upgrade is not None:  # (a stop before the switch leaves the thread to finish alone)
            if upgrade.result is not None and upgrade.result[0] is not None:
                meta["batch_read_tables"] = len(upgrade.result[0].tables)
        # what numba compiled once sampling had begun (nothing, by design)
        code["compiled_before_sampling"] = sorted({e[0] for e in compiles.events if e[2] < mono0})
        code["compiled_while_sampling"] = compiles.since(mono0)
        meta["compiled_code"] = code
        return _close_run(out, start, writer, meta, used, skipped, status, error, missed, stop, loop_stats)
    finally:
        compiles.detach()
        _scan.DEFER = False
        for s, h in old_handlers.items():
            signal.signal(s, h)
        for p in used:
            try:
                p.close()
            except Exception:  # noqa: BLE001
                log.exception("closing probe %s", p.name)
