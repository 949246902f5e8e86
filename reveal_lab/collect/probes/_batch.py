"""The compiled reader behind :class:`~reveal_lab.collect.probes._table.TableBatch`:
``pread`` every active table's file into one buffer and scan it, in one call.

Importing this module raises ``ImportError`` without numba (the tables then read
one by one). libc's ``pread`` is bound by the JIT linker as an external function,
so the compiled code caches on disk like the scanner's.
"""

from __future__ import annotations

from numba import types

from reveal_lab.collect.probes import _scan
from reveal_lab.collect.probes._scan import _jit, drop_stale_cache

drop_stale_cache(__file__, _scan.__file__)  # batch_read calls scan()

#: the scanner's dispatcher (compiled into :func:`batch_read`; importing this module
#: neither compiles nor loads it)
scan = _scan.dispatcher()

__all__ = ["batch_read", "ONE_READ"]

#: flag in a table's mode: one read returns the whole file
ONE_READ = 16

_pread = types.ExternalFunction("pread", types.intp(types.int32, types.voidptr, types.uintp, types.intp))


@_jit
def batch_read(fds, buf, boff, want, woff, dest, out, ooff, colons, sigs, expected, direct, active):  # noqa: ANN001, ANN201
    """For each table ``t`` with ``active[t]``: read file ``fds[t]`` (to its end) into
    ``buf[boff[t]:boff[t+1]]`` and scan it into ``out[ooff[t, 0]:ooff[t, 1]]`` with
    the table's ``want``/``dest`` (slices ``woff[t]:woff[t+1]``); ``sigs[t]`` gets
    the layout signature, or 0 when the read failed or filled the buffer (the file
    grew). ``colons[t]``: the scan's blanks (0 whitespace, 1 and ``:``, 3 and ``.``, ``/``,
    ``=``), or 2: the value is the file's number of lines after the header
    (:class:`LineCount`); plus :data:`ONE_READ` where one ``pread`` returns the whole
    file. Returns 1 when every active ``direct`` table's signature equals ``expected``,
    else 0."""
    ok = 1
    for t in range(fds.shape[0]):
        if not active[t]:
            continue
        b0 = boff[t]
        cap = boff[t + 1] - b0
        # to end of file: record-by-record proc files return one page per read; a file
        # that came whole in one read when its layout was learnt (``colons[t] & ONE_READ``)
        # takes one read (a longer file changes the signature and is learnt again)
        mode = colons[t] & 15
        n = 0
        failed = False  # a read error, or the file filled its buffer (it grew)
        while True:
            r = _pread(fds[t], buf[b0 + n :].ctypes.data, cap - n, n)
            failed = r < 0 or n + r >= cap
            if failed:
                break
            n += r
            if r == 0 or colons[t] & ONE_READ:
                break
        if failed:
            sigs[t] = 0
        elif mode == 2:  # a line count (LineCount): the lines after the header
            lines = 0
            for i in range(b0, b0 + n):
                if buf[i] == 10:
                    lines += 1
            out[ooff[t, 0]] = lines - 1 if lines > 0 else 0
            sigs[t] = 1
        else:
            w0 = woff[t]
            w1 = woff[t + 1]
            sigs[t] = scan(buf[b0 : b0 + n], want[w0:w1], dest[w0:w1], out[ooff[t, 0] : ooff[t, 1]], mode)
        if direct[t] and (sigs[t] != expected[t] or sigs[t] == 0):
            ok = 0
    return ok
