"""``/proc/interrupts`` and ``/proc/softirqs`` per core (IRQ imbalance shows here)."""

from __future__ import annotations

from reveal_lab.collect._probe import MISSING_INT, Channel, Probe, ProbeContext, register_probe
from reveal_lab.collect.probes._table import Layout, Table, lines_tokens


def _percpu_index(data: bytes) -> Layout:
    """Rows ``LABEL: v_cpu0 v_cpu1 ... [description]`` under a ``CPU0 CPU1 ...`` header."""
    mapping: dict = {}
    anchors: dict[int, bytes] = {}
    rows = lines_tokens(data)
    hoff, head = next(rows)
    ncpu = sum(1 for t in head if t.startswith(b"CPU"))
    anchors[hoff] = head[0]
    anchors[hoff + len(head) - 1] = head[-1]
    for off, toks in rows:
        label = toks[0].rstrip(b":").decode()
        anchors[off] = toks[0]
        n = 0
        for j in range(ncpu):
            if 1 + j < len(toks) and toks[1 + j].isdigit():
                mapping[(label, j)] = off + 1 + j
                n += 1
            else:
                break
    return mapping, anchors


@register_probe
class Interrupts(Probe):
    """Per core: every named interrupt class (``LOC``, ``RES``, ``CAL``, ``TLB`` ...)
    and the sum of all numbered device IRQs (``devices``)."""

    name, group = "interrupts", "procfs"
    description = "/proc/interrupts per core: named classes and device IRQs summed"

    def open(self, ctx: ProbeContext) -> None:
        self.table = Table(ctx, "/proc/interrupts", _percpu_index)
        keys = self.table.keys
        ncpu = max(j for _, j in keys) + 1
        named = list(dict.fromkeys(lab for lab, _ in keys if not lab.isdigit()))
        numbered = list(dict.fromkeys(lab for lab, _ in keys if lab.isdigit()))
        # named rows with one value per core first (ERR/MIS have a single value: kept as core 0)
        order = [(lab, j) for lab in named for j in range(ncpu) if (lab, j) in set(keys)]
        order += [(lab, j) for lab in numbered for j in range(ncpu) if (lab, j) in set(keys)]
        self.table.keys = order
        self.table._build(*self.table.index(self.table._prep(self.table._read())))
        self.n_named = sum(1 for lab, _ in order if not lab.isdigit())
        self.ncpu = ncpu
        self.n_numbered_rows = len(numbered)
        self.channels = [Channel("Interrupts", lab, str(j), "count", counter=True)
                         for lab, j in order[: self.n_named]]
        self.channels += [Channel("Interrupts", "devices", str(j), "count", counter=True) for j in range(ncpu)]
        self.info["device_irqs"] = len(numbered)

    def sample(self, ints: list[int], floats: list[float]) -> None:
        v = self.table.values()
        nn = self.n_named
        ints.extend(v[:nn])
        dev = v[nn:]
        n = self.ncpu
        if MISSING_INT in dev:
            dev = [0 if x == MISSING_INT else x for x in dev]
        ints.extend(sum(dev[j::n]) for j in range(n))

    def close(self) -> None:
        self.table.close()


@register_probe
class Softirqs(Probe):
    """Per-core softirq counts by type (``NET_RX``, ``TIMER``, ``BLOCK`` ...)."""

    name, group = "softirqs", "procfs"
    description = "/proc/softirqs per core and type"

    def open(self, ctx: ProbeContext) -> None:
        self.table = Table(ctx, "/proc/softirqs", _percpu_index)
        self.channels = [Channel("Softirqs", lab, str(j), "count", counter=True) for lab, j in self.table.keys]

    def sample(self, ints: list[int], floats: list[float]) -> None:
        ints.extend(self.table.values())

    def close(self) -> None:
        self.table.close()
