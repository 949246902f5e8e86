"""``/proc/stat`` (per core and total) and ``/proc/loadavg``."""

from __future__ import annotations

import os

import numpy as np

from reveal_lab.collect._probe import (
    OP_COPY,
    OP_FIXED,
    Channel,
    Probe,
    ProbeContext,
    ProbeUnavailable,
    TableProbe,
    fixed_point,
)
from reveal_lab.collect.probes._scan import DECIMALS, split_blanks
from reveal_lab.collect.probes._table import Layout, Table

#: /proc/stat cpu columns we keep (guest time is already inside user/nice)
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
#: single-number lines: (label, field, counter?)
SCALARS = (
    ("ctxt", "ctxt", True),
    ("processes", "processes", True),
    ("procs_running", "procs_running", False),
    ("procs_blocked", "procs_blocked", False),
)


def _stat_index(lines: list[bytes]) -> Layout:
    mapping: dict = {}
    for ln, line in enumerate(lines):
        toks = line.split(None, 12)
        if not toks:
            continue
        label = toks[0]
        if label.startswith(b"cpu"):
            inst = "-" if label == b"cpu" else label[3:].decode()
            for j, f in enumerate(CPU_FIELDS):
                if 1 + j < len(toks):
                    mapping[(inst, f)] = (ln, 1 + j)
        elif label == b"intr":
            mapping[("intr",)] = (ln, 1)
        else:
            for lab, f, _ in SCALARS:
                if label == lab.encode():
                    mapping[(f,)] = (ln, 1)
    return mapping, {}


class ProcStat(TableProbe):
    """Per-core and total CPU time (jiffies), context switches, interrupts, forks."""

    name, group = "cpu", "procfs"
    description = "/proc/stat: per-core and total CPU time, ctxt, intr, processes"

    def open(self, ctx: ProbeContext) -> None:
        self.table = Table(ctx, ctx.proc("/proc/stat"), _stat_index)
        self.channels = []
        for key in self.table.keys:
            if len(key) == 2:
                # raw jiffies: the dataset view shows them as percentages instead
                self.channels.append(
                    Channel("CPU", key[1], key[0], "jiffies", counter=True, dataset_source="")
                )
            else:
                counter = key[0] in ("intr", "ctxt", "processes")
                self.channels.append(Channel("CPU", key[0], None, "count", counter=counter))
        self.info["clock_ticks_per_s"] = os.sysconf("SC_CLK_TCK")
        self.info["cores"] = sorted({k[0] for k in self.table.keys if len(k) == 2 and k[0] != "-"}, key=int)


class LoadAvg(Probe):
    """Load averages and runnable/total threads from ``/proc/loadavg``.

    The file (``0.42 0.90 1.43 2/345 12345``) is a :class:`Table` read with the
    :data:`~reveal_lab.collect.probes._scan.DECIMALS` blanks: each load average is its
    integer and hundredths (the kernel prints ``%lu.%02lu``), so the compiled hot loop
    computes the row from the batched read (:meth:`compiled_ops`)."""

    name, group = "loadavg", "procfs"
    description = "/proc/loadavg: 1/5/15-minute load, runnable and total threads"

    def open(self, ctx: ProbeContext) -> None:
        self.table = Table(ctx, ctx.proc("/proc/loadavg"), _loadavg_index, colons=DECIMALS)
        if len(self.table.keys) != len(_LOADAVG_KEYS):
            self.table.close()
            raise ProbeUnavailable(f"/proc/loadavg has an unexpected layout (found {self.table.keys})")
        self._v = np.empty(len(_LOADAVG_KEYS), dtype=np.int64)
        self.channels = [
            Channel("System", "loadavg1", None, "-", dtype="f"),
            Channel("System", "loadavg5", None, "-", dtype="f"),
            Channel("System", "loadavg15", None, "-", dtype="f"),
            Channel("System", "threads_runnable", None, "count"),
            Channel("System", "threads_total", None, "count"),
        ]

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        v = self._v
        self.table.read_into(v)
        floats[:] = fixed_point(v[0:6:2], v[1:6:2], 100)
        ints[0], ints[1] = v[6], v[7]

    def compiled_ops(self) -> list[tuple[int, int, int, int, int, int]] | None:
        if self.table.relayouts:
            return None
        ops = [(0, OP_FIXED, 2 * i, 2 * i + 1, i, 100) for i in range(3)]
        return ops + [(0, OP_COPY, 6, 0, 0, 1), (0, OP_COPY, 7, 0, 1, 1)]


#: /proc/loadavg's values, with the DECIMALS blanks: load 1/5/15 (whole, hundredths), runnable, total
_LOADAVG_KEYS = ("l1", "l1f", "l5", "l5f", "l15", "l15f", "runnable", "total")


def _loadavg_index(lines: list[bytes]) -> Layout:
    toks = split_blanks(lines[0], DECIMALS).split() if lines else []
    if len(toks) < 9 or not all(t.isdigit() for t in toks[:8]):
        return {}, {}
    return {k: (0, i) for i, k in enumerate(_LOADAVG_KEYS)}, {}
