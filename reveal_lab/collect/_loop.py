"""The hot loop: open probes once, sample them at absolute deadlines, write records."""

from __future__ import annotations

import datetime as dt
import errno
import gc
import json
import logging
import os
import platform
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from reveal_lab.collect._format import (
    CHANNELS_FILE,
    FORMAT_VERSION,
    LOCK_FILE,
    META_FILE,
    RESERVE_FILE,
    journal_name,
)
from reveal_lab.collect._probe import (
    MISSING_INT,
    OP_FIXED,
    PROBES,
    Probe,
    ProbeContext,
    ProbeUnavailable,
    probe_periods,
    resolve_probes,
    tick_divisors,
)
from reveal_lab.collect._writer import DiskFull, RunWriter, write_json_atomic
from reveal_lab.telemetry import sanitize_host

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
    # flags first: a bad --probes must not leave an output folder behind
    names = resolve_probes(probes)
    if not names:
        raise ValueError(f"--probes {probes!r} leaves no probe to run")
    divisors = tick_divisors(probe_periods(probes), interval_s)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out} is a file, not a directory; choose a new --out")
    start = _RunStart(out)
    try:
        start.lock()
        if (out / META_FILE).exists():
            raise FileExistsError(
                f"{out} already holds a collector run ({META_FILE}); choose a new --out"
            )
        start.writing = True
        result = _collect_locked(
            out,
            start,
            names,
            divisors,
            interval_s=interval_s,
            duration_s=duration_s,
            probes=probes,
            host=host,
            cgroup_root=cgroup_root,
            max_cgroups=max_cgroups,
            perf_events=perf_events,
            gpu_backend=gpu_backend,
            flush_s=flush_s,
            segment_s=segment_s,
            options=options,
            handle_signals=handle_signals,
        )
    except BaseException:
        start.undo()  # a failed start leaves nothing behind (not even an empty folder)
        raise
    finally:
        start.unlock()
    return result


#: space kept free at start (a file deleted on a full disk) so that ``meta.json`` can
#: still say ``disk-full`` at the end
RESERVE_BYTES = 64 * 1024


class _RunStart:
    """What a starting collector created in its run folder, its lock, and its space
    reserve; :meth:`undo` removes what it created when the start fails.

    The lock is an ``flock`` on ``OUT/.lock`` held for the whole run: a second
    collector into the same folder is refused and never shares the journal.
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self.created: list[Path] = []  # files and the folder itself, in creation order
        self.writing = False  # past the checks: the run files are ours
        self.started = False
        self.lock_fd: int | None = None

    def lock(self) -> None:
        import fcntl

        if not self.out.exists():
            try:
                self.out.mkdir(parents=True)
            except FileExistsError:
                pass  # another collector made it a moment ago: the lock decides
            except OSError as exc:
                raise RuntimeError(f"cannot create the output directory {self.out}: {exc.strerror}") from None
            else:
                self.created.append(self.out)
        path = self.out / LOCK_FILE
        existed = path.exists()
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise RuntimeError(f"cannot create the lock file {path}: {exc.strerror}") from None
        if not existed:
            self.created.append(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                pid = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            finally:
                os.close(fd)
            raise RuntimeError(
                f"another collector (pid {pid}) is writing into {self.out} (it holds {path}); "
                "choose another --out"
            ) from None
        self.lock_fd = fd
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the pid is informative only; the flock is the lock

    def reserve(self, nbytes: int) -> None:
        path = self.out / RESERVE_FILE
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                try:
                    os.posix_fallocate(fd, 0, nbytes)
                except OSError as exc:
                    if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                        raise
                    os.write(fd, b"\0" * nbytes)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFull(errno.ENOSPC, f"disk full at start: cannot write into {self.out}") from exc
            raise

    def release_reserve(self) -> None:
        try:
            os.unlink(self.out / RESERVE_FILE)
        except OSError:
            pass

    def undo(self) -> None:
        if self.started:
            return
        files = [self.out / n for n in (RESERVE_FILE, journal_name(0), CHANNELS_FILE, META_FILE)]
        files += [f.with_name(f.name + ".tmp") for f in files]
        for path in (files if self.writing else []) + [p for p in self.created if p != self.out]:
            if path.name == LOCK_FILE:
                self.unlock()
            try:
                path.unlink()
            except OSError:
                pass
        if self.out in self.created:
            try:
                self.out.rmdir()  # only when empty: never removes what someone else wrote
            except OSError:
                pass

    def unlock(self) -> None:
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None


def _collect_locked(
    out: Path,
    start: _RunStart,
    names: list[str],
    divisors: dict[str, int],
    *,
    interval_s: float,
    duration_s: float | None,
    probes: str | list[str] | None,
    host: str | None,
    cgroup_root: str | None,
    max_cgroups: int,
    perf_events: tuple[str, ...] | None,
    gpu_backend: str,
    flush_s: float,
    segment_s: float,
    options: dict[str, Any] | None,
    handle_signals: bool,
) -> CollectResult:
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
    from reveal_lab.collect.probes import _scan

    # numba's import and start-up (most of a second) off the way to the first sample: the
    # first ticks scan in Python while a thread loads the compiled code (see _Upgrade)
    defer = os.environ.get("REVEAL_LAB_COLLECT_DEFER", "1") != "0" and _scan._FAST is None
    _scan.DEFER = defer
    try:
        used, skipped = _open_probes(names, ctx)
    except BaseException:
        _scan.DEFER = False
        raise
    stop = {"flag": False, "signal": None}
    old_handlers = {}
    try:
        if not used:
            why = "; ".join(f"{k}: {v}" for k, v in skipped.items())
            raise RuntimeError(f"no probe could be opened ({why})")
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
        int_off, float_off = [], []
        a = b = 0
        every = {p.name: divisors[p.name] for p in used if divisors.get(p.name, 1) > 1}
        for p in used:
            plan.append((p, row_i[a : a + p.n_int], row_f[b : b + p.n_float], every.get(p.name, 1)))
            int_off.append(a)
            float_off.append(b)
            a += p.n_int
            b += p.n_float
        self_probe = next((p for p in used if p.name == "self"), None)

        def build_hot() -> tuple[Any, Any, Any, Any]:
            batch, batch_of, direct = _make_batch(plan, row_big, int_off, ni)
            hot = _make_burst(
                plan, list(zip(int_off, float_off, strict=True)), batch, batch_of, direct, row_i, row_f
            )
            return batch, batch_of, direct, hot

        upgrade = None
        if defer:
            batch = batch_of = direct = hot = None
            upgrade = _Upgrade(build_hot)
        else:
            batch, batch_of, direct, hot = build_hot()

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

        if handle_signals:

            def on_signal(signum: int, frame: object) -> None:  # noqa: ARG001
                stop["flag"] = True
                stop["signal"] = signum

            for s in (signal.SIGINT, signal.SIGTERM):
                old_handlers[s] = signal.signal(s, on_signal)

        # everything allocated so far lives as long as the run: keep it out of the
        # cyclic collector's full passes (the loop itself allocates little)
        gc.freeze()
        loop_stats: dict[str, int] = {}
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
            loop_stats,
            hot,
            upgrade,
        )
        if upgrade is not None:  # (a stop before the switch leaves the thread to finish alone)
            if upgrade.result is not None and upgrade.result[0] is not None:
                meta["batch_read_tables"] = len(upgrade.result[0].tables)
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
        _scan.DEFER = False
        for s, h in old_handlers.items():
            signal.signal(s, h)
        for p in used:
            try:
                p.close()
            except Exception:  # noqa: BLE001
                log.exception("closing probe %s", p.name)


def _proc_tables(p: Probe) -> list[Any]:
    from reveal_lab.collect.probes._table import Table

    return [t for t in p.own_tables() if isinstance(t, Table)]


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


class _Burst:
    """Glue between :func:`_run_loop` and the compiled :func:`~reveal_lab.collect._burst.burst`:
    the per-table divisors and due ticks, the compiled ops of the probes that have them,
    the Python probes' row slices, the state vector. :meth:`build` again after a layout
    change (a probe's ops may no longer apply)."""

    def __init__(
        self,
        fn: Any,
        batch: Any,
        plan: list,
        offsets: list[tuple[int, int]],
        batch_of: list,
        direct: list[bool],
        self_off: int,
    ) -> None:
        self.fn = fn
        self.batch = batch
        self.plan = plan
        self.offsets = offsets  # each plan entry's first int and float column in the row
        self.batch_of = batch_of
        self.direct = direct
        self.self_off = self_off
        self.st = np.zeros(_burst_mod().STATE_SIZE, dtype=np.int64)
        self.ts = np.zeros(2, dtype=np.int64)
        self.build()

    def build(self) -> None:
        plan, batch_of, direct, nt = self.plan, self.batch_of, self.direct, len(self.batch.tables)
        self.stale = False
        self.table_probe = np.full(nt, -1, dtype=np.int64)
        for j, idx in enumerate(batch_of):
            if idx is not None:
                self.table_probe[idx] = j
        self.tdiv = np.array([plan[j][3] for j in self.table_probe], dtype=np.int64)
        self.tdue = np.zeros(nt, dtype=np.int64)
        # probes whose rows compiled ops compute from their batched tables
        self.post = np.zeros(nt, dtype=np.bool_)
        self.pbi = np.zeros((nt, 2), dtype=np.int64)
        self.pbf = np.zeros((nt, 2), dtype=np.int64)
        ops: list[tuple[int, int, int, int, int, int]] = []
        self.compiled = []
        for j, (p, vi, vf, _) in enumerate(plan):
            idx = batch_of[j]
            if direct[j] or p.name == "self" or idx is None:
                continue
            mine = p.compiled_ops()
            if mine is None or len(_proc_tables(p)) != len(idx):
                continue
            oi, of = self.offsets[j]
            for ti, kind, a, b, dst, scale in mine:
                ops.append((int(idx[ti]), kind, a, b, dst + (of if kind == OP_FIXED else oi), scale))
            for t in idx:
                self.post[t] = True
                self.pbi[t] = (oi, oi + vi.size)
                self.pbf[t] = (of, of + vf.size)
            self.compiled.append(j)
        # probes whose counters the compiled loop reads itself (perf_event_open groups)
        cfd, cn, cdst, cmult = [], [], [], []
        for j, (p, _, _, d) in enumerate(plan):
            if direct[j] or p.name == "self" or j in self.compiled or d != 1:
                continue
            groups = p.compiled_counters()
            if not groups:
                continue
            of = self.offsets[j][1]
            for fd, n, dsts in groups:
                cfd.append(fd)
                cn.append(n)
                cdst += [of + dst for dst, _ in dsts]
                cmult += [m for _, m in dsts]
            self.compiled.append(j)
        self.cfd = np.array(cfd, dtype=np.int64)
        self.cn = np.array(cn, dtype=np.int64)
        self.coff = np.concatenate([[0], np.cumsum(self.cn)]).astype(np.int64)
        self.cdst = np.array(cdst, dtype=np.int64)
        self.cmult = np.array(cmult, dtype=np.float64)
        self.cbuf = np.zeros(3 + max(cn, default=0), dtype=np.uint64)
        ops.sort(key=lambda o: o[0])  # stable: each table's ops keep their order
        cols = np.array(ops, dtype=np.int64).reshape(-1, 6)
        self.poff = np.searchsorted(cols[:, 0], np.arange(nt + 1)).astype(np.int64)
        self.op_kind, self.op_a, self.op_b, self.op_dst, self.op_scale = (
            np.ascontiguousarray(cols[:, i]) for i in range(1, 6)
        )
        # the probes that sample in Python (not direct, no ops, not self) and their row slices
        self.python = [
            j
            for j, (p, _, _, _) in enumerate(plan)
            if not direct[j] and p.name != "self" and j not in self.compiled
        ]
        self.python_set = set(self.python)
        # slow probes run in the compiled loop: blanked by it on the ticks they skip
        self.slow_compiled = [j for j, e in enumerate(plan) if e[3] > 1 and j not in self.python_set]
        # each probe with batched tables and one of them (they share the probe's due tick)
        self.probe_table = [(j, int(ix[0])) for j, ix in enumerate(batch_of) if ix is not None and len(ix)]
        bi, bf = [], []
        for j in self.python:
            _, vi, vf, _ = plan[j]
            oi, of = self.offsets[j]
            if vi.size:
                bi.append((oi, oi + vi.size))
            if vf.size:
                bf.append((of, of + vf.size))
        self.blank_i = np.array(bi, dtype=np.int64).reshape(-1, 2)
        self.blank_f = np.array(bf, dtype=np.int64).reshape(-1, 2)

    def call(
        self, mono0: int, interval_ns: int, flush_ns: int, row_i: np.ndarray, row_f: np.ndarray, bt, bi, bf
    ) -> int:  # noqa: ANN001
        b = self.batch
        return self.fn(
            self.st, self.ts, mono0, interval_ns, flush_ns,
            b.fds, b.buf, b.boff, b.want, b.woff, b.dest, b.out, b.ooff, b.colons, b.sigs,
            b.expected, b.direct, b.active, self.tdiv, self.tdue, self.blank_i, self.blank_f, self.self_off,
            row_i, row_f, bt, bi, bf,
            self.post, self.poff, self.op_kind, self.op_a, self.op_b, self.op_dst, self.op_scale,
            self.pbi, self.pbf,
            self.cfd, self.cn, self.coff, self.cdst, self.cmult, self.cbuf,
        )  # fmt: skip


class _Upgrade:
    """Load numba and the compiled scanner, batch reader and hot loop in a thread
    (:meth:`start`, after the first sample), then build the batch and the hot loop in
    the sampling thread at a tick boundary (:meth:`take`)."""

    def __init__(self, build: Any) -> None:
        self.build = build
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.result: tuple[Any, Any, Any, Any] | None = None

    def _load(self) -> None:
        try:
            from reveal_lab.collect.probes import _scan

            _scan.load()
            _burst_mod()  # imports the batch reader too
        except BaseException as exc:  # noqa: BLE001 - no numba: stay interpreted
            self.error = exc

    def start(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._load, name="reveal-lab-compile", daemon=True)
            self.thread.start()

    def ready(self) -> bool:
        return self.thread is not None and not self.thread.is_alive()

    def take(self) -> tuple[Any, Any, Any, Any]:
        from reveal_lab.collect.probes import _scan

        _scan.DEFER = False
        if self.error is not None:
            log.info("compiled code unavailable (%s); ticks run in Python", self.error)
            self.result = (None, None, None, None)
        else:
            self.result = self.build()
        return self.result


def _burst_mod() -> Any:
    from reveal_lab.collect import _burst

    return _burst


def _make_burst(
    plan: list,
    offsets: list[tuple[int, int]],
    batch: Any,
    batch_of: list | None,
    direct: list[bool] | None,
    row_i: np.ndarray,
    row_f: np.ndarray,
) -> Any:
    """The compiled multi-tick loop's state, compiled (or loaded from numba's cache) and
    tried once, or ``None`` (no batch, no numba, ``REVEAL_LAB_COLLECT_BURST=0``, or any
    error)."""
    if batch is None or batch_of is None or direct is None:
        return None
    if os.environ.get("REVEAL_LAB_COLLECT_BURST", "1") == "0":
        return None
    self_off = -1
    for (p, vi, _, _), (oi, _) in zip(plan, offsets, strict=True):
        if p.name == "self":
            if vi.size != 3 or p.n_float:
                return None
            self_off = oi
    try:
        b = _Burst(_burst_mod().burst, batch, plan, offsets, batch_of, direct, self_off)
    except Exception as exc:  # noqa: BLE001 - no numba: the interpreted loop
        log.info("compiled hot loop unavailable (%s); ticks run in Python", exc)
        return None
    try:  # compile before the first deadline: a call that returns at once (no ticks left)
        m = _burst_mod()
        b.st[m.S_NTICKS] = 0
        bt = np.empty((1, 3), dtype=np.int64)
        bi = np.empty((1, row_i.size), dtype=np.int64)
        bf = np.empty((1, row_f.size), dtype=np.float64)
        r = b.call(0, 1, 1, row_i, row_f, bt, bi, bf)
        if r != m.R_DONE:
            raise RuntimeError(f"warm-up call returned {r}")
    except Exception as exc:  # noqa: BLE001
        log.info("compiled hot loop unavailable (%s: %s); ticks run in Python", type(exc).__name__, exc)
        return None
    return b


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
    stats: dict[str, int] | None = None,
    hot: Any = None,
    upgrade: _Upgrade | None = None,
) -> tuple[str, str | None, int]:
    """Sample at ``mono0 + k * interval``; skip (and count) deadlines already past or
    closer than half an interval to the previous sample. A probe with divisor ``d > 1``
    is sampled at the first tick with ``k >= `` its next multiple of ``d`` (so a missed
    tick delays it, never drops its period) and reads as missing on the other ticks.

    Runs of ticks on which only direct table probes (and ``self``) are due go to the
    compiled :func:`~reveal_lab.collect._burst.burst`, with the same rules; the other
    ticks run here. ``stats`` (if given) receives the number of ticks of each kind.
    ``upgrade`` (an :class:`_Upgrade`, started after the first sample): until it is
    ready the ticks run here without batch or compiled loop, then they switch to them."""
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
    bu = hot
    python_set = bu.python_set if bu is not None else set()
    if stats is not None:
        stats.update(python_ticks=0, compiled_ticks=0, partial_ticks=0, burst_calls=0)
        if upgrade is not None:
            stats["ticks_before_compiled"] = 0
    preset: tuple[int, int] | None = None  # timestamps of a tick the compiled loop began
    while not stop["flag"]:
        if upgrade is not None and upgrade.ready():
            batch, batch_of, direct, bu = upgrade.take()
            upgrade = None
            python_set = bu.python_set if bu is not None else set()
            slow_batched = [
                (j, d, batch_of[j])
                for j, (_, _, _, d) in enumerate(plan)
                if batch_of and d > 1 and batch_of[j] is not None
            ]
        deadline = mono0 + k * interval_ns
        partial = False  # the compiled loop did all of this tick but its Python probes
        if bu is not None and preset is None and bu.batch is batch:
            r, k, missed, seq, preset = _burst_ticks(
                bu, writer, plan, due, blank, k, missed, seq, n_ticks, mono0, interval_ns, row_i, row_f, stats
            )
            if r == "disk-full":
                return "disk-full", preset, missed  # type: ignore[return-value]
            if r == "done":
                break
            if r == "again":
                continue
            partial = r == "partial"
            python_set = bu.python_set  # (rebuilt after a layout change)
            deadline = mono0 + k * interval_ns  # "python" / "partial": this tick runs here
        if preset is not None:
            t_mono, t_wall = preset
            preset = None
        else:
            now = mono()
            if deadline > now:
                sleep((deadline - now) / 1e9)
                if stop["flag"]:
                    break
            t_mono = mono()
            t_wall = wall()
        if stats is not None:
            stats["partial_ticks" if partial else "python_ticks"] += 1
        if self_probe is not None:
            self_probe.lag_us = (t_mono - deadline) // 1000  # type: ignore[attr-defined]
            self_probe.missed = missed  # type: ignore[attr-defined]
        batch_ok = False  # the direct probes' values are in the row already
        if partial:
            pass
        elif batch is not None:
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
            if partial and j not in python_set:
                continue  # the compiled part of the tick filled (or blanked) its slice
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
            if upgrade is not None:
                upgrade.start()  # after the first sample (no-op once started)
                if stats is not None:
                    stats["ticks_before_compiled"] += 1
            writer.tick(mono())
        except DiskFull as exc:
            log.error("%s", exc)
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


def _burst_ticks(
    bu: _Burst,
    writer: RunWriter,
    plan: list,
    due: list[int],
    blank: list[bool],
    k: int,
    missed: int,
    seq: int,
    n_ticks: int | None,
    mono0: int,
    interval_ns: int,
    row_i: np.ndarray,
    row_f: np.ndarray,
    stats: dict[str, int] | None,
) -> tuple[str, int, int, int, Any]:
    """Run ticks in the compiled loop from tick ``k``. Returns ``(what, k, missed, seq,
    preset)``: ``what`` is ``"again"`` (call again: a flush was done, a signal came or
    the buffer grew), ``"partial"`` (tick ``k`` was run but for its Python probes and
    not appended; ``preset`` holds its ``(t_mono, t_wall)``), ``"python"`` (tick ``k``
    runs in Python; ``preset`` holds its
    ``(t_mono, t_wall)`` when the compiled loop had begun it), ``"done"`` or
    ``"disk-full"`` (``preset`` holds the message)."""
    m = _burst_mod()
    b = bu.batch
    if b.dirty:
        b._rebuild()
    if bu.stale:
        bu.build()
    st = bu.st
    kstop = min((due[j] for j in bu.python), default=1 << 62)
    st[m.S_K], st[m.S_MISSED], st[m.S_SEQ], st[m.S_KSTOP] = k, missed, seq, kstop
    st[m.S_LAST_FLUSH] = writer.last_flush
    st[m.S_NTICKS] = -1 if n_ticks is None else n_ticks
    writer.reserve(int(writer.flush_ns // interval_ns) + 4)
    rows0 = writer._k
    st[m.S_ROWS] = rows0
    bu.tdue[:] = np.take(due, bu.table_probe)
    r = bu.call(mono0, interval_ns, writer.flush_ns, row_i, row_f, writer._bt, writer._bi, writer._bf)
    added = int(st[m.S_ROWS]) - rows0
    if added:
        if writer.seg_start is None:
            writer.seg_start = int(writer._bt[rows0, 2])
        writer._k += added
        writer.n_records += added
    if stats is not None:
        stats["compiled_ticks"] += added
        stats["burst_calls"] += 1
    k, missed, seq = int(st[m.S_K]), int(st[m.S_MISSED]), int(st[m.S_SEQ])
    for j, t in bu.probe_table:
        due[j] = int(bu.tdue[t])
    for j in bu.python:
        blank[j] = True  # their slices were set missing
    for j in bu.slow_compiled:
        blank[j] = False  # it may hold the values of the last compiled tick: blank it when due
    if r == m.R_DONE:
        return "done", k, missed, seq, None
    if r == m.R_FLUSH:
        now = int(st[m.S_NOW])
        try:
            writer.tick(now)
        except DiskFull as exc:
            log.error("%s", exc)
            return "disk-full", k, missed, seq, str(exc)
        # a slow flush may have made the next deadline late: skip it as the Python loop does
        late_ns = time.monotonic_ns() - interval_ns // 2
        while mono0 + k * interval_ns < late_ns:
            k += 1
            missed += 1
        if n_ticks is not None and k >= n_ticks:
            if k > n_ticks:
                missed -= k - n_ticks
            return "done", k, missed, seq, None
        return "again", k, missed, seq, None
    if r == m.R_RELAYOUT:
        # the tick was begun (timestamps taken, files read): the probes redo it themselves;
        # then the ops are built again (a probe whose table was relearnt may lose them)
        for t in range(len(b.tables)):
            b.tables[t]._pre = None
        bu.stale = True
        return "python", k, missed, seq, (int(st[m.S_TMONO]), int(st[m.S_TWALL]))
    if r == m.R_PARTIAL:
        return "partial", k, missed, seq, (int(st[m.S_TMONO]), int(st[m.S_TWALL]))
    # R_SIGNAL (the caller checks the stop flag) or R_FULL (reserve() grows it)
    return "again", k, missed, seq, None
