"""UNIX domain socket count: the kernel's in-use counters of ``/proc/net/protocols``, or the
lines of ``/proc/net/unix`` where those are missing."""

from __future__ import annotations

import numpy as np

from reveal_lab.collect._probe import (
    OP_COPY,
    OP_SUM,
    Channel,
    Probe,
    ProbeContext,
    ProbeUnavailable,
    apply_ops_py,
)
from reveal_lab.collect.probes._table import Layout, LineCount, Table

#: the ``sockets`` column of a ``/proc/net/protocols`` row (after its name and ``size``)
SOCKETS_TOKEN = 2


def unix_rows(lines: list[bytes]) -> Layout:
    """Where ``/proc/net/protocols`` holds the UNIX sockets in use: the ``sockets`` column of
    each row whose protocol is ``UNIX`` (datagram and sequential packet sockets) or
    ``UNIX-STREAM`` (stream sockets, a row of their own since Linux 5.15; before, ``UNIX``
    counts them too).

    >>> head = b"protocol  size sockets  memory press"
    >>> unix_rows([head, b"UNIX-STREAM 1152  95  -1  NI", b"UNIX 1152 0 -1 NI", b"TCP 2432 4 2 no"])
    ({b'UNIX-STREAM': (1, 2), b'UNIX': (2, 2)}, {0: b'protocol  size sockets  memory press'})
    """
    if not lines or lines[0].split()[:3] != [b"protocol", b"size", b"sockets"]:
        return {}, {}
    rows = {}
    for ln, line in enumerate(lines[1:], start=1):
        toks = line.split()
        unix = len(toks) > SOCKETS_TOKEN and toks[0] in (b"UNIX", b"UNIX-STREAM")
        if unix and toks[SOCKETS_TOKEN].isdigit():
            rows[toks[0]] = (ln, SOCKETS_TOKEN)
    return rows, {0: lines[0]}


class Unix(Probe):
    """Open UNIX domain sockets, ``NetworkProtocolCounts:UNIX``, as the public dataset
    counts them: the sum of the ``sockets`` column of the ``UNIX`` rows of
    ``/proc/self/net/protocols`` (the kernel's in-use counters of the network namespace,
    :func:`unix_rows`), the same number as the lines of ``/proc/self/net/unix`` after its
    header (a test compares them on this machine).

    Cost: ``/proc/net/protocols`` is a row per protocol whatever the socket count (about
    2 kB; 22 µs of CPU a read on this 2-core VM), where ``/proc/net/unix`` formats a line
    for every UNIX socket of the namespace (95 sockets: 7 kB in two pages, 69 µs; a host of
    many containers: hundreds of kilobytes). A kernel without those rows (or a procfs root
    given without the file) is read the old way, a
    :class:`~reveal_lab.collect.probes._table.LineCount` of ``/proc/net/unix``: sample it
    less often there, e.g. ``--probes procfs,unix@1s``. :attr:`info` ``source`` says which.
    Either way the compiled batched read takes the file and :meth:`compiled_ops` sums, so a
    tick needs no Python.
    """

    name, group = "unix", "procfs"
    description = "/proc/net/protocols: UNIX socket count (else the lines of /proc/net/unix)"

    def open(self, ctx: ProbeContext) -> None:
        self.channels = [Channel("NetworkProtocolCounts", "UNIX", None, "count")]
        try:
            table: Table | None = Table(ctx, ctx.proc("/proc/self/net/protocols"), unix_rows)
        except ProbeUnavailable:
            table = None
        if table is not None and table.keys:
            self.table = table
            self.info["source"] = "/proc/net/protocols"
        else:
            if table is not None:
                table.close()
            self.table = LineCount(ctx, ctx.proc("/proc/self/net/unix"))
            self.info["source"] = "/proc/net/unix"
        n = len(self.table.keys)  # a LineCount's one value: its lines
        self._ops = [(0, OP_COPY, 0, 0, 0, 1)] + [(0, OP_SUM, i, 0, 0, 1) for i in range(1, n)]
        self._v = np.empty(n, dtype=np.int64)

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        self.table.read_into(self._v)
        apply_ops_py(self._ops, [self._v], ints, floats)

    def compiled_ops(self) -> list[tuple[int, int, int, int, int, int]] | None:
        return None if self.table.relayouts else list(self._ops)

    def count(self) -> int:
        """The UNIX sockets in use now."""
        v = np.zeros(1, dtype=np.int64)
        self.sample(v, np.empty(0))
        return int(v[0])
