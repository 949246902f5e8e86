"""The hot loop: open probes once, sample them at absolute deadlines, write records."""

from __future__ import annotations

import datetime as dt
import gc
import logging
import os
import platform
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from reveal_lab.collect._format import FORMAT_VERSION, META_FILE
from reveal_lab.collect._probe import (
    MISSING_INT,
    PROBES,
    Probe,
    ProbeContext,
    ProbeUnavailable,
    probe_periods,
    resolve_probes,
    tick_divisors,
)
from reveal_lab.collect._writer import DiskFull, RunWriter, write_json_atomic
from reveal_lab.telemetry._names import sanitize_host

__all__ = ["collect", "CollectResult", "host_info"]

log = logging.getLogger("reveal_lab.collect")


@dataclass
class CollectResult:
    out: Path
    samples: int
    missed_ticks: int
    status: str  # complete | interrupted | disk-full | error
    probes_used: list[str]
    probes_skipped: dict[str, str]
    meta: dict[str, Any] = field(default_factory=dict)


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "Processor", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def host_info() -> dict[str, Any]:
    """Host facts for ``meta.json`` (kernel, CPU model, core count, network namespace)."""
    u = os.uname()
    try:
        netns = os.readlink("/proc/self/ns/net")
    except OSError:
        netns = None
    return {
        "hostname": socket.gethostname(),
        "kernel": f"{u.sysname} {u.release} {u.version}",
        "machine": u.machine,
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "net_namespace": netns,
        "uid": os.getuid(),
    }


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


def collect(
    out: str | Path,
    *,
    interval_s: float = 0.1,
    duration_s: float | None = None,
    probes: str | list[str] | None = "all",
    host: str | None = None,
    cgroup_root: str | None = None,
    max_cgroups: int = 16,
    perf_events: tuple[str, ...] | None = None,
    gpu_backend: str = "auto",
    flush_s: float = 1.0,
    segment_s: float = 300.0,
    options: dict[str, Any] | None = None,
    handle_signals: bool = True,
) -> CollectResult:
    """Collect telemetry into ``out`` until ``duration_s`` passes or SIGINT/SIGTERM.

    Returns a :class:`CollectResult`; the run reads back with
    :func:`reveal_lab.io.read_collector_run`. Raises ``FileExistsError`` when
    ``out`` already holds a run and ``ValueError`` for bad arguments.
    """
    if interval_s < 0.01:
        raise ValueError(f"interval {interval_s}s is below the 10 ms minimum")
    if duration_s is not None and duration_s <= 0:
        raise ValueError(f"duration must be positive, got {duration_s}")
    import reveal_lab.collect.probes  # noqa: F401  (registers the probes)

    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RuntimeError(f"cannot create the output directory {out}: {exc.strerror}") from None
    if (out / META_FILE).exists():
        raise FileExistsError(f"{out} already holds a collector run ({META_FILE}); choose a new --out")
    names = resolve_probes(probes)
    divisors = tick_divisors(probe_periods(probes), interval_s)
    info = host_info()
    host_name = sanitize_host(host or info["hostname"])
    ctx = ProbeContext(
        host=host_name,
        interval_s=interval_s,
        cgroup_root=cgroup_root,
        max_cgroups=max_cgroups,
        perf_events=perf_events,
        gpu_backend=gpu_backend,
        options=dict(options or {}),
    )
    used, skipped = _open_probes(names, ctx)
    stop = {"flag": False, "signal": None}
    old_handlers = {}
    try:
        if not used:
            raise RuntimeError(f"no probe could be opened: {skipped}")
        channels: list[dict[str, Any]] = []
        for dtype in ("i", "f"):
            for p in used:
                channels += [c.to_dict(host_name, p.name) for c in p.channels if c.dtype == dtype]
        names_seen: dict[str, str] = {}
        for c in channels:
            if c["name"] in names_seen:
                raise RuntimeError(
                    f"channel {c['name']} produced by both {names_seen[c['name']]} and {c['probe']}"
                )
            names_seen[c["name"]] = c["probe"]
        ni = sum(p.n_int for p in used)
        nf = sum(p.n_float for p in used)
        # the row, then room for the batched reads of tables whose probes post-process them
        scratch = sum(t.n for p in used if not _is_direct(p) for t in _proc_tables(p))
        row_big = np.full(ni + scratch, MISSING_INT, dtype=np.int64)
        row_i = row_big[:ni]
        row_f = np.full(nf, np.nan, dtype=np.float64)
        plan = []
        int_off = []
        a = b = 0
        every = {p.name: divisors[p.name] for p in used if divisors.get(p.name, 1) > 1}
        for p in used:
            plan.append((p, row_i[a : a + p.n_int], row_f[b : b + p.n_float], every.get(p.name, 1)))
            int_off.append(a)
            a += p.n_int
            b += p.n_float
        self_probe = next((p for p in used if p.name == "self"), None)
        batch, batch_of, direct = _make_batch(plan, row_big, int_off, ni)

        wall0, mono0 = time.time_ns(), time.monotonic_ns()
        tz = dt.datetime.now().astimezone().utcoffset()
        meta: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "status": "running",
            "host": host_name,
            **info,
            "gpu_models": next((p.info.get("models") for p in used if p.name == "gpu"), []),
            "interval_ms": interval_s * 1000,
            "duration_s": duration_s,
            "start_time": dt.datetime.fromtimestamp(wall0 / 1e9, dt.UTC).isoformat(),
            "clock": {
                "wall_ns": wall0,
                "mono_ns": mono0,
                "utc_offset_s": tz.total_seconds() if tz is not None else 0.0,
                "monotonic_resolution_s": time.get_clock_info("monotonic").resolution,
                "timestamps": "wall_ns at start + (t_mono_ns - mono_ns), UTC, naive",
            },
            "probes_requested": names,
            "probes_used": [p.name for p in used],
            "probes_skipped": skipped,
            # probes sampled every N ticks only; their values are null on the other ticks
            "probe_every_ticks": every,
            "probe_period_ms": {n: d * interval_s * 1000 for n, d in every.items()},
            "probe_info": {p.name: p.info for p in used},
            # proc tables read in one compiled call per tick (0: each probe reads its own)
            "batch_read_tables": len(batch.tables) if batch is not None else 0,
            "n_channels": len(channels),
            "flush_s": flush_s,
            "segment_s": segment_s,
            "python": sys.version.split()[0],
            "argv": sys.argv,
            "pid": os.getpid(),
        }
        write_json_atomic(out / META_FILE, meta)
        writer = RunWriter(out, channels, flush_s=flush_s, segment_s=segment_s)
        log.info(
            "collecting %d channels from %d probes every %g ms into %s (host %s)",
            len(channels),
            len(used),
            interval_s * 1000,
            out,
            host_name,
        )

        if handle_signals:

            def on_signal(signum: int, frame: object) -> None:  # noqa: ARG001
                stop["flag"] = True
                stop["signal"] = signum

            for s in (signal.SIGINT, signal.SIGTERM):
                old_handlers[s] = signal.signal(s, on_signal)

        # everything allocated so far lives as long as the run: keep it out of the
        # cyclic collector's full passes (the loop itself allocates little)
        gc.freeze()
        status, error, missed = _run_loop(
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
        )
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
            relayouts={p.name: sum(t.relayouts for t in _tables(p)) for p in used if _tables(p)},
        )
        if status != "disk-full":
            try:
                write_json_atomic(out / META_FILE, meta)
            except DiskFull as exc:
                status = "disk-full"
                log.error("%s", exc)
        if status == "disk-full":
            log.error(
                "output disk full: collector stopped after %d samples; everything up to the last "
                "sync (≤ %g s before) is readable in %s",
                samples,
                flush_s,
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
    finally:
        for s, h in old_handlers.items():
            signal.signal(s, h)
        for p in used:
            try:
                p.close()
            except Exception:  # noqa: BLE001
                log.exception("closing probe %s", p.name)


def _tables(p: Probe) -> list[Any]:
    t = getattr(p, "table", None)
    return [t] if t is not None else list(getattr(p, "tables", []))


def _proc_tables(p: Probe) -> list[Any]:
    from reveal_lab.collect.probes._table import Table

    return [t for t in _tables(p) if isinstance(t, Table)]


def _is_direct(p: Probe) -> bool:
    """The probe's sample() only copies its tables into its int slice (see
    :attr:`Probe.direct_tables`), and the sizes agree."""
    ts = _proc_tables(p)
    return bool(p.direct_tables and ts and p.n_float == 0 and sum(t.n for t in ts) == p.n_int)


def _make_batch(
    plan: list[tuple[Probe, np.ndarray, np.ndarray, int]], row_big: np.ndarray, int_off: list[int], ni: int
) -> tuple[Any, list[Any], list[bool]]:
    """One :class:`TableBatch` over the proc tables of every probe in ``plan``; for each
    plan entry the indices of its tables in the batch (``None`` if it has none) and
    whether the batch writes its values straight into the row. Tables of the other
    probes read into ``row_big[ni:]``. ``REVEAL_LAB_COLLECT_BATCH=0`` turns batching
    off (each probe reads its own files)."""
    from reveal_lab.collect.probes._table import TableBatch

    of: list[Any] = []
    direct: list[bool] = []
    tables, starts, dflags = [], [], []
    scratch = ni
    for (p, _, _, _), a in zip(plan, int_off, strict=True):
        own = _proc_tables(p)
        of.append(np.arange(len(tables), len(tables) + len(own)) if own else None)
        d = _is_direct(p)
        direct.append(d)
        for t in own:
            tables.append(t)
            dflags.append(d)
            if d:
                starts.append(a)
                a += t.n
            else:
                starts.append(scratch)
                scratch += t.n
    if os.environ.get("REVEAL_LAB_COLLECT_BATCH", "1") == "0" or not tables:
        return None, of, [False] * len(plan)
    batch = TableBatch.create(tables, row_big, starts, dflags)
    if batch is None:
        log.info("batched proc reads unavailable (no numba): each probe reads its own files")
        return None, of, [False] * len(plan)
    return batch, of, direct


def _run_loop(
    writer: RunWriter,
    plan: list[tuple[Probe, np.ndarray, np.ndarray, int]],
    row_i: np.ndarray,
    row_f: np.ndarray,
    self_probe: Probe | None,
    stop: dict[str, Any],
    interval_s: float,
    duration_s: float | None,
    mono0: int,
    batch: Any = None,
    batch_of: list[Any] | None = None,
    direct: list[bool] | None = None,
) -> tuple[str, str | None, int]:
    """Sample at ``mono0 + k * interval``; skip (and count) deadlines already past or
    closer than half an interval to the previous sample. A probe with divisor ``d > 1``
    is sampled at the first tick with ``k >= `` its next multiple of ``d`` (so a missed
    tick delays it, never drops its period) and reads as missing on the other ticks."""
    interval_ns = int(round(interval_s * 1e9))
    n_ticks = None if duration_s is None else max(1, int(round(duration_s / interval_s)))
    mono, wall, sleep = time.monotonic_ns, time.time_ns, time.sleep
    k = 0
    missed = 0
    seq = 0
    due = [0] * len(plan)  # next deadline index at which each probe is sampled
    blank = [False] * len(plan)  # its row slice already holds missing values
    # probes sampled every d > 1 ticks that own batched tables: (plan index, divisor, table indices)
    slow_batched = [
        (j, d, batch_of[j])
        for j, (_, _, _, d) in enumerate(plan)
        if batch_of and d > 1 and batch_of[j] is not None
    ]
    while not stop["flag"]:
        deadline = mono0 + k * interval_ns
        now = mono()
        if deadline > now:
            sleep((deadline - now) / 1e9)
            if stop["flag"]:
                break
        t_mono = mono()
        t_wall = wall()
        if self_probe is not None:
            self_probe.lag_us = (t_mono - deadline) // 1000  # type: ignore[attr-defined]
            self_probe.missed = missed  # type: ignore[attr-defined]
        batch_ok = False  # the direct probes' values are in the row already
        if batch is not None:
            for j, _, idx in slow_batched:
                batch.active[idx] = k >= due[j]
            try:
                batch_ok = batch.run()
            except Exception as exc:  # noqa: BLE001 - fall back to per-probe reads for good
                log.warning(
                    "batched proc reads failed (%s: %s); probes read on their own", type(exc).__name__, exc
                )
                batch.detach()
                batch = None
        for j, (p, vi, vf, d) in enumerate(plan):
            if d > 1:
                if k < due[j]:
                    if not blank[j]:
                        vi[:] = MISSING_INT
                        vf[:] = np.nan
                        blank[j] = True
                    continue
                due[j] = (k // d + 1) * d
                blank[j] = False
            if batch_ok and direct[j]:  # type: ignore[index]
                continue
            try:
                p.sample(vi, vf)
            except Exception as exc:  # noqa: BLE001 - one probe's failure costs its values only
                p.errors = getattr(p, "errors", 0) + 1  # type: ignore[attr-defined]
                if p.errors == 1:  # type: ignore[attr-defined]
                    log.warning(
                        "probe %s failed to sample (%s: %s); its values are missing",
                        p.name,
                        type(exc).__name__,
                        exc,
                    )
                vi[:] = MISSING_INT
                vf[:] = np.nan
        try:
            writer.append(seq, t_wall, t_mono, row_i, row_f)
            writer.tick(mono())
        except DiskFull as exc:
            log.error("%s: stopping the collector", exc)
            return "disk-full", str(exc), missed
        seq += 1
        # next deadline: the first one at least half an interval after this sample
        k += 1
        floor_ns = t_mono + interval_ns // 2
        late_ns = mono() - interval_ns // 2
        while (d := mono0 + k * interval_ns) < floor_ns or d < late_ns:
            k += 1
            missed += 1
        if n_ticks is not None and k >= n_ticks:
            if k > n_ticks:
                missed -= k - n_ticks  # deadlines past the end were never due
            break
    return "complete", None, missed
