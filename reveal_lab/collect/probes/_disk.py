"""``/proc/diskstats`` per block device (whole disks; partitions, loop and ram devices left out)."""

from __future__ import annotations

import os
import re

from reveal_lab.collect._probe import (
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


class DiskStats(TableProbe):
    """Cumulative I/O counters per whole disk (``Disk:``); the dataset view also sums
    them over disks as the public dataset's device-less ``Storage_diff:`` columns."""

    name, group = "diskstats", "procfs"
    description = "/proc/diskstats per whole disk (partitions, loop, ram, zram left out)"

    def open(self, ctx: ProbeContext) -> None:
        disks = ctx.options.get("disks") or whole_disks(ctx.sys("/sys/block"))
        with open(ctx.proc("/proc/diskstats"), "rb") as f:
            mapping, _ = _index(f.read().split(b"\n"))
        present = [d for d in disks if (d, 0) in mapping]
        if not present:
            raise ProbeUnavailable("no whole disks in /proc/diskstats")
        nf = min(len(DISK_FIELDS), max(j for (d, j) in mapping if d == present[0]) + 1)
        keys = [(d, j) for d in present for j in range(nf)]
        self.table = Table(ctx, ctx.proc("/proc/diskstats"), _index, keys)
        self.channels = [
            Channel(
                "Disk", DISK_FIELDS[j][0], sanitize_instance(d), DISK_FIELDS[j][1], counter=DISK_FIELDS[j][2]
            )
            for d, j in self.table.keys
        ]
        self.info["devices"] = present
