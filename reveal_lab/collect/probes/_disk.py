"""``/proc/diskstats`` per block device (whole disks; partitions, loop and ram devices left out).

The counters are learnt from ``/proc/diskstats``; each tick reads them from each disk's
``/sys/block/<disk>/stat`` where that file has them all and ``/proc/diskstats`` has
:data:`SYSFS_ROWS_PER_DISK` rows or more per disk read: the kernel prints one device's counters
in both files alike (``part_stat_show`` and ``diskstats_show``: the same fields in the same
order, ``/proc/diskstats`` after the device's numbers and name), and a read of
``/proc/diskstats`` formats every loop, ram and partition device's row as well (26 µs of CPU a
read on a 2-core VM of 10 rows, against 7 µs for one disk's ``stat``). A disk removed while
sampled (its ``stat`` file's reads fail) reads as missing from then on, the other disks' counters
kept.
"""

from __future__ import annotations

import os
import re

import numpy as np

from reveal_lab.collect._probe import (
    MISSING_INT,
    Channel,
    ProbeContext,
    ProbeUnavailable,
    TableProbe,
    sanitize_instance,
)
from reveal_lab.collect.probes._table import Layout, Table

#: (field, unit, counter) in /proc/diskstats column order (Documentation/admin-guide/iostats.rst)
DISK_FIELDS = (
    ("reads_completed", "count", True),
    ("reads_merged", "count", True),
    ("sectors_read", "sectors", True),
    ("time_spent_reading_(ms)", "ms", True),
    ("writes_completed", "count", True),
    ("writes_merged", "count", True),
    ("sectors_written", "sectors", True),
    ("time_spent_writing_(ms)", "ms", True),
    ("ios_in_progress", "count", False),
    ("time_spent_doing_io_(ms)", "ms", True),
    ("weighted_time_spent_doing_io_(ms)", "ms", True),
    ("discards_completed", "count", True),
    ("discards_merged", "count", True),
    ("sectors_discarded", "sectors", True),
    ("time_spent_discarding_(ms)", "ms", True),
    ("flushes_completed", "count", True),
    ("time_spent_flushing_(ms)", "ms", True),
)
SKIP_DEVICES = re.compile(r"^(loop|ram|zram|fd|sr)\d")
#: read each disk's ``/sys/block/<disk>/stat`` where ``/proc/diskstats`` has at least this many
#: rows per disk read (a ``stat`` read costs about a third of a ten-row ``/proc/diskstats``)
SYSFS_ROWS_PER_DISK = 3


def whole_disks(sys_block: str = "/sys/block") -> list[str]:
    """Block devices that are whole disks (``/sys/block`` lists no partitions)."""
    try:
        return sorted(d for d in os.listdir(sys_block) if not SKIP_DEVICES.match(d))
    except OSError:
        return []


def _index(lines: list[bytes]) -> Layout:
    mapping: dict = {}
    for ln, line in enumerate(lines):
        toks = line.split()
        if len(toks) < 14:
            continue
        dev = toks[2].decode()
        for j in range(min(len(DISK_FIELDS), len(toks) - 3)):
            mapping[(dev, j)] = (ln, 3 + j)
    return mapping, {}


def _stat_index(dev: str):  # noqa: ANN202
    """The layout of ``/sys/block/<dev>/stat``: one row of counters, keys ``(dev, field)``
    (those of :func:`_index`)."""

    def index(lines: list[bytes]) -> Layout:
        toks = lines[0].split() if lines else []
        n = min(len(DISK_FIELDS), len(toks))
        return {(dev, j): (0, j) for j in range(n) if toks[j].isdigit()}, {}

    return index


def _sysfs_tables(ctx: ProbeContext, keys: list[tuple[str, int]], present: list[str]) -> list[Table] | None:
    """One :class:`Table` per disk on its ``/sys/block/<disk>/stat``, each with its disk's
    ``keys`` (in order: those ``/proc/diskstats`` has), or ``None`` where a file is missing or
    lacks one of them."""
    tables: list[Table] = []
    try:
        for d in present:
            mine = [k for k in keys if k[0] == d]
            t = Table(ctx, ctx.sys(f"/sys/block/{d}/stat"), _stat_index(d), mine)
            tables.append(t)
            if t.keys != mine:
                raise ProbeUnavailable(f"/sys/block/{d}/stat lacks a field of /proc/diskstats")
    except (ProbeUnavailable, OSError):
        for t in tables:
            t.close()
        return None
    return tables


class DiskStats(TableProbe):
    """Cumulative I/O counters per whole disk (``Disk:``); the dataset view also sums
    them over disks as the public dataset's device-less ``Storage_diff:`` columns."""

    name, group = "diskstats", "procfs"
    description = "/proc/diskstats per whole disk (partitions, loop, ram, zram left out)"

    def open(self, ctx: ProbeContext) -> None:
        disks = ctx.options.get("disks") or whole_disks(ctx.sys("/sys/block"))
        with open(ctx.proc("/proc/diskstats"), "rb") as f:
            lines = f.read().split(b"\n")
        mapping, _ = _index(lines)
        present = [d for d in disks if (d, 0) in mapping]
        if not present:
            raise ProbeUnavailable("no whole disks in /proc/diskstats")
        nf = min(len(DISK_FIELDS), max(j for (d, j) in mapping if d == present[0]) + 1)
        keys = [(d, j) for d in present for j in range(nf) if (d, j) in mapping]
        rows = sum(1 for line in lines if line.strip())
        tables = _sysfs_tables(ctx, keys, present) if rows >= SYSFS_ROWS_PER_DISK * len(present) else None
        if tables is None:
            self.table = Table(ctx, ctx.proc("/proc/diskstats"), _index, keys)
            tables = [self.table]
            self.info["source"] = "/proc/diskstats"
        else:
            self.tables = tables
            self.info["source"] = "/sys/block/<disk>/stat"
        self.channels = [
            Channel(
                "Disk", DISK_FIELDS[j][0], sanitize_instance(d), DISK_FIELDS[j][1], counter=DISK_FIELDS[j][2]
            )
            for t in tables
            for d, j in t.keys
        ]
        self.info["devices"] = present

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:  # noqa: ARG002
        a = 0
        for t in self.own_tables():
            try:
                t.read_into(ints[a : a + t.n])
            except OSError:  # a disk removed (its stat file's reads fail): missing from now on
                t.vanish()
                ints[a : a + t.n] = MISSING_INT
            a += t.n
