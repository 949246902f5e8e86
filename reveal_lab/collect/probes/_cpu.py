"""``/proc/stat`` (per core and total) and ``/proc/loadavg``."""

from __future__ import annotations

import os

import numpy as np

from reveal_lab.collect._probe import Channel, Probe, ProbeContext, register_probe
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


@register_probe
class ProcStat(Probe):
    """Per-core and total CPU time (jiffies), context switches, interrupts, forks."""

    name, group = "cpu", "procfs"
    #: sample() only reads its tables into consecutive int slices (batched reads fill them)
    direct_tables = True
    description = "/proc/stat: per-core and total CPU time, ctxt, intr, processes"

    def open(self, ctx: ProbeContext) -> None:
        self.table = Table(ctx, "/proc/stat", _stat_index)
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

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        self.table.read_into(ints)

    def close(self) -> None:
        self.table.close()


@register_probe
class LoadAvg(Probe):
    """Load averages and runnable/total threads from ``/proc/loadavg``."""

    name, group = "loadavg", "procfs"
    description = "/proc/loadavg: 1/5/15-minute load, runnable and total threads"

    def open(self, ctx: ProbeContext) -> None:
        self.fd = ctx.open_ro("/proc/loadavg")
        self._fds = [self.fd]
        self.channels = [
            Channel("System", "loadavg1", None, "-", dtype="f"),
            Channel("System", "loadavg5", None, "-", dtype="f"),
            Channel("System", "loadavg15", None, "-", dtype="f"),
            Channel("System", "threads_runnable", None, "count"),
            Channel("System", "threads_total", None, "count"),
        ]

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        t = os.pread(self.fd, 256, 0).split()
        floats[0], floats[1], floats[2] = float(t[0]), float(t[1]), float(t[2])
        r, _, n = t[3].partition(b"/")
        ints[0], ints[1] = int(r), int(n)
