"""UNIX domain socket count: the lines of ``/proc/net/unix``."""

from __future__ import annotations

import numpy as np

from reveal_lab.collect._probe import Channel, ProbeContext, TableProbe
from reveal_lab.collect.probes._table import LineCount


class Unix(TableProbe):
    """Open UNIX domain sockets, ``NetworkProtocolCounts:UNIX``: the lines of
    ``/proc/self/net/unix`` (one per socket, after a header), as the public dataset
    counts them.

    Cost: the kernel formats one line (about 100 bytes, with the socket's path) for
    every UNIX socket in the network namespace on every read, so the read grows with
    the socket count: a few hundred bytes on a quiet VM, hundreds of kilobytes on a
    host running thousands of containers' sockets. Its count changes slowly, so on a
    busy host sample it less often with the per-probe period, e.g.
    ``--probes procfs,unix@1s`` (read once a second, missing on the ticks between;
    see :func:`~reveal_lab.collect._probe.probe_periods`), or leave it out with
    ``--probes procfs,-unix``. It is a direct table probe (a
    :class:`~reveal_lab.collect.probes._table.LineCount`): the compiled batched read
    counts the newlines, so a tick on which it is due needs no Python.

    The file is read to its end, never with one ``pread``: ``/proc/net/unix`` is a
    record-by-record seq_file, and one read returns at most one page (a few dozen
    sockets), whatever size is asked for.
    """

    name, group = "unix", "procfs"
    description = "/proc/net/unix: UNIX socket count (grows with the sockets; try unix@1s)"

    def open(self, ctx: ProbeContext) -> None:
        self.table = LineCount(ctx, ctx.proc("/proc/self/net/unix"))
        self.channels = [Channel("NetworkProtocolCounts", "UNIX", None, "count")]

    def count(self) -> int:
        """Lines of the file after its header line."""
        v = np.empty(1, dtype=np.int64)
        self.table.read_into(v)
        return int(v[0])
