"""The compiled side of the sampling loop: one batched read of the probes' proc tables per
tick (:class:`~reveal_lab.collect._batch` ``TableBatch``), the compiled burst of ticks on which
only direct table probes are due (:mod:`reveal_lab.collect._burst`), the thread that loads
them from numba's cache while the first ticks run in Python, and the log of what numba
compiled during a run."""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

import numpy as np

from reveal_lab.collect._probe import OP_FIXED, Probe
from reveal_lab.collect._writer import DiskFull, RunWriter

__all__ = [
    "Burst",
    "CompileLog",
    "Upgrade",
    "burst_ticks",
    "cached_signatures",
    "dispatchers",
    "in_cache",
    "is_direct",
    "make_batch",
    "make_burst",
    "proc_tables",
]

log = logging.getLogger("reveal_lab.collect")


def proc_tables(p: Probe) -> list[Any]:
    from reveal_lab.collect.probes._table import Table

    return [t for t in p.own_tables() if isinstance(t, Table)]


def is_direct(p: Probe) -> bool:
    """The probe's sample() only copies its tables into its int slice (see
    :attr:`Probe.direct_tables`), and the sizes agree."""
    ts = proc_tables(p)
    return bool(p.direct_tables and ts and p.n_float == 0 and sum(t.n for t in ts) == p.n_int)


def make_batch(
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
        own = proc_tables(p)
        of.append(np.arange(len(tables), len(tables) + len(own)) if own else None)
        d = is_direct(p)
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


class Burst:
    """Glue between :func:`run_loop` and the compiled :func:`~reveal_lab.collect._burst.burst`:
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
        self.st = np.zeros(burst_mod().STATE_SIZE, dtype=np.int64)
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
            if mine is None or len(proc_tables(p)) != len(idx):
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
            b.expected, b.direct, b.active, b.prev, b.rec, b.roff, b.cst, b.vals,
            self.tdiv, self.tdue, self.blank_i, self.blank_f, self.self_off,
            row_i, row_f, bt, bi, bf,
            self.post, self.poff, self.op_kind, self.op_a, self.op_b, self.op_dst, self.op_scale,
            self.pbi, self.pbf,
            self.cfd, self.cn, self.coff, self.cdst, self.cmult, self.cbuf,
        )  # fmt: skip


class CompileLog:
    """numba's compilations in this process while a run is open (``numba:compile``
    events: a function compiled, not loaded from the cache), each as ``(function,
    thread name, monotonic start in ns)``. :meth:`attach` registers the listener (numba
    imported), :meth:`detach` removes it."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, int]] = []
        self._listener: Any = None

    def attach(self) -> None:
        if self._listener is not None:
            return
        from numba.core import event

        events = self.events

        class _Listener(event.Listener):
            def on_start(self, ev: Any) -> None:
                d = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
                name = getattr(getattr(d, "py_func", None), "__name__", "?")
                events.append((name, threading.current_thread().name, time.monotonic_ns()))

            def on_end(self, ev: Any) -> None:
                pass

        self._listener = _Listener()
        event.register("numba:compile", self._listener)

    def detach(self) -> None:
        if self._listener is None:
            return
        from numba.core import event

        event.unregister("numba:compile", self._listener)
        self._listener = None

    def since(self, mono_ns: int) -> list[dict[str, Any]]:
        """The compilations that began at or after ``mono_ns``."""
        return [{"function": f, "thread": t} for f, t, m in self.events if m >= mono_ns]


def dispatchers() -> list[tuple[Any, list[Any] | None]]:
    """The collector's compiled entry points, each with the signatures a run calls it with
    from Python where they are fixed (the scanner's, see ``_scan.warmup_args``), else
    ``None`` (one signature, of the arrays the batch and the hot loop pass; their callees
    compile into them). Imports numba; compiles and loads nothing."""
    import numba

    from reveal_lab.collect import _burst
    from reveal_lab.collect.probes import _batch, _scan

    scan_sigs = [tuple(numba.typeof(a) for a in args) for args in _scan.warmup_args()]
    return [(_scan.dispatcher(), scan_sigs), (_batch.batch_read, None), (_burst.burst, None)]


def in_cache(fn: Any, need: list[Any] | None, cached: list[Any]) -> bool:
    """Whether ``cached`` (:func:`cached_signatures` of ``fn``) holds every signature of
    ``need``, or at least one where ``need`` is ``None``."""
    return bool(cached) if need is None else all(sig in cached for sig in need)


def cached_signatures(fn: Any) -> list[Any]:
    """The signatures of ``fn`` that numba's on-disk cache holds for this CPU and this
    source (what a call would load instead of compiling); ``[]`` when it holds none or
    the cache cannot be read. Reads the cache's index only (numba's ``FunctionCache``)."""
    try:
        cache = fn._cache
        index = cache._cache_file._load_index()
        codegen = fn.targetctx.codegen()
        return [key[0] for key in index if key == cache._index_key(key[0], codegen)]
    except Exception:  # noqa: BLE001 - an unreadable or foreign cache: not cached
        return []


class Upgrade:
    """The compiled code of a run that starts before numba is loaded.

    A thread, started at once (while the probes open), imports numba and checks whether
    numba's cache holds every compiled function for this CPU (:attr:`cached`, set
    before :attr:`checked`). When it does, sampling starts at once; after the first
    sample (:meth:`start`) the thread loads them from the cache, and the sampling thread
    switches to the batch and the hot loop at a tick boundary (:meth:`take`). When it
    does not, the caller compiles before its first sample: nothing is ever compiled
    after sampling has started."""

    def __init__(self, log_: CompileLog) -> None:
        self.compiles = log_
        self.checked = threading.Event()
        self.cached = False
        self.error: BaseException | None = None
        self.result: tuple[Any, Any, Any, Any] | None = None
        self._go = threading.Event()
        self.thread = threading.Thread(target=self._run, name="reveal-lab-load", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            fns = dispatchers()
            self.compiles.attach()
            sigs = [(fn, cached_signatures(fn)) for fn, _ in fns]
            self.cached = all(in_cache(fn, need, s) for (fn, s), (_, need) in zip(sigs, fns, strict=True))
        except BaseException as exc:  # noqa: BLE001 - no numba: stay interpreted
            self.error = exc
            return
        finally:
            self.checked.set()
        if not self.cached:
            return
        self._go.wait()
        try:
            for fn, ss in sigs:
                for sig in ss:
                    fn.compile(sig)  # in the cache: loaded
            from reveal_lab.collect.probes import _scan

            _scan.load()
        except BaseException as exc:  # noqa: BLE001
            self.error = exc

    def start(self) -> None:
        """Let the thread load the cached code (called after the first sample)."""
        self._go.set()

    def ready(self) -> bool:
        return self._go.is_set() and not self.thread.is_alive()

    def take(self, build: Any) -> tuple[Any, Any, Any, Any]:
        """``build()`` (the batch and the hot loop) with compilation turned off: a call
        whose signature was not loaded fails, and the ticks stay interpreted, rather than
        compiling on the sampling thread."""
        from reveal_lab.collect.probes import _scan

        _scan.DEFER = False
        if self.error is not None:
            log.info("compiled code unavailable (%s); ticks run in Python", self.error)
            self.result = (None, None, None, None)
            return self.result
        fns = [fn for fn, _ in dispatchers() if fn.signatures]
        for fn in fns:
            fn.disable_compile(True)
        try:
            self.result = build()
        finally:
            for fn in fns:
                fn.disable_compile(False)
        return self.result


def burst_mod() -> Any:
    from reveal_lab.collect import _burst

    return _burst


def make_burst(
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
        b = Burst(burst_mod().burst, batch, plan, offsets, batch_of, direct, self_off)
    except Exception as exc:  # noqa: BLE001 - no numba: the interpreted loop
        log.info("compiled hot loop unavailable (%s); ticks run in Python", exc)
        return None
    try:  # compile before the first deadline: a call that returns at once (no ticks left)
        m = burst_mod()
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


def burst_ticks(
    bu: Burst,
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
    m = burst_mod()
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
