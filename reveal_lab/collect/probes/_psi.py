"""Pressure stall information (``/proc/pressure/{cpu,memory,io,irq}``)."""

from __future__ import annotations

import numpy as np

from reveal_lab.collect import _probe as pr
from reveal_lab.collect._probe import Channel, Probe, ProbeContext, ProbeUnavailable
from reveal_lab.collect.probes._scan import DECIMALS, split_blanks
from reveal_lab.collect.probes._table import Layout, Table

#: a PSI line with the DECIMALS blanks: some avg10 W F avg60 W F avg300 W F total N
_AVG10_WHOLE, _AVG10_FRAC, _TOTAL = 2, 3, 11


def _psi_index(lines: list[bytes]) -> Layout:
    """``(kind, "avg10")`` / ``(kind, "avg10_frac")`` / ``(kind, "total")`` for each
    ``some``/``full`` line."""
    mapping: dict = {}
    for ln, line in enumerate(lines):
        toks = split_blanks(line, DECIMALS).split()
        if (
            len(toks) > _TOTAL
            and toks[0] in (b"some", b"full")
            and toks[1] == b"avg10"
            and toks[10] == b"total"
        ):
            kind = toks[0].decode()
            mapping[(kind, "avg10")] = (ln, _AVG10_WHOLE)
            mapping[(kind, "avg10_frac")] = (ln, _AVG10_FRAC)
            mapping[(kind, "total")] = (ln, _TOTAL)
    return mapping, {}


class Pressure(Probe):
    """``some``/``full`` avg10 (%, a gauge) and total stall time (µs, a counter) per resource.

    Each file is a :class:`Table` read with the
    :data:`~reveal_lab.collect.probes._scan.DECIMALS` blanks (``avg10=1.25`` is the
    label ``avg10``, then ``1`` and ``25``: the kernel prints ``%lu.%02lu``), so the
    compiled hot loop computes the row from the batched read (:meth:`compiled_ops`)."""

    name, group = "psi", "procfs"
    description = "/proc/pressure/*: stall averages and totals"

    def open(self, ctx: ProbeContext) -> None:
        self.tables: list[Table] = []
        kinds: list[list[str]] = []
        reasons = []
        for res in ("cpu", "memory", "io", "irq"):
            path = f"/proc/pressure/{res}"
            try:
                t = Table(ctx, ctx.proc(path), _psi_index, colons=DECIMALS)
            except (ProbeUnavailable, OSError) as exc:  # irq pressure needs CONFIG_IRQ_TIME_ACCOUNTING
                reasons.append(f"{res}: {exc}")
                continue
            ks = [k for k, f in t.keys if f == "avg10"]
            if not ks:
                t.close()
                reasons.append(f"{res}: no some/full lines")
                continue
            # keys in a fixed order per kind: avg10 whole, avg10 hundredths, total
            t.keys = [(k, f) for k in ks for f in ("avg10", "avg10_frac", "total")]
            t.relearn()
            self.tables.append(t)
            kinds.append([f"{res}_{k}" for k in ks])
        if not self.tables:
            raise ProbeUnavailable("no /proc/pressure files (kernel without CONFIG_PSI or psi=0)")
        # channel order: floats of all files, then ints of all files (as sample() writes them)
        names = [n for ks in kinds for n in ks]
        self.channels = [Channel("PSI", f"{n}_avg10", None, "%", dtype="f") for n in names]
        self.channels += [Channel("PSI", f"{n}_total", None, "us", counter=True) for n in names]
        self._v = [np.empty(t.n, dtype=np.int64) for t in self.tables]
        self.info["unavailable"] = reasons

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        j = 0
        for t, v in zip(self.tables, self._v, strict=True):
            t.read_into(v)
            m = v.size // 3
            floats[j : j + m] = pr.fixed_point(v[0::3], v[1::3], 100)
            ints[j : j + m] = v[2::3]
            j += m

    def compiled_ops(self) -> list[tuple[int, int, int, int, int, int]] | None:
        if any(t.relayouts for t in self.tables):
            return None
        ops = []
        j = 0
        for ti, t in enumerate(self.tables):
            for i in range(t.n // 3):
                ops.append((ti, pr.OP_FIXED, 3 * i, 3 * i + 1, j, 100))
                ops.append((ti, pr.OP_COPY, 3 * i + 2, 0, j, 1))
                j += 1
        return ops
