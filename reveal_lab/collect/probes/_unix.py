"""UNIX domain socket count: the lines of ``/proc/net/unix``."""

from __future__ import annotations

import os

import numpy as np

from reveal_lab.collect._probe import Channel, Probe, ProbeContext, register_probe

#: bytes asked for per read; the kernel hands out at most one page per read anyway
_CHUNK = 1 << 16


@register_probe
class Unix(Probe):
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
    ``--probes procfs,-unix``. It is not a table probe (a line count, not values at
    fixed token positions), so a tick on which it is due always runs Python.

    The file is read with ``lseek`` to 0 and ``read`` until end of file, never with
    one ``pread``: ``/proc/net/unix`` is a record-by-record seq_file, and one read
    returns at most one page (a few dozen sockets), whatever size is asked for.
    """

    name, group = "unix", "procfs"
    description = "/proc/net/unix: UNIX socket count (grows with the sockets; try unix@1s)"

    def open(self, ctx: ProbeContext) -> None:
        self.fd = ctx.open_ro("/proc/self/net/unix")
        self._fds = [self.fd]
        self.count()
        self.channels = [Channel("NetworkProtocolCounts", "UNIX", None, "count")]

    def count(self) -> int:
        """Lines of the file after its header line."""
        fd = self.fd
        os.lseek(fd, 0, os.SEEK_SET)
        n = 0
        while chunk := os.read(fd, _CHUNK):
            n += chunk.count(b"\n")
        return max(n - 1, 0)

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        ints[0] = self.count()
