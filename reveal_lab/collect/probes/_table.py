"""Fast readers for proc files whose layout is stable between reads.

A :class:`Table` opens a file once, learns at which token each value sits and
which tokens must be labels (the *anchors*), and then reads a sample with one
``pread``, one ``split`` and one ``itemgetter``. When the anchors stop matching
(a device or IRQ appeared or vanished) it re-learns the layout; keys that no
longer exist read as :data:`~reveal_lab.collect._probe.MISSING_INT`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Iterator
from operator import itemgetter

from reveal_lab.collect._probe import MISSING_INT, ProbeContext, read_all

__all__ = ["Table", "Layout", "lines_tokens"]

#: key -> token index, anchor token index -> expected token
Layout = tuple[dict[Hashable, int], dict[int, bytes]]


def lines_tokens(data: bytes) -> Iterator[tuple[int, list[bytes]]]:
    """``(offset of the line's first token in data.split(), tokens)`` per line."""
    off = 0
    for line in data.split(b"\n"):
        toks = line.split()
        if toks:
            yield off, toks
            off += len(toks)


def _getter(idx: list[int]) -> Callable[[list[bytes]], tuple[bytes, ...]]:
    if len(idx) == 1:
        i = idx[0]
        return lambda toks: (toks[i],)
    if not idx:
        return lambda toks: ()
    return itemgetter(*idx)


class Table:
    """One proc file read as a flat token list.

    Parameters
    ----------
    ctx : ProbeContext
    path : str
    index : callable
        ``index(data) -> (mapping, anchors)`` over the file's bytes (after the
        optional ``b':'`` → ``b' '`` replacement).
    keys : list, optional
        Keys to read, in channel order; default: every key ``index`` finds.
    colons : bool
        Replace colons by spaces before splitting (``/proc/net/dev``).
    """

    def __init__(self, ctx: ProbeContext, path: str, index: Callable[[bytes], Layout],
                 keys: list[Hashable] | None = None, *, colons: bool = False) -> None:
        self.path = path
        self.fd = ctx.open_ro(path)
        self.colons = colons
        self.index = index
        data = self._read()
        self.hint = max(4096, 2 * len(data))
        mapping, anchors = index(self._prep(data))
        self.keys: list[Hashable] = list(mapping) if keys is None else [k for k in keys if k in mapping]
        self.relayouts = 0
        self._build(mapping, anchors)

    def _read(self) -> bytes:
        return read_all(self.fd, getattr(self, "hint", 4096))

    def _prep(self, data: bytes) -> bytes:
        return data.replace(b":", b" ") if self.colons else data

    def _build(self, mapping: dict[Hashable, int], anchors: dict[int, bytes]) -> None:
        idx = [mapping.get(k, -1) for k in self.keys]
        self._complete = all(i >= 0 for i in idx)
        self._idx = idx
        self._vget = _getter([i for i in idx if i >= 0])
        a = sorted(anchors)
        self._aget = _getter(a)
        self._avals = tuple(anchors[i] for i in a)

    def values(self) -> list[int]:
        """One int per key (``MISSING_INT`` for a key the file no longer has)."""
        data = os.pread(self.fd, self.hint, 0)
        if len(data) >= self.hint:
            data = read_all(self.fd, self.hint)
            self.hint = 2 * len(data)
        toks = (data.replace(b":", b" ") if self.colons else data).split()
        if self._complete:
            try:
                if self._aget(toks) == self._avals:
                    return list(map(int, self._vget(toks)))
            except IndexError:
                pass
        # layout changed (or keys vanished earlier): learn it again
        mapping, anchors = self.index(self._prep(data))
        self.relayouts += 1
        self._build(mapping, anchors)
        return [int(toks[i]) if i >= 0 else MISSING_INT for i in self._idx]

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
