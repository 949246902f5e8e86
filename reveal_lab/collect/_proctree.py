"""A synthetic host of any number of cores, as a ``/proc`` and ``/sys`` tree in the kernel's
formats, for the collector to read through ``proc_root``/``sys_root`` (its probes then parse
exactly what they parse on a real host of that size).

The files whose size grows with the cores are written as the kernel writes them:
``/proc/stat`` (``fs/proc/stat.c``: the ``cpu`` lines, ``intr`` with one count per IRQ
number, ``softirq``), ``/proc/interrupts`` (``kernel/irq/proc.c`` and x86's
``arch_show_interrupts``: ``%*d:`` then `` %10u`` per core, the chip, hardware IRQ and
name; the named classes ``NMI`` ... ``PIW``, ``ERR`` and ``MIS`` with one value) and
``/proc/softirqs`` (``%12s:`` then `` %10u`` per core). Counts are seeded pseudo-random
numbers of realistic sizes. A host of ``c`` cores has ``8 + c`` device IRQs (a queue per
core, as NVMe and multi-queue NICs have; 24 at 16 cores, as on the H200 host of
``shared/data/gpu-host``) and ``408 + 8 c`` IRQ numbers in ``intr``. The other files do
not grow with the cores and are copied from this host's ``/proc`` (``meminfo``,
``vmstat``, ``loadavg``, ``diskstats``, ``pressure/*``, ``self/net/*``), with its disks
listed under ``sys/block``.

>>> files = per_core_files(4)
>>> files["softirqs"].split(b"\\n")[1].split()[0]
b'HI:'
>>> files["interrupts"].split(b"\\n")[0].split()
[b'CPU0', b'CPU1', b'CPU2', b'CPU3']
>>> sum(1 for ln in files["stat"].split(b"\\n") if ln.startswith(b"cpu"))
5
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["per_core_files", "write_proc_tree", "ProcTreeMover", "ROW_CHANGE", "NAMED_IRQS", "SOFTIRQS"]

#: x86's named interrupt classes in ``/proc/interrupts`` (label, description); ``ERR`` and
#: ``MIS`` carry one value, not one per core
NAMED_IRQS: tuple[tuple[str, str], ...] = (
    ("NMI", "Non-maskable interrupts"),
    ("LOC", "Local timer interrupts"),
    ("SPU", "Spurious interrupts"),
    ("PMI", "Performance monitoring interrupts"),
    ("IWI", "IRQ work interrupts"),
    ("RTR", "APIC ICR read retries"),
    ("RES", "Rescheduling interrupts"),
    ("CAL", "Function call interrupts"),
    ("TLB", "TLB shootdowns"),
    ("TRM", "Thermal event interrupts"),
    ("HYP", "Hypervisor callback interrupts"),
    ("ERR", ""),
    ("MIS", ""),
    ("PIN", "Posted-interrupt notification event"),
    ("NPI", "Nested posted-interrupt event"),
    ("PIW", "Posted-interrupt wakeup event"),
)
#: the softirq types, in the kernel's order
SOFTIRQS = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU")

#: the files copied from this host's /proc (relative to it); missing ones are left out
COPIED = (
    "loadavg",
    "meminfo",
    "vmstat",
    "diskstats",
    "pressure/cpu",
    "pressure/memory",
    "pressure/io",
    "pressure/irq",
    "self/net/dev",
    "self/net/snmp",
    "self/net/netstat",
    "self/net/sockstat",
    "self/net/sockstat6",
    "self/net/unix",
    "self/net/protocols",
)


def _counts(rng: np.random.Generator, shape: tuple[int, ...], digits: int) -> np.ndarray:
    """Counts of up to ``digits`` digits, a quarter of them zero (idle cores, quiet IRQs)."""
    v = rng.integers(0, 10**digits, size=shape, dtype=np.int64) >> rng.integers(0, 20, size=shape)
    v[rng.random(shape) < 0.25] = 0
    return v


def _row(label: str, prec: int, values: np.ndarray, tail: str) -> str:
    return f"{label:>{prec}}:" + "".join(f" {v:10d}" for v in values) + tail


def per_core_files(cores: int, seed: int = 0) -> dict[str, bytes]:
    """``{"stat", "interrupts", "softirqs"}``: the three files of a host of ``cores`` cores."""
    rng = np.random.default_rng([seed, cores])
    n_dev = 8 + cores
    nr_irqs = 408 + 8 * cores
    prec = 3
    j = 1000
    while prec < 10 and j <= nr_irqs:
        prec += 1
        j *= 10
    # /proc/interrupts
    lines = [" " * (prec + 8) + "".join(f"CPU{c:<8d}" for c in range(cores))]
    dev = _counts(rng, (n_dev, cores), 8)
    for i in range(n_dev):
        irq = 24 + i
        if i < 8:
            chip, hw, name = "IO-APIC", i + 1, f"acpi-{i}"
        else:
            chip, hw, name = "IR-PCI-MSIX-0000:41:00.0", i - 8, f"nvme0q{i - 8}"
        lines.append(_row(str(irq), prec, dev[i], f" {chip:>8} {hw:>{prec}}-edge      {name}"))
    for label, desc in NAMED_IRQS:
        if label in ("ERR", "MIS"):
            lines.append(f"{label:>{prec}}: {0:10d}")
        else:
            lines.append(_row(label, prec, _counts(rng, (cores,), 9), f"   {desc}"))
    interrupts = "\n".join(lines) + "\n"
    # /proc/softirqs
    soft = _counts(rng, (len(SOFTIRQS), cores), 9)
    lines = [" " * 20 + "".join(f"CPU{c:<8d}" for c in range(cores))]
    lines += [f"{name:>12}:" + "".join(f" {v:10d}" for v in soft[k]) for k, name in enumerate(SOFTIRQS)]
    softirqs = "\n".join(lines) + "\n"
    # /proc/stat
    per_cpu = _counts(rng, (cores, 10), 7)
    per_cpu[:, 8:] = 0  # guest time
    total = per_cpu.sum(axis=0)
    intr = np.zeros(nr_irqs, dtype=np.int64)
    intr[24 : 24 + n_dev] = dev.sum(axis=1)
    lines = ["cpu  " + " ".join(str(v) for v in total)]
    lines += [f"cpu{c} " + " ".join(str(v) for v in per_cpu[c]) for c in range(cores)]
    lines.append(f"intr {int(intr.sum())} " + " ".join(str(v) for v in intr))
    lines += [
        f"ctxt {int(rng.integers(10**8, 10**9))}",
        "btime 1795856125",
        f"processes {int(rng.integers(10**5, 10**6))}",
        f"procs_running {1 + cores // 8}",
        "procs_blocked 0",
        f"softirq {int(soft.sum())} " + " ".join(str(int(v)) for v in soft.sum(axis=1)),
    ]
    stat = "\n".join(lines) + "\n"
    return {"stat": stat.encode(), "interrupts": interrupts.encode(), "softirqs": softirqs.encode()}


def write_proc_tree(
    root: str | Path, cores: int, *, seed: int = 0, host_proc: str = "/proc", host_sys: str = "/sys"
) -> tuple[Path, Path]:
    """Write a host of ``cores`` cores under ``root`` (``root/proc``, ``root/sys``);
    returns ``(proc_root, sys_root)`` for :func:`~reveal_lab.collect.collect`."""
    root = Path(root)
    proc, sys_ = root / "proc", root / "sys"
    for name, data in per_core_files(cores, seed).items():
        (proc / name).parent.mkdir(parents=True, exist_ok=True)
        (proc / name).write_bytes(data)
    for rel in COPIED:
        try:
            with open(os.path.join(host_proc, rel), "rb") as f:
                data = f.read()
        except OSError:
            continue
        (proc / rel).parent.mkdir(parents=True, exist_ok=True)
        (proc / rel).write_bytes(data)
    block = sys_ / "block"
    block.mkdir(parents=True, exist_ok=True)
    try:
        disks = os.listdir(os.path.join(host_sys, "block"))
    except OSError:
        disks = []
    for d in disks:
        (block / d).mkdir(exist_ok=True)
    return proc, sys_


#: the chance that a row of ``/proc/interrupts`` or ``/proc/softirqs`` changes in a 100 ms tick,
#: by label (``devices``: each numbered device IRQ row; others: never). On the 16-core H200 host
#: of ``shared/data/gpu-host`` (``gpu-a`` and ``gpu-phases`` after their first 15 s) ``LOC``,
#: ``CAL`` and ``SCHED`` changed on every tick, ``TIMER`` on 93 %, ``RES`` on 4-17 %, ``BLOCK`` on
#: 11-12 %, ``RCU`` on 9-14 %, ``TLB`` on 2-3 %, and some device IRQ on 12-14 % of the ticks (all
#: device rows together); the others never. The rates here are those or busier (a larger host
#: with network and disk traffic): each device row changes on 10 % of the ticks, 20 of them per
#: tick on a 192-core tree.
ROW_CHANGE: dict[str, float] = {
    "LOC": 1.0,
    "CAL": 1.0,
    "RES": 0.5,
    "TLB": 0.1,
    "IWI": 0.1,
    "devices": 0.1,
    "SCHED": 1.0,
    "TIMER": 1.0,
    "RCU": 0.3,
    "BLOCK": 0.2,
    "NET_RX": 0.2,
    "NET_TX": 0.1,
}


class ProcTreeMover:
    """Move the per-core counters of a tree written by :func:`write_proc_tree` as a host's
    move: on each :meth:`step`, each row of ``/proc/interrupts`` and ``/proc/softirqs``
    changes with its chance in ``row_change`` (:data:`ROW_CHANGE`), some of its cores'
    counts growing; the row is written in place (same width, same offset), so a reader
    holding the file open sees it change as it would in ``/proc``.

    >>> import tempfile
    >>> proc, _ = write_proc_tree(tempfile.mkdtemp(), 4)
    >>> before = (proc / "interrupts").read_bytes()
    >>> m = ProcTreeMover(proc, row_change={"LOC": 1.0})
    >>> m.step()
    1
    >>> after = (proc / "interrupts").read_bytes()
    >>> len(after) == len(before), sum(a != b for a, b in zip(before.split(), after.split())) > 0
    (True, True)
    >>> [a.split()[0] for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    [b'LOC:']
    >>> m.close()
    """

    def __init__(
        self, proc: str | Path, *, seed: int = 0, row_change: dict[str, float] | None = None
    ) -> None:
        self.rng = np.random.default_rng(seed)
        change = ROW_CHANGE if row_change is None else row_change
        self.fds: list[int] = []
        # per row: (fd, byte offset of its first column, its counts, chance of changing)
        self.rows: list[tuple[int, int, np.ndarray, float]] = []
        for name in ("interrupts", "softirqs"):
            path = Path(proc) / name
            data = path.read_bytes()
            fd = os.open(path, os.O_WRONLY)
            self.fds.append(fd)
            lines = data.split(b"\n")
            ncpu = len(lines[0].split())
            pos = len(lines[0]) + 1
            for line in lines[1:]:
                colon = line.find(b":")
                if colon > 0:
                    label = line[:colon].strip().decode()
                    p = change.get("devices" if label.isdigit() else label, 0.0)
                    toks = line[colon + 1 :].split()[:ncpu]
                    k = 0
                    while k < len(toks) and toks[k].isdigit():
                        k += 1
                    counts = np.array([int(t) for t in toks[:k]], dtype=np.int64)
                    if p > 0 and line[colon + 1 : colon + 1 + 11 * k] == b"".join(
                        b" %10d" % v for v in counts
                    ):
                        self.rows.append((fd, pos + colon + 1, counts, p))
                pos += len(line) + 1

    def step(self) -> int:
        """One tick: rows changed and written; returns how many."""
        rng = self.rng
        n = 0
        for fd, off, counts, p in self.rows:
            if rng.random() >= p:
                continue
            grow = rng.random(counts.size) < 0.5
            grow[rng.integers(0, counts.size)] = True
            counts += np.where(grow, rng.integers(1, 200, counts.size), 0)
            np.minimum(counts, 9_999_999_999, out=counts)
            os.pwrite(fd, b"".join(b" %10d" % v for v in counts), off)
            n += 1
        return n

    def run(self, interval_s: float, seconds: float | None = None) -> None:
        """:meth:`step` every ``interval_s`` (for ``seconds``, or until killed)."""
        import time

        t0 = time.monotonic()
        k = 0
        while seconds is None or time.monotonic() - t0 < seconds:
            self.step()
            k += 1
            time.sleep(max(0.0, t0 + k * interval_s - time.monotonic()))

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []
