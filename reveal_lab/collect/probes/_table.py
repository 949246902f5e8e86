"""Fast readers for proc files whose layout is stable between reads.

A :class:`Table` opens a file once and learns where each wanted value sits: its
token index when the file is split on whitespace. A sample is then one ``pread``
and one compiled pass over the bytes (:func:`~reveal_lab.collect.probes._scan.scan`)
that writes the integers straight into the sample row and returns a layout
signature. When the signature differs from the one learnt (a device or IRQ
appeared or vanished), the layout is learnt again from the labels; keys that no
longer exist read as :data:`~reveal_lab.collect._probe.MISSING_INT`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable

import numpy as np

from reveal_lab.collect._probe import MISSING_INT, ProbeContext, read_all
from reveal_lab.collect.probes._scan import scan

__all__ = ["Table", "Layout"]

#: key -> (line number, token position in the line's split)
Layout = tuple[dict[Hashable, tuple[int, int]], dict[int, bytes]]


class Table:
    """One proc file.

    Parameters
    ----------
    ctx : ProbeContext
    path : str
    index : callable
        ``index(lines) -> (mapping, fixed)`` over ``data.split(b"\\n")``: each key's
        ``(line, token)``; ``fixed`` (lines expected verbatim) is informative only,
        header changes are caught by the signature.
    keys : list, optional
        Keys to read, in channel order; default: every key ``index`` finds.
    colons : bool
        Treat ``:`` as a blank (``/proc/net/dev``, where ``eth0:123`` may be glued).
    """

    def __init__(
        self,
        ctx: ProbeContext,
        path: str,
        index: Callable[[list[bytes]], Layout],
        keys: list[Hashable] | None = None,
        *,
        colons: bool = False,
    ) -> None:
        self.path = path
        self.fd = ctx.open_ro(path)
        self.colons = colons
        self.index = index
        data = read_all(self.fd)
        self.hint = max(4096, 2 * len(data))
        mapping, _ = index(data.split(b"\n"))
        self.keys: list[Hashable] = list(mapping) if keys is None else [k for k in keys if k in mapping]
        self.relayouts = 0
        self._build(data, mapping)

    def relearn(self) -> None:
        """Learn the layout again (after changing :attr:`keys`)."""
        data = read_all(self.fd, self.hint)
        self._build(data, self.index(data.split(b"\n"))[0])

    def _split_line(self, line: bytes) -> list[bytes]:
        return (line.replace(b":", b" ") if self.colons else line).split()

    def _build(self, data: bytes, mapping: dict[Hashable, tuple[int, int]]) -> None:
        offsets = []
        n = 0
        for line in data.split(b"\n"):
            offsets.append(n)
            n += len(self._split_line(line))
        flat = []
        for j, k in enumerate(self.keys):
            loc = mapping.get(k)
            if loc is not None:
                flat.append((offsets[loc[0]] + loc[1], j))
        flat.sort()
        self.n = len(self.keys)
        self._want = np.array([f for f, _ in flat], dtype=np.int64)
        self._dest = np.array([j for _, j in flat], dtype=np.int64)
        self._missing = np.setdiff1d(np.arange(self.n), self._dest)
        self._scratch = np.full(self.n, MISSING_INT, dtype=np.int64)
        self._sig = scan(np.frombuffer(data, np.uint8), self._want, self._dest, self._scratch, self.colons)

    def read_into(self, out: np.ndarray) -> None:
        """Write one int per key into ``out`` (``MISSING_INT`` for keys the file no longer has)."""
        data = os.pread(self.fd, self.hint, 0)
        if len(data) >= self.hint:
            data = read_all(self.fd, self.hint)
            self.hint = 2 * len(data)
        sig = scan(np.frombuffer(data, np.uint8), self._want, self._dest, out, self.colons)
        if sig == self._sig and not self._missing.size:
            return
        self.relayouts += 1
        self._build(data, self.index(data.split(b"\n"))[0])
        out[:] = MISSING_INT
        out[self._dest] = self._scratch[self._dest]

    def values(self) -> np.ndarray:
        out = np.empty(len(self.keys), dtype=np.int64)
        self.read_into(out)
        return out

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
