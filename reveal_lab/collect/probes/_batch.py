"""The compiled reader behind :class:`~reveal_lab.collect.probes._table.TableBatch`:
``pread`` every active table's file into one buffer and scan it, in one call.

Importing this module raises ``ImportError`` without numba (the tables then read
one by one). libc's ``pread`` is bound by the JIT linker as an external function,
so the compiled code caches on disk like the scanner's.
"""

from __future__ import annotations

from numba import types

from reveal_lab.collect.probes import _scan
from reveal_lab.collect.probes._scan import ONE_READ, ROWS, _jit, drop_stale_cache

drop_stale_cache(__file__, _scan.__file__)  # batch_read calls scan()

#: the scanner's dispatcher (compiled into :func:`batch_read`; importing this module
#: neither compiles nor loads it)
scan = _scan.dispatcher()
rows_scan = _scan._ROWS  # made with the scanner

__all__ = ["batch_read", "ONE_READ", "ROWS"]

_pread = types.ExternalFunction("pread", types.intp(types.int32, types.voidptr, types.uintp, types.intp))


@_jit
def batch_read(  # noqa: ANN201
    fds, buf, boff, want, woff, dest, out, ooff, colons, sigs, expected, direct, active, prev, rec, roff, cst,
    vals,
):  # noqa: ANN001  # fmt: skip
    """For each table ``t`` with ``active[t]``: read file ``fds[t]`` (to its end) into
    ``buf[boff[t]:boff[t+1]]`` and scan it into ``out[ooff[t, 0]:ooff[t, 1]]`` with
    the table's ``want``/``dest`` (slices ``woff[t]:woff[t+1]``); ``sigs[t]`` gets
    the layout signature, or 0 when the read failed or filled the buffer (the file
    grew). ``colons[t]``: the scan's blanks (0 whitespace, 1 and ``:``, 3 and ``.``, ``/``,
    ``=``), or 2: the value is the file's number of lines after the header
    (:class:`LineCount`); plus :data:`ONE_READ` where one ``pread`` returns the whole
    file; plus :data:`ROWS` where only the rows whose bytes changed since the table's last
    read are scanned again (``rows_scan``: the bytes of that read in ``prev`` at ``boff[t]``,
    its clean points in ``rec[roff[t]:roff[t+1]]``, its state in ``cst[t]``, the values of
    the unchanged rows in ``out``, or in ``vals`` for a direct table, whose slice of the row
    the loop may blank). Returns 1 when every active ``direct`` table's signature equals
    ``expected``, else 0."""
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
        elif colons[t] & ROWS:
            w0 = woff[t]
            w1 = woff[t + 1]
            o0 = ooff[t, 0]
            o1 = ooff[t, 1]
            dst = vals[o0:o1] if direct[t] else out[o0:o1]
            sigs[t] = rows_scan(buf[b0 : b0 + n], prev[b0 : b0 + cap], want[w0:w1], dest[w0:w1], dst, mode,
                                rec[roff[t] : roff[t + 1]], cst[t])  # fmt: skip
            if direct[t]:
                out[o0:o1] = dst
        else:
            w0 = woff[t]
            w1 = woff[t + 1]
            sigs[t] = scan(buf[b0 : b0 + n], want[w0:w1], dest[w0:w1], out[ooff[t, 0] : ooff[t, 1]], mode)
        if direct[t] and (sigs[t] != expected[t] or sigs[t] == 0):
            ok = 0
    return ok
