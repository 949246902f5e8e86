"""One registry that says what every metric is: its subsystem, its kind and how
interpretable it is (the pruning priority).

Rules are matched in order; each attribute (subsystem, kind, priority) is taken
from the first matching rule that sets it, so a specific rule may set only the
kind and let a broad source rule supply the subsystem. New hardware or metrics
are a :func:`register_metric` call away; unknown names fall back to
``subsystem="system"``, ``kind="dynamic"`` and are flagged ``known=False``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field as dc_field

import polars as pl

from reveal_lab.telemetry._names import MetricName, parse_metric_name

__all__ = [
    "SUBSYSTEMS",
    "KINDS",
    "UNSCORED_KINDS",
    "MetricRule",
    "MetricInfo",
    "MetricRegistry",
    "DEFAULT_REGISTRY",
    "register_metric",
    "classify",
    "catalogue",
]

SUBSYSTEMS: tuple[str, ...] = ("cpu", "gpu", "memory", "network", "storage", "system")
#: dynamic: a level or rate that moves with the workload (statistical + temporal features);
#: counter: sparse event/error counts (summed per window);
#: static: configuration-like values (kept for cross-host comparison only);
#: instrument: the collector's own telemetry (its lag, missed ticks, CPU time): the state of the
#: instrument, not of the host, so kept in the frames as data quality and never scored;
#: smoothed: a kernel average over minutes (the 5- and 15-minute load averages): its value in a
#: window is mostly the minutes before it, so it cannot place a change in a 1-3 s window and
#: keeps "deviating" for minutes after any change (or after a busy hour before the run); the
#: run queue (``threads_runnable``) and pressure (PSI) it averages are scored instead.
KINDS: tuple[str, ...] = ("dynamic", "counter", "static", "instrument", "smoothed")
#: the kinds single-host detection leaves out (no window features, not in pruning)
UNSCORED_KINDS: tuple[str, ...] = ("static", "instrument", "smoothed")

#: Pruning priority: lower is more interpretable and preferred as a cluster representative.
PRIORITY_UTILIZATION = 0
PRIORITY_THROUGHPUT = 1
PRIORITY_RATIO = 2
PRIORITY_RAW = 3
PRIORITY_UNKNOWN = 4


@dataclass(frozen=True, slots=True)
class MetricRule:
    """Pattern → attributes. ``source`` is an fnmatch pattern on the source without
    ``_diff``; ``field`` a regular expression searched in the field."""

    source: str = "*"
    field: str = ".*"
    subsystem: str | None = None
    kind: str | None = None
    priority: int | None = None
    description: str | None = None
    _field_re: re.Pattern[str] = dc_field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.subsystem is not None and self.subsystem not in SUBSYSTEMS:
            raise ValueError(f"unknown subsystem {self.subsystem!r}; expected one of {SUBSYSTEMS}")
        if self.kind is not None and self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r}; expected one of {KINDS}")
        object.__setattr__(self, "_field_re", re.compile(self.field))

    def matches(self, m: MetricName) -> bool:
        return fnmatch.fnmatchcase(m.source, self.source) and self._field_re.search(m.field) is not None


@dataclass(frozen=True, slots=True)
class MetricInfo:
    subsystem: str
    kind: str
    priority: int
    known: bool
    description: str | None = None


#: classifications a registry keeps per name before it starts its memo afresh
CLASSIFY_CACHE_SIZE = 1 << 17


@dataclass
class MetricRegistry:
    """Ordered :class:`MetricRule` list; :meth:`classify` answers from a memo per name that
    holds only while ``rules`` holds the same rule objects in the same order (``rules`` may
    be edited in place or replaced: the memo is checked against it on every call).

    >>> reg = MetricRegistry([MetricRule("Habana", subsystem="gpu")])
    >>> reg.classify("Habana:util.0.h1[%]").subsystem
    'gpu'
    >>> reg.rules.clear()
    >>> reg.classify("Habana:util.0.h1[%]").subsystem
    'system'
    """

    rules: list[MetricRule] = dc_field(default_factory=list)
    # (the rules the memo was made with, name -> its MetricInfo)
    _memo: tuple[tuple[MetricRule, ...], dict] = dc_field(
        default_factory=lambda: ((), {}), init=False, repr=False, compare=False
    )

    def register(self, rule: MetricRule, *, first: bool = True) -> None:
        """Add a rule; ``first=True`` (default) lets it override existing rules."""
        if first:
            self.rules.insert(0, rule)
        else:
            self.rules.append(rule)

    def classify(self, m: MetricName | str | None) -> MetricInfo:
        """Subsystem, kind and priority of a metric name or parsed :class:`MetricName`."""
        rules = tuple(self.rules)
        made_with, memo = self._memo
        if made_with != rules or len(memo) >= CLASSIFY_CACHE_SIZE:
            memo = {}
            self._memo = (rules, memo)
        try:
            return memo[m]
        except KeyError:
            info = memo[m] = self._classify(m, rules)
            return info
        except TypeError:  # an unhashable argument: answered, not kept
            return self._classify(m, rules)

    @staticmethod
    def _classify(m: MetricName | str | None, rules: tuple[MetricRule, ...]) -> MetricInfo:
        if isinstance(m, str):
            m = parse_metric_name(m)
        if m is None:
            return MetricInfo("system", "dynamic", PRIORITY_UNKNOWN, known=False)
        subsystem = kind = priority = desc = None
        known = False
        for rule in rules:
            if not rule.matches(m):
                continue
            if rule.subsystem is not None and subsystem is None:
                subsystem, known = rule.subsystem, True
            kind = kind or rule.kind
            priority = rule.priority if priority is None else priority
            desc = desc or rule.description
            if subsystem is not None and kind is not None and priority is not None:
                break
        if kind is None:
            kind = "counter" if m.diff and _EVENT_RE.search(m.field) else "dynamic"
        return MetricInfo(
            subsystem or "system",
            kind,
            PRIORITY_UNKNOWN if priority is None else priority,
            known=known,
            description=desc,
        )


_EVENT_RE = re.compile(r"(?i)(err|drop|retrans|fail|overrun|collision|ecc|retired|smi$|lost|abort|reset|timeout)")

_DEFAULT_RULES: list[MetricRule] = [
    # --- kinds that cut across sources -------------------------------------------------
    # the collector's self-telemetry: it lags when the host stalls it (a storage burst, a full
    # run queue), so scoring it names the instrument, not a subsystem an operator can act on
    MetricRule("Collector", kind="instrument"),
    MetricRule("System", r"^loadavg(1|5|15)$", kind="smoothed"),
    MetricRule("*", r"(?i)(MemTotal|Hugepagesize|HugePages_Total|SwapTotal|CommitLimit|TSC_MHz|"
               r"memory\.total|pcie\.link\.(gen|width)\.max|power\.(limit|max_limit|default_limit)|"
               r"(^|_)speed$|(^|_)mtu$|cpu_count|quota|cpu\.max|memory\.max|total_cores|"
               r"TcpRto(Algorithm|Min|Max)$|TcpMaxConn$|IpForwarding$|IpDefaultTTL$)",
               kind="static"),
    # bit masks and collector bookkeeping: averaging them means nothing, count changes instead
    MetricRule("*", r"(?i)(throttle_reasons|missed_ticks|oom_kill)", kind="counter"),
    MetricRule("*", _EVENT_RE.pattern, kind="counter"),
    MetricRule("*", r"(?i)(utilization|busy%|util$|Utilization|_pct$|%$)", priority=PRIORITY_UTILIZATION),
    MetricRule("*", r"(?i)(bytes|packets|sectors|throughput|MHz|power|Watt|clocks\.|_kB$|pressure)",
               priority=PRIORITY_THROUGHPUT),
    MetricRule("*", r"(?i)(IPC|ratio|rate|per_)", priority=PRIORITY_RATIO),
    # --- sources -------------------------------------------------------------------------
    MetricRule("GPU", subsystem="gpu", description="nvidia-smi / NVML"),
    MetricRule("Perf", r"(?i)(mem-loads|mem-stores|mem_trans|l3|dram)", subsystem="memory"),
    MetricRule("Perf", subsystem="cpu", priority=PRIORITY_RAW, description="perf stat"),
    MetricRule("Turbostat", r"(?i)(RAMWatt|DRAM)", subsystem="memory"),
    MetricRule("Turbostat", subsystem="cpu", priority=PRIORITY_RAW, description="turbostat"),
    MetricRule("CPU", subsystem="cpu", description="/proc/stat"),
    MetricRule("Interrupts", subsystem="cpu", description="/proc/interrupts"),
    MetricRule("Softirqs", r"(?i)NET_", subsystem="network"),
    MetricRule("Softirqs", r"(?i)BLOCK", subsystem="storage"),
    MetricRule("Softirqs", subsystem="cpu", description="/proc/softirqs"),
    MetricRule("Memory", subsystem="memory", description="/proc/meminfo"),
    MetricRule("Meminfo", subsystem="memory", description="/proc/meminfo"),
    MetricRule("Vmstat", r"(?i)(pgpgin|pgpgout|pswp)", subsystem="storage"),
    MetricRule("Vmstat", subsystem="memory", description="/proc/vmstat"),
    MetricRule("Storage", subsystem="storage", description="/proc/diskstats (summed)"),
    MetricRule("Disk", subsystem="storage", description="/proc/diskstats per device"),
    MetricRule("Network*", subsystem="network"),
    MetricRule("Nstat", subsystem="network", description="/proc/net/snmp, netstat"),
    MetricRule("Sockets", subsystem="network", description="/proc/net/sockstat"),
    MetricRule("PSI", r"(?i)^cpu", subsystem="cpu"),
    MetricRule("PSI", r"(?i)^memory", subsystem="memory"),
    MetricRule("PSI", r"(?i)^io", subsystem="storage"),
    MetricRule("Cgroup", r"(?i)^cpu", subsystem="cpu"),
    MetricRule("Cgroup", r"(?i)^(memory|pgfault|pgmaj)", subsystem="memory"),
    MetricRule("Cgroup", r"(?i)^io", subsystem="storage"),
    MetricRule("Cgroup", subsystem="system"),
    MetricRule("Derived", r"(?i)^(IPC|BranchMissRate|CPUUtilization)", subsystem="cpu", kind="dynamic",
               description="reveal_lab.derive (paper Appendix B)"),
    MetricRule("Derived", r"(?i)^(CacheMissRatio|L3StallRatio|MemoryUtilization)", subsystem="memory",
               kind="dynamic", description="reveal_lab.derive (paper Appendix B)"),
    MetricRule("Derived", r"(?i)^NetworkUtilization", subsystem="network", kind="dynamic",
               description="reveal_lab.derive (paper Appendix B)"),
    MetricRule("System", subsystem="system"),
    MetricRule("Collector", subsystem="system", description="collector self-telemetry"),
]

DEFAULT_REGISTRY = MetricRegistry(list(_DEFAULT_RULES))


def register_metric(
    source: str = "*",
    field: str = ".*",
    *,
    subsystem: str | None = None,
    kind: str | None = None,
    priority: int | None = None,
    description: str | None = None,
    registry: MetricRegistry | None = None,
) -> MetricRule:
    """Teach the registry about a metric or a family of metrics.

    >>> rule = register_metric("Habana", subsystem="gpu", description="Gaudi hl-smi")
    >>> classify("Habana:utilization.0.h1[%]").subsystem
    'gpu'
    >>> _ = DEFAULT_REGISTRY.rules.remove(rule)
    """
    rule = MetricRule(source, field, subsystem, kind, priority, description)
    (registry or DEFAULT_REGISTRY).register(rule)
    return rule


def classify(name: str | MetricName, registry: MetricRegistry | None = None) -> MetricInfo:
    """Subsystem, kind and priority of a metric name.

    >>> classify("NetworkTCPRetrans_diff:TcpRetransSegs.nserver07[count]")
    MetricInfo(subsystem='network', kind='counter', priority=4, known=True, description=None)
    >>> classify("Memory:MemTotal.nserver07[kB]").kind
    'static'
    >>> classify("totally unknown").known
    False
    """
    return (registry or DEFAULT_REGISTRY).classify(name)


CATALOGUE_SCHEMA = {
    "column": pl.String,
    "source": pl.String,
    "field": pl.String,
    "instance": pl.String,
    "host": pl.String,
    "unit": pl.String,
    "diff": pl.Boolean,
    "subsystem": pl.String,
    "kind": pl.String,
    "priority": pl.Int32,
    "known": pl.Boolean,
    "parsed": pl.Boolean,
}


def catalogue(columns: Iterable[str], registry: MetricRegistry | None = None) -> pl.DataFrame:
    """One row per metric column: its parsed parts, subsystem, kind and priority.

    Columns that do not follow the grammar get ``parsed=False`` and fall-back
    attributes; nothing raises.

    >>> cat = catalogue(["Perf:IPC.nserver07[-]", "weird"])
    >>> cat.select("column", "subsystem", "kind", "parsed").rows()
    [('Perf:IPC.nserver07[-]', 'cpu', 'dynamic', True), ('weird', 'system', 'dynamic', False)]
    """
    reg = registry or DEFAULT_REGISTRY
    rows = []
    for col in columns:
        if col == "timestamp":
            continue
        m = parse_metric_name(col)
        info = reg.classify(m)
        rows.append(
            {
                "column": col,
                "source": m.full_source if m else None,
                "field": m.field if m else col,
                "instance": m.instance if m else None,
                "host": m.host if m else None,
                "unit": m.unit if m else None,
                "diff": m.diff if m else False,
                "subsystem": info.subsystem,
                "kind": info.kind,
                "priority": info.priority,
                "known": info.known,
                "parsed": m is not None,
            }
        )
    return pl.DataFrame(rows, schema=CATALOGUE_SCHEMA)
