"""The compiled hot loop: many ticks in one call, the interpreter asleep in between.

When every probe due on a tick is a *direct* table probe (its values are read and
scanned into the sample row by :func:`~reveal_lab.collect.probes._batch.batch_read`),
a probe whose row the batched values give through its
:meth:`~reveal_lab.collect._probe.Probe.compiled_ops` (copies, per-core sums,
fixed-point decimals: ``loadavg``, ``psi``, ``interrupts``), a probe whose counters it
reads itself (:meth:`~reveal_lab.collect._probe.Probe.compiled_counters`: ``perf`` with
``perf_event_open``) or the ``self`` probe, nothing in a tick needs Python: :func:`burst` sleeps to each
absolute deadline with ``clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)``, takes the
timestamps, reads and scans the files, fills the ``self`` channels and appends the
row to the writer's buffers, for as many ticks as it may. It returns to Python

* when a journal flush is due (once per ``flush_s``; the flush and fsync are Python's),
* on a tick on which a probe that samples in Python is due (turbostat, gpu, a cgroup
  probe whose files changed layout,
  perf through its ``perf stat`` child; ``perf_event_open`` counter groups are read here,
  :func:`read_counters`): after the compiled part of the tick (sleep, timestamps, reads,
  ops, counters, ``self``),
  with the row not yet appended; the interpreter samples only those probes, appends the
  row and calls again,
* when a file's layout changed (a device or IRQ appeared: the tick is redone by the
  probes' own label-based path, with the timestamps already taken),
* when a signal interrupted the sleep (the Python handler runs, then the loop goes on
  or stops), when the row buffer is full, or after the last tick.

It keeps the Python loop's rules exactly: deadlines ``mono0 + k * interval``, a tick
skipped (and counted in ``missed``) when it is closer than half an interval to the
previous sample or already half an interval late, a slow probe sampled at the first
tick ``k >=`` its next multiple of ``d`` and missing on the others.

The per-tick cost is then the kernel's (the wake-up and generating the proc files'
text) plus a compiled scan; ``benchmarks/collector_overhead.py`` measures it against
the interpreted loop (``REVEAL_LAB_COLLECT_BURST=0``).
Importing this module raises ``ImportError`` without numba.
"""

from __future__ import annotations

import numpy as np
from numba import types

from reveal_lab.collect._probe import MISSING_INT
from reveal_lab.collect.probes import _batch, _scan
from reveal_lab.collect.probes._batch import batch_read
from reveal_lab.collect.probes._scan import _jit, drop_stale_cache

drop_stale_cache(__file__, _batch.__file__, _scan.__file__)  # burst() calls batch_read() and scan()

__all__ = [
    "burst",
    "apply_ops",
    "S_K",
    "S_MISSED",
    "S_SEQ",
    "S_KSTOP",
    "S_LAST_FLUSH",
    "S_NTICKS",
    "S_ROWS",
    "S_TMONO",
    "S_TWALL",
    "S_DEADLINE",
    "S_NOW",
    "STATE_SIZE",
    "R_FLUSH",
    "R_PARTIAL",
    "R_RELAYOUT",
    "R_SIGNAL",
    "R_FULL",
    "R_DONE",
]

# state vector slots (int64)
S_K, S_MISSED, S_SEQ, S_KSTOP, S_LAST_FLUSH, S_NTICKS, S_ROWS = 0, 1, 2, 3, 4, 5, 6
S_TMONO, S_TWALL, S_DEADLINE, S_NOW = 7, 8, 9, 10
STATE_SIZE = 11
# why burst() returned
R_FLUSH, R_PARTIAL, R_RELAYOUT, R_SIGNAL, R_FULL, R_DONE = 1, 2, 3, 4, 5, 6

_CLOCK_REALTIME, _CLOCK_MONOTONIC, _CLOCK_PROCESS_CPUTIME_ID = 0, 1, 2
_TIMER_ABSTIME = 1
_nanosleep = types.ExternalFunction(
    "clock_nanosleep", types.int32(types.int32, types.int32, types.voidptr, types.voidptr)
)
_gettime = types.ExternalFunction("clock_gettime", types.int32(types.int32, types.voidptr))
_read = types.ExternalFunction("read", types.intp(types.int32, types.voidptr, types.uintp))
_MISSING = np.int64(MISSING_INT)


@_jit
def _now(clock, ts):  # noqa: ANN001, ANN202
    _gettime(clock, ts.ctypes.data)
    return ts[0] * 1000000000 + ts[1]


@_jit
def apply_ops(t, base, poff, op_kind, op_a, op_b, op_dst, op_scale, out, row_i, row_f):  # noqa: ANN001, ANN201
    """Table ``t``'s ops (:meth:`Probe.compiled_ops`, ``dst`` made absolute): its
    values are ``out[base:]``."""
    for o in range(poff[t], poff[t + 1]):
        kd = op_kind[o]
        if kd == 0:
            row_i[op_dst[o]] = out[base + op_a[o]]
        elif kd == 1:
            row_i[op_dst[o]] = 0
        elif kd == 2:
            row_i[op_dst[o]] += out[base + op_a[o]]
        elif kd == 3:
            sc = op_scale[o]
            row_f[op_dst[o]] = (out[base + op_a[o]] * sc + out[base + op_b[o]]) / sc
        elif kd == 6:
            row_i[op_dst[o]] = _MISSING
        elif kd == 8:  # a column of op_b rows, op_scale apart, summed (a missing value as zero)
            s = 0
            p = base + op_a[o]
            for _ in range(op_b[o]):
                if out[p] != _MISSING:
                    s += out[p]
                p += op_scale[o]
            row_i[op_dst[o]] = s
        else:  # 4 div, 5 mul, 7 sum: a missing value stays missing
            v = out[base + op_a[o]]
            d = op_dst[o]
            if v == _MISSING or (kd == 7 and row_i[d] == _MISSING):
                row_i[d] = _MISSING
            elif kd == 4:
                row_i[d] = v // op_scale[o]
            elif kd == 5:
                row_i[d] = v * op_scale[o]
            else:
                row_i[d] = row_i[d] + v


@_jit
def read_counters(cfd, cn, coff, cdst, cmult, cbuf, row_f):  # noqa: ANN001, ANN201
    """Counter groups (:meth:`Probe.compiled_counters`, ``dst`` made absolute): one
    ``read`` each into ``cbuf``, values scaled by enabled / running and ``cmult`` into
    ``row_f``; a failed read or a group never scheduled gives NaN."""
    for g in range(cfd.shape[0]):
        need = 8 * (3 + cn[g])
        got = _read(np.int32(cfd[g]), cbuf.ctypes.data, need)
        scale = np.nan
        if got == need:
            en = cbuf[1]
            ru = cbuf[2]
            if ru > 0:
                scale = float(en) / float(ru)
            elif en == 0:
                scale = 1.0
        for i in range(cn[g]):
            o = coff[g] + i
            row_f[cdst[o]] = float(cbuf[3 + i]) * scale * cmult[o] if got == need else np.nan


@_jit
def burst(  # noqa: ANN201, PLR0913
    st,
    ts,
    mono0,
    interval_ns,
    flush_ns,
    fds,
    buf,
    boff,
    want,
    woff,
    dest,
    out,
    ooff,
    colons,
    sigs,
    expected,
    direct,
    active,
    prev,
    rec,
    roff,
    cst,
    vals,
    tdiv,
    tdue,
    blank_i,
    blank_f,
    self_off,
    row_i,
    row_f,
    bt,
    bi,
    bf,
    post,
    poff,
    op_kind,
    op_a,
    op_b,
    op_dst,
    op_scale,
    pbi,
    pbf,
    cfd,
    cn,
    coff,
    cdst,
    cmult,
    cbuf,
):  # noqa: ANN001
    """Run ticks from ``st[S_K]`` until one of the ``R_*`` reasons; see the module.

    ``st``: the state slots ``S_*`` (read and updated). ``ts``: int64[2] scratch for a
    ``struct timespec``. The batch arrays are :class:`TableBatch`'s; ``tdiv``/``tdue``
    give each batched table its probe's divisor and next due tick (updated here);
    ``blank_i``/``blank_f`` (rows ``[a, b)``) are the row slices of the probes that
    sample in Python, missing on every tick run here. ``self_off`` is the ``self``
    probe's first int column (-1 without it). Rows are appended to ``bt``/``bi``/``bf``
    from row ``st[S_ROWS]`` on. ``post[t]``: table ``t`` belongs to a probe whose row
    slice the ops ``poff[t]:poff[t+1]`` compute (:func:`apply_ops`); ``pbi``/``pbf``
    hold that probe's int and float slices, missing on the ticks it skips.
    ``prev``...``vals``: the state of the tables that re-read only their changed rows.
    ``cfd``...``cbuf``: the counter groups read on every tick (:func:`read_counters`).

    One long compiled function: numba takes plain arrays, so every piece of the batch's state
    is a parameter (a third of its lines); the reads are already the compiled helpers above,
    and what is left is the one tick loop.
    """
    nt = fds.shape[0]
    half = interval_ns // 2
    for r in range(blank_i.shape[0]):
        row_i[blank_i[r, 0] : blank_i[r, 1]] = _MISSING
    for r in range(blank_f.shape[0]):
        row_f[blank_f[r, 0] : blank_f[r, 1]] = np.nan
    cap = bt.shape[0]
    while True:
        k = st[S_K]
        if st[S_NTICKS] >= 0 and k >= st[S_NTICKS]:
            return R_DONE
        partial = k >= st[S_KSTOP]  # a Python probe is due: the compiled part, then Python
        if st[S_ROWS] >= cap:
            return R_FULL
        deadline = mono0 + k * interval_ns
        st[S_DEADLINE] = deadline
        if deadline > _now(_CLOCK_MONOTONIC, ts):
            ts[0] = deadline // 1000000000
            ts[1] = deadline % 1000000000
            if _nanosleep(_CLOCK_MONOTONIC, _TIMER_ABSTIME, ts.ctypes.data, ts.ctypes.data) != 0:
                return R_SIGNAL  # EINTR: the tick is taken again after Python's handler
        t_mono = _now(_CLOCK_MONOTONIC, ts)
        t_wall = _now(_CLOCK_REALTIME, ts)
        st[S_TMONO] = t_mono
        st[S_TWALL] = t_wall
        for t in range(nt):
            active[t] = tdiv[t] <= 1 or k >= tdue[t]
        read = batch_read(fds, buf, boff, want, woff, dest, out, ooff, colons, sigs, expected, direct, active,
                          prev, rec, roff, cst, vals)  # fmt: skip
        if read == 0:
            return R_RELAYOUT
        for t in range(nt):
            if post[t] and active[t] and (sigs[t] == 0 or sigs[t] != expected[t]):
                return R_RELAYOUT
        for t in range(nt):
            if tdiv[t] > 1:
                if active[t]:
                    tdue[t] = (k // tdiv[t] + 1) * tdiv[t]
                elif direct[t]:
                    out[ooff[t, 0] : ooff[t, 1]] = _MISSING
                elif post[t]:
                    row_i[pbi[t, 0] : pbi[t, 1]] = _MISSING
                    row_f[pbf[t, 0] : pbf[t, 1]] = np.nan
            if post[t] and active[t]:
                apply_ops(t, ooff[t, 0], poff, op_kind, op_a, op_b, op_dst, op_scale, out, row_i, row_f)
        if cfd.shape[0]:
            read_counters(cfd, cn, coff, cdst, cmult, cbuf, row_f)
        if self_off >= 0:
            row_i[self_off] = (t_mono - deadline) // 1000
            row_i[self_off + 1] = st[S_MISSED]
            row_i[self_off + 2] = _now(_CLOCK_PROCESS_CPUTIME_ID, ts) // 1000
        if partial:
            return R_PARTIAL
        j = st[S_ROWS]
        bt[j, 0] = st[S_SEQ]
        bt[j, 1] = t_wall
        bt[j, 2] = t_mono
        bi[j, :] = row_i
        bf[j, :] = row_f
        st[S_ROWS] = j + 1
        st[S_SEQ] += 1
        # next deadline: the first one at least half an interval after this sample
        now = _now(_CLOCK_MONOTONIC, ts)
        st[S_NOW] = now
        k += 1
        while mono0 + k * interval_ns < t_mono + half or mono0 + k * interval_ns < now - half:
            k += 1
            st[S_MISSED] += 1
        st[S_K] = k
        if st[S_NTICKS] >= 0 and k >= st[S_NTICKS]:
            if k > st[S_NTICKS]:
                st[S_MISSED] -= k - st[S_NTICKS]  # deadlines past the end were never due
            return R_DONE
        if now - st[S_LAST_FLUSH] >= flush_ns:
            return R_FLUSH
