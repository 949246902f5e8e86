"""Fast readers for proc files whose layout is stable between reads.

A :class:`Table` opens a file once and learns where each wanted value sits: its
token index when the file is split on whitespace. A sample is then one ``pread``
and one compiled pass over the bytes (:func:`~reveal_lab.collect.probes._scan.scan`)
that writes the integers straight into the sample row and returns a layout
signature. When the signature differs from the one learnt (a device or IRQ
appeared or vanished), the layout is learnt again from the labels; keys that no
longer exist read as :data:`~reveal_lab.collect._probe.MISSING_INT`.

A :class:`TableBatch` reads many tables in one compiled call per tick (``pread``
from libc into one reusable buffer, then the scan), before the probes sample;
each table's :meth:`Table.read_into` then only copies its values out. This skips
the per-file Python work (a bytes object, a numpy view, a dispatch), which costs
more than the scan itself when the caches are cold after the sleep between ticks.
Anything unusual (a signature change, a file grown past its buffer, a read error)
falls back to the table's own path, which re-reads the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable

import numpy as np

from reveal_lab.collect._probe import MISSING_INT, ProbeContext, read_all
from reveal_lab.collect.probes._scan import ONE_READ, ROWS, scan_now, split_blanks

__all__ = ["Table", "LineCount", "TableBatch", "Layout"]

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
    colons : bool or int
        Treat ``:`` as a blank (``/proc/net/dev``, where ``eth0:123`` may be glued);
        :data:`~reveal_lab.collect.probes._scan.DECIMALS` splits ``.``, ``/`` and ``=``
        as well (fixed-point ``0.42`` read as ``0`` and ``42``).
    changed_rows : bool
        In a batch, scan again only the rows whose bytes changed since the last read, the
        others keeping their values (the same values and signature as a whole scan): for
        files of many long rows of which few change between ticks (``/proc/interrupts``).
    """

    def __init__(
        self,
        ctx: ProbeContext,
        path: str,
        index: Callable[[list[bytes]], Layout],
        keys: list[Hashable] | None = None,
        *,
        colons: bool | int = False,
        changed_rows: bool = False,
    ) -> None:
        data = self._open(ctx, path, colons, int(colons))
        self.changed_rows = changed_rows
        self.index = index
        mapping, _ = index(data.split(b"\n"))
        self.keys: list[Hashable] = list(mapping) if keys is None else [k for k in keys if k in mapping]
        self._build(data, mapping)

    def _open(self, ctx: ProbeContext, path: str, colons: bool | int, mode: int) -> bytes:
        """Open ``path`` and set up what every reader keeps; the file's contents."""
        self.path = path
        self.fd = ctx.open_ro(path)
        self.colons = colons
        self.mode = mode
        self.relayouts = 0
        self.batch: TableBatch | None = None
        self._pre: np.ndarray | None = None  # this tick's values, read by the batch
        self._pre_sig = 0
        self.gone = False  # the file's reads failed: an empty file read in its place (vanish)
        data = read_all(self.fd)
        self.hint = max(4096, 2 * len(data))
        return data

    def relearn(self) -> None:
        """Learn the layout again (after changing :attr:`keys`)."""
        data = read_all(self.fd, self.hint)
        self._build(data, self.index(data.split(b"\n"))[0])

    def vanish(self) -> None:
        """The file is gone (a removed cgroup's reads fail): an empty file is read in its place
        from now on, every key missing, in a layout that does not change (a batch goes on
        reading it)."""
        null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.dup2(null, self.fd, inheritable=False)
        finally:
            os.close(null)
        self.gone = True
        self._build(b"", {})

    def _split_line(self, line: bytes) -> list[bytes]:
        return split_blanks(line, self.mode).split()

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
        self._sig = scan_now(np.frombuffer(data, np.uint8), self._want, self._dest, self._scratch, self.mode)
        self.lines = data.count(b"\n")
        # does one read return the whole file (not a record-by-record file past one page)?
        self.single = len(os.pread(self.fd, max(self.hint, len(data) + 1), 0)) == len(data)
        if self.batch is not None:
            self.batch.dirty = True

    def _took_batched(self, out: np.ndarray) -> bool:
        """Copy this tick's batched values into ``out`` if the batch read them with the
        learnt layout (True); otherwise the caller reads the file itself."""
        pre = self._pre
        if pre is None:
            return False
        self._pre = None
        if self._pre_sig == self._sig:
            out[:] = pre
            out[self._missing] = MISSING_INT  # keys gone since the layout was learnt
            return True
        return False

    def _read(self) -> bytes:
        """The whole file; a file grown past the batch's buffer makes the batch resize."""
        data = read_all(self.fd, self.hint)
        if len(data) >= self.hint:
            self.hint = 2 * len(data)
            if self.batch is not None:
                self.batch.dirty = True
        return data

    def read_into(self, out: np.ndarray) -> None:
        """Write one int per key into ``out`` (``MISSING_INT`` for keys the file no longer has)."""
        if self._took_batched(out):
            return
        data = self._read()
        sig = scan_now(np.frombuffer(data, np.uint8), self._want, self._dest, out, self.mode)
        if sig == self._sig:  # the learnt layout: its keys read, those gone since missing
            out[self._missing] = MISSING_INT
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


class LineCount(Table):
    """A proc file whose one value is its number of lines after the header line
    (``/proc/net/unix``: one line per socket). Batched like a :class:`Table` (the
    compiled read counts the newlines, ``mode`` 2); its layout never "changes"."""

    def __init__(self, ctx: ProbeContext, path: str) -> None:  # noqa: D107 - no super(): no layout to learn
        self._open(ctx, path, False, 2)
        self.index = None  # type: ignore[assignment]
        self.changed_rows = False
        self.lines = 0
        self.keys = ["lines"]
        self.n = 1
        self._want = np.zeros(0, dtype=np.int64)
        self._dest = np.zeros(0, dtype=np.int64)
        self._missing = np.zeros(0, dtype=np.int64)
        self._sig = 1
        self.single = False  # the count needs every line: always read to the end

    def relearn(self) -> None:
        pass

    def read_into(self, out: np.ndarray) -> None:
        if self._took_batched(out):
            return
        data = self._read()
        out[0] = max(data.count(b"\n") - 1, 0)


class TableBatch:
    """Read many :class:`Table` s in one compiled call per tick.

    Each table's values go to ``out[starts[i] : starts[i] + n]``. A *direct* table
    writes into the sample row itself (``out`` is the row): its probe's ``sample``
    is skipped when :meth:`run` reports every active direct table's layout
    unchanged. The other tables hand their values to their next ``read_into``.
    Anything unusual (a changed layout, a file outgrowing its buffer, a read error)
    falls back to the table's own path, which re-reads the file.
    Built only where numba is available (:meth:`create` returns ``None`` otherwise).
    """

    def __init__(
        self, tables: list[Table], fn, out: np.ndarray, starts: list[int], direct: list[bool]
    ) -> None:  # noqa: ANN001
        self.tables = tables
        self._fn = fn
        self.out = out
        self.starts = np.asarray(starts, dtype=np.int64)
        self.direct = np.asarray(direct, dtype=np.bool_)
        self.active = np.ones(len(tables), dtype=np.bool_)
        self.dirty = True
        for t in tables:
            t.batch = self
        self._rebuild()

    @classmethod
    def create(
        cls,
        tables: list[Table],
        out: np.ndarray | None = None,
        starts: list[int] | None = None,
        direct: list[bool] | None = None,
    ) -> TableBatch | None:
        """A batch over ``tables`` (values into a fresh array unless ``out``/``starts``
        are given), compiled and tried once; ``None`` without numba or on any error."""
        if not tables:
            return None
        fn = _compiled_batch()
        if fn is None:
            return None
        if out is None:
            starts = np.concatenate([[0], np.cumsum([t.n for t in tables])[:-1]]).tolist()
            out = np.full(sum(t.n for t in tables), MISSING_INT, dtype=np.int64)
        self = cls(tables, fn, out, list(starts), list(direct or [False] * len(tables)))
        self.active[:] = False
        try:
            self.run()  # compiles (or loads from the cache) before the first tick
        except Exception:  # noqa: BLE001 - any trouble: the tables read on their own
            self.detach()
            return None
        self.active[:] = True
        return self

    def detach(self) -> None:
        for t in self.tables:
            t.batch = None
            t._pre = None

    def _rebuild(self) -> None:
        ts = self.tables
        self.fds = np.array([t.fd for t in ts], dtype=np.int32)
        self.boff = np.concatenate([[0], np.cumsum([t.hint for t in ts])]).astype(np.int64)
        self.buf = np.zeros(int(self.boff[-1]), dtype=np.uint8)
        self.woff = np.concatenate([[0], np.cumsum([t._want.size for t in ts])]).astype(np.int64)
        self.want = np.concatenate([t._want for t in ts]).astype(np.int64)
        self.dest = np.concatenate([t._dest for t in ts]).astype(np.int64)
        spans = [[s, s + t.n] for s, t in zip(self.starts, ts, strict=True)]
        self.ooff = np.array(spans, dtype=np.int64).reshape(-1, 2)
        # 0: tokens split on whitespace, 1: ':' is a blank too, 2: count the lines, 3: decimals;
        # + ONE_READ where one read returns the whole file, + ROWS where only changed rows are
        # scanned again: their state starts empty (the first read scans it all)
        self.colons = np.array(
            [t.mode | (ONE_READ if t.single else 0) | (ROWS if t.changed_rows else 0) for t in ts], np.int8
        )
        self.prev = np.zeros(self.buf.size, dtype=np.uint8)
        caps = [2 * t.lines + 16 if t.changed_rows else 0 for t in ts]
        self.roff = np.concatenate([[0], np.cumsum(caps)]).astype(np.int64)
        self.rec = np.zeros((int(self.roff[-1]), 4), dtype=np.int64)
        self.cst = np.zeros((len(ts), 6), dtype=np.int64)
        self.vals = np.full(self.out.size, MISSING_INT, dtype=np.int64)
        self.sigs = np.zeros(len(ts), dtype=np.int64)
        # a table with keys missing since a relayout goes on in the batch: the scan writes only the
        # keys found. A direct one's slice of the row keeps the missing values its own path wrote
        # there (a changed-rows table's values start missing); a gone one (vanish) has its channels
        # written missing by its probe's ops; any other's missing keys are written missing in its
        # slice here, so its probe's compiled ops (a probe that has ops after a relayout:
        # interrupts) read them as missing
        self.expected = np.array([t._sig for t in ts], dtype=np.int64)
        for t, (a, _), d in zip(ts, self.ooff, self.direct, strict=True):
            if not d and t._missing.size:
                self.out[a + t._missing] = MISSING_INT
        self.views = [self.out[a:b] for a, b in self.ooff]
        self.indirect = [i for i in range(len(ts)) if not self.direct[i]]
        self.dirty = False

    def run(self) -> bool:
        """Read the active tables now. True when every active direct table kept its
        layout (its values are in the row); indirect tables get their values on
        their next ``read_into``."""
        if self.dirty:
            self._rebuild()
        ok = self._fn(
            self.fds,
            self.buf,
            self.boff,
            self.want,
            self.woff,
            self.dest,
            self.out,
            self.ooff,
            self.colons,
            self.sigs,
            self.expected,
            self.direct,
            self.active,
            self.prev,
            self.rec,
            self.roff,
            self.cst,
            self.vals,
        )
        sigs, active, views, tables = self.sigs, self.active, self.views, self.tables
        for i in self.indirect:
            t = tables[i]
            if active[i]:
                t._pre = views[i]
                t._pre_sig = sigs[i]
            else:
                t._pre = None
        return bool(ok)


_BATCH: list = []


def _compiled_batch():  # noqa: ANN202
    """The compiled batch reader, or ``None`` without numba or a libc ``pread``."""
    if _BATCH:
        return _BATCH[0]
    fn = None
    try:
        from reveal_lab.collect.probes._batch import batch_read

        fn = batch_read
    except Exception:  # noqa: BLE001 - no numba / no libc: every table reads on its own
        fn = None
    _BATCH.append(fn)
    return fn
