"""``/proc/meminfo`` and ``/proc/vmstat``."""

from __future__ import annotations

import re

from reveal_lab.collect._probe import Channel, ProbeContext, TableProbe
from reveal_lab.collect.probes._table import Layout, Table


def _meminfo_index(lines: list[bytes]) -> Layout:
    mapping: dict = {}
    for ln, line in enumerate(lines):
        toks = line.split()
        if len(toks) >= 2 and toks[0].endswith(b":"):
            key = toks[0][:-1].decode()
            mapping[(key, toks[2].decode() if len(toks) > 2 else "")] = (ln, 1)
    return mapping, {}


class MemInfo(TableProbe):
    """Every ``/proc/meminfo`` line as a gauge (kB, or a count for HugePages_*)."""

    name, group = "meminfo", "procfs"
    description = "/proc/meminfo: all fields (kB)"

    def open(self, ctx: ProbeContext) -> None:
        self.table = Table(ctx, ctx.proc("/proc/meminfo"), _meminfo_index)
        self.channels = [
            Channel("Memory", sanitize_field(key), None, unit or "count") for key, unit in self.table.keys
        ]


def sanitize_field(name: str) -> str:
    """``Active(anon)`` → ``Active_anon``: fields keep to ``[A-Za-z0-9_%-]``."""
    return re.sub(r"[^A-Za-z0-9_%-]+", "_", name).strip("_")


#: /proc/vmstat keys kept by default: dirty/writeback, reclaim, swap, faults, THP,
#: compaction, OOM, NUMA and working set (the full file has ~190 keys).
VMSTAT_KEYS = re.compile(
    r"^(nr_(free_pages|dirty|writeback|dirtied|written|file_pages|anon_pages|mapped|shmem|slab_reclaimable|"
    r"slab_unreclaimable|inactive_anon|active_anon|inactive_file|active_file|unevictable|anon_transparent_hugepages|"
    r"swapcached|kernel_stack|page_table_pages)|pgpgin|pgpgout|pswpin|pswpout|pgfault|pgmajfault|pgalloc_normal|"
    r"pgfree|pgactivate|pgdeactivate|pgsteal_(kswapd|direct)|pgscan_(kswapd|direct)|allocstall_normal|"
    r"workingset_(refault_anon|refault_file|activate_anon|activate_file)|oom_kill|compact_(stall|fail|success)|"
    r"thp_fault_alloc|thp_fault_fallback|thp_collapse_alloc|numa_(hit|miss|foreign|local|other)|"
    r"htlb_buddy_alloc_success|drop_pagecache|kswapd_low_wmark_hit_quickly|pgmigrate_success)$"
)


def _vmstat_index(lines: list[bytes]) -> Layout:
    mapping: dict = {}
    for ln, line in enumerate(lines):
        toks = line.split()
        if len(toks) == 2:
            mapping[toks[0].decode()] = (ln, 1)
    return mapping, {}


class VmStat(TableProbe):
    """``/proc/vmstat``: ``nr_*`` gauges (pages) and cumulative event counters.

    ``ctx.options["vmstat_all"] = True`` keeps every key instead of the default set.
    """

    name, group = "vmstat", "procfs"
    description = "/proc/vmstat: dirty, writeback, swap, page faults, reclaim, THP, NUMA"

    def open(self, ctx: ProbeContext) -> None:
        keep_all = bool(ctx.options.get("vmstat_all"))

        def index(lines: list[bytes]) -> Layout:
            mapping, fixed = _vmstat_index(lines)
            if not keep_all:
                mapping = {k: v for k, v in mapping.items() if VMSTAT_KEYS.match(k)}
            return mapping, fixed

        self.table = Table(ctx, ctx.proc("/proc/vmstat"), index)
        self.channels = [
            Channel("Vmstat", k, None, "pages", counter=False)
            if k.startswith("nr_") and k not in ("nr_dirtied", "nr_written")
            else Channel("Vmstat", k, None, "count", counter=True)
            for k in self.table.keys
        ]
