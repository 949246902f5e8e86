"""``/proc/interrupts`` and ``/proc/softirqs`` per core (IRQ imbalance shows here)."""

from __future__ import annotations

import sys

import numpy as np

from reveal_lab.collect._probe import (
    MISSING_INT,
    OP_COLSUM,
    OP_COPY,
    Channel,
    Probe,
    ProbeContext,
    ProbeUnavailable,
    TableProbe,
)
from reveal_lab.collect.probes._scan import FIXED_WIDTH
from reveal_lab.collect.probes._table import Layout, Table

#: the scan mode of the per-core tables: their `` %10u`` columns a column at a time, where a
#: 64-bit load is little-endian (elsewhere mode 0: the same values, byte by byte)
PERCPU_MODE = FIXED_WIDTH if sys.byteorder == "little" else 0


def _percpu_index(lines: list[bytes]) -> Layout:
    """Rows ``LABEL: v_cpu0 v_cpu1 ... [description]`` under a ``CPU0 CPU1 ...`` header."""
    mapping: dict = {}
    head = lines[0].split()
    ncpu = sum(1 for t in head if t.startswith(b"CPU"))
    for ln, line in enumerate(lines[1:], start=1):
        toks = line.split(None, ncpu + 1)
        if not toks:
            continue
        label = toks[0].rstrip(b":").decode()
        for j in range(ncpu):
            if 1 + j < len(toks) and toks[1 + j].isdigit():
                mapping[(label, j)] = (ln, 1 + j)
            else:
                break
    return mapping, {0: lines[0]}


class Interrupts(Probe):
    """Per core: every named interrupt class (``LOC``, ``RES``, ``CAL``, ``TLB`` ...)
    and the sum of all numbered device IRQs (``devices``)."""

    name, group = "interrupts", "procfs"
    description = "/proc/interrupts per core: named classes and device IRQs summed"

    def open(self, ctx: ProbeContext) -> None:
        self.table = Table(
            ctx, ctx.proc("/proc/interrupts"), _percpu_index, colons=PERCPU_MODE, changed_rows=True
        )
        keys = self.table.keys
        ncpu = max(j for _, j in keys) + 1
        named = list(dict.fromkeys(lab for lab, _ in keys if not lab.isdigit()))
        numbered = list(dict.fromkeys(lab for lab, _ in keys if lab.isdigit()))
        # named rows with one value per core first (ERR/MIS have a single value: kept as core 0)
        have = set(keys)
        order = [(lab, j) for lab in named for j in range(ncpu) if (lab, j) in have]
        order += [(lab, j) for lab in numbered for j in range(ncpu) if (lab, j) in have]
        self.table.keys = order
        self.table.relearn()
        self.n_named = sum(1 for lab, _ in order if not lab.isdigit())
        self.ncpu = ncpu
        self.n_numbered_rows = len(numbered)
        self.channels = [
            Channel("Interrupts", lab, str(j), "count", counter=True) for lab, j in order[: self.n_named]
        ]
        self.channels += [
            Channel("Interrupts", "devices", str(j), "count", counter=True) for j in range(ncpu)
        ]
        self.info["device_irqs"] = len(numbered)
        self._buf = np.empty(len(order), dtype=np.int64)
        if (len(order) - self.n_named) % ncpu:
            raise ProbeUnavailable("/proc/interrupts has device IRQ rows without one count per core")

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        v = self._buf
        self.table.read_into(v)
        nn = self.n_named
        ints[:nn] = v[:nn]
        dev = v[nn:].reshape(-1, self.ncpu)
        if self.table.relayouts:  # an IRQ vanished since start: count it as zero
            dev = np.where(dev == MISSING_INT, 0, dev)
        dev.sum(axis=0, out=ints[nn:])

    def compiled_ops(self) -> list[tuple[int, int, int, int, int, int]] | None:
        """Named rows copied, device IRQ rows summed per core (as :meth:`sample`), an IRQ
        vanished since start (a device's vectors freed) counting as zero in the sum and a
        vanished named row reading as missing, so the compiled loop goes on after a relayout."""
        nn, ncpu = self.n_named, self.ncpu
        ops = [(0, OP_COPY, i, 0, i, 1) for i in range(nn)]
        rows = (self.table.n - nn) // ncpu
        ops += [(0, OP_COLSUM, nn + c, rows, nn + c, ncpu) for c in range(ncpu)]
        return ops


class Softirqs(TableProbe):
    """Per-core softirq counts by type (``NET_RX``, ``TIMER``, ``BLOCK`` ...)."""

    name, group = "softirqs", "procfs"
    description = "/proc/softirqs per core and type"

    def open(self, ctx: ProbeContext) -> None:
        self.table = Table(
            ctx, ctx.proc("/proc/softirqs"), _percpu_index, colons=PERCPU_MODE, changed_rows=True
        )
        self.channels = [
            Channel("Softirqs", lab, str(j), "count", counter=True) for lab, j in self.table.keys
        ]
