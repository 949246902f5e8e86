"""Words for evidence: readable metric names and Table-4-style claims."""

from __future__ import annotations

import math
import re

from reveal_lab.telemetry import classify, parse_metric_name

__all__ = ["readable_metric", "claim", "format_value", "READABLE", "FEATURE_WORDS"]

#: (source without ``_diff``, field) → readable name. Unknown metrics fall back to
#: "<subsystem> <field in words>" with the registry's description.
READABLE: dict[tuple[str, str], str] = {
    # turbostat
    ("Turbostat", "Busy%"): "CPU busy time",
    ("Turbostat", "Bzy_MHz"): "CPU operating frequency",
    ("Turbostat", "Avg_MHz"): "CPU average frequency",
    ("Turbostat", "TSC_MHz"): "CPU TSC frequency",
    ("Turbostat", "IPC"): "CPU instructions per cycle",
    ("Turbostat", "C1%"): "CPU C1 idle residency",
    ("Turbostat", "CPU%c6"): "CPU C6 idle residency",
    ("Turbostat", "PkgWatt"): "CPU package power",
    ("Turbostat", "CorWatt"): "CPU core power",
    ("Turbostat", "RAMWatt"): "DRAM power",
    ("Turbostat", "CoreTmp"): "CPU core temperature",
    ("Turbostat", "PkgTmp"): "CPU package temperature",
    ("Turbostat", "IRQ"): "CPU interrupts",
    ("Turbostat", "SMI"): "System management interrupts",
    # perf
    ("Perf", "Cycles"): "CPU cycles",
    ("Perf", "Instructions"): "Instructions retired",
    ("Perf", "IPC"): "Instructions per cycle",
    ("Perf", "Branches"): "Branch instructions",
    ("Perf", "Branch_Misses"): "Branch misses",
    ("Perf", "BranchUtilization"): "Branch-miss rate",
    ("Perf", "Cache_References"): "Cache references",
    ("Perf", "Cache_Misses"): "Cache misses",
    ("Perf", "CacheUtilization"): "Cache-miss ratio",
    ("Perf", "StallRatio"): "L3-miss stall ratio",
    ("Perf", "Mem-loads"): "Memory loads",
    ("Perf", "Mem-stores"): "Memory stores",
    # /proc/stat
    ("CPU", "user"): "CPU user time",
    ("CPU", "system"): "CPU system time",
    ("CPU", "iowait"): "CPU I/O wait",
    ("CPU", "idle"): "CPU idle time",
    ("CPU", "softirq"): "CPU softirq time",
    ("CPU", "CPUUtilization"): "CPU utilization",
    ("CPU", "User%"): "CPU user time",
    ("CPU", "System%"): "CPU system time",
    ("CPU", "Idle%"): "CPU idle time",
    ("CPU", "IOWait%"): "CPU I/O wait",
    ("CPU", "ctxt"): "Context switches",
    ("CPU", "intr"): "Interrupts",
    ("CPU", "procs_running"): "Runnable processes",
    ("CPU", "procs_blocked"): "Processes blocked on I/O",
    ("PSI", "cpu_some_total"): "CPU pressure stall time",
    ("PSI", "memory_some_total"): "Memory pressure stall time",
    ("PSI", "memory_full_total"): "Memory full-stall time",
    ("PSI", "io_some_total"): "I/O pressure stall time",
    ("PSI", "io_full_total"): "I/O full-stall time",
    ("Memory", "MemAvailable"): "Available memory",
    ("Memory", "MemFree"): "Free memory",
    ("Memory", "Cached"): "Page cache",
    ("Memory", "Dirty"): "Dirty pages",
    ("Memory", "AnonPages"): "Anonymous memory",
    ("Vmstat", "pgmajfault"): "Major page faults",
    ("Vmstat", "pgfault"): "Page faults",
    ("Vmstat", "pswpin"): "Pages swapped in",
    ("Vmstat", "pswpout"): "Pages swapped out",
    ("Nstat", "TcpRetransSegs"): "Network TCP retransmissions",
    ("Nstat", "TcpInSegs"): "TCP segments received",
    ("Nstat", "TcpOutSegs"): "TCP segments sent",
    # GPU
    ("GPU", "utilization.gpu"): "GPU utilization",
    ("GPU", "utilization.memory"): "GPU memory-bandwidth utilization",
    ("GPU", "power.draw"): "GPU power draw",
    ("GPU", "temperature.gpu"): "GPU temperature",
    ("GPU", "clocks.sm"): "GPU SM clock",
    ("GPU", "clocks.mem"): "GPU memory clock",
    ("GPU", "memory.used"): "GPU memory used",
    ("GPU", "ecc.errors.corrected.volatile.dram"): "GPU corrected ECC errors",
    # memory
    ("Memory", "MemoryUtilization"): "Memory utilization",
    ("Memory", "MemTotal"): "Total memory",
    ("Memory", "HugePages_Total"): "HugePages configured",
    ("Memory", "Hugepagesize"): "HugePage size",
    ("Meminfo", "MemAvailable"): "Available memory",
    ("Meminfo", "Cached"): "Page cache",
    ("Meminfo", "Dirty"): "Dirty pages",
    ("Meminfo", "AnonPages"): "Anonymous memory",
    # network
    ("NetworkInterStat", "rx_bytes"): "Network receive bytes",
    ("NetworkInterStat", "tx_bytes"): "Network transmit bytes",
    ("NetworkInterStat", "rx_packets"): "Network receive packets",
    ("NetworkInterStat", "tx_packets"): "Network transmit packets",
    ("NetworkInterStat", "rx_drop"): "Network receive drops",
    ("NetworkInterStat", "tx_drop"): "Network transmit drops",
    ("NetworkInterStat", "rx_errors"): "Network receive errors",
    ("NetworkInterStat", "tx_errors"): "Network transmit errors",
    ("NetworkInterStat", "NetworkUtilization"): "Network utilization",
    ("NetworkInterStat", "speed"): "Network link speed",
    ("NetworkTCPRetrans", "TcpRetransSegs"): "Network TCP retransmissions",
    ("NetworkTCPRetrans", "TcpExtTCPSynRetrans"): "TCP SYN retransmissions",
    ("NetworkProtocolCounts", "TCP"): "Open TCP sockets",
    ("NetworkProtocolCounts", "UDP"): "Open UDP sockets",
    ("NetworkProtocolCounts", "total_connections"): "Open connections",
    # storage
    ("Storage", "sectors_read"): "Disk sectors read",
    ("Storage", "sectors_written"): "Disk sectors written",
    ("Storage", "reads_completed"): "Disk reads",
    ("Storage", "writes_completed"): "Disk writes",
    ("Storage", "time_spent_reading_(ms)"): "Disk read time",
    ("Storage", "time_spent_writing_(ms)"): "Disk write time",
    ("Storage", "io_in_progress"): "Disk I/Os in flight",
}

#: feature → (noun phrase, kind of wording)
FEATURE_WORDS: dict[str, str] = {
    "mean": "mean",
    "var": "variance",
    "std": "variability",
    "min": "minimum",
    "max": "maximum",
    "skew": "skewness",
    "kurtosis": "kurtosis",
    "slope": "trend",
    "acf1": "lag-1 autocorrelation",
    "adf": "stationarity (ADF statistic)",
    "sum": "sum",
}

_SUBSYSTEM_WORD = {
    "cpu": "CPU",
    "gpu": "GPU",
    "memory": "Memory",
    "network": "Network",
    "storage": "Storage",
    "system": "System",
}


def readable_metric(metric: str) -> str:
    """A readable name for a metric column (or host-free key).

    >>> readable_metric("Turbostat:Bzy_MHz.3.nserver07[MHz]")
    'CPU operating frequency (core 3)'
    >>> readable_metric("NetworkTCPRetrans_diff:TcpRetransSegs.nserver07[count]")
    'Network TCP retransmissions'
    >>> readable_metric("GPU: power.draw.1.htc-g004[W]")
    'GPU power draw (GPU 1)'
    >>> readable_metric("Vmstat_diff:workingset_refault_file.vm[count]")
    'Memory Vmstat workingset refault file'
    """
    m = parse_metric_name(metric)
    if m is None:
        return metric
    name = READABLE.get((m.source, m.field))
    if name is None and m.source == "Disk":
        name = READABLE.get(("Storage", m.field))
    if name is None:
        sub = _SUBSYSTEM_WORD.get(classify(m).subsystem, "")
        words = re.sub(r"[_.]+", " ", m.field).strip()
        parts = [sub, m.source, words]
        if sub.lower() == m.source.lower() or sub.lower() in words.lower():
            parts = [m.source, words]
        name = " ".join(p for p in parts if p)
    inst = m.instance
    if inst is None or inst == "-":
        return name
    if m.source == "GPU":
        return f"{name} (GPU {inst})"
    if inst.isdigit():
        return f"{name} (core {inst})"
    return f"{name} ({inst})"


def format_value(v: float) -> str:
    """A number as evidence sentences print it (3 significant digits, thousands separators).

    >>> format_value(12345.6), format_value(0.5), format_value(1e-4)
    ('12,346', '0.5', '0.0001')
    """
    if not math.isfinite(v):
        return str(v)
    a = abs(v)
    if a >= 1e6 or (0 < a < 1e-2):
        return f"{v:.3g}"
    if a >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


_fmt = format_value


def claim(metric: str, feature: str, value: float, baseline: float, z: float) -> str:
    """A short evidence-based sentence for one metric–feature pair.

    Parameters
    ----------
    value : the feature in the anomalous window.
    baseline : the feature's typical value in the fit data (median).
    z : robust z of ``value`` against the fit data (signed).

    >>> claim("Turbostat:Bzy_MHz.-.h[MHz]", "acf1", 0.1, 0.8, -7.4)
    'CPU operating frequency shows a different lag-1 autocorrelation than its baseline (z = -7.4)'
    >>> claim("NetworkTCPRetrans_diff:TcpRetransSegs.h[count]", "sum", 24, 2, 9.0)
    'Network TCP retransmissions sum is 12× its baseline (24 vs 2)'
    """
    name = readable_metric(metric)
    zt = f"z = {z:+.1f}".replace("+", "") if math.isfinite(z) else "z undefined"
    up = z > 0 if math.isfinite(z) else value > baseline
    if feature == "sum" or feature == "mean":
        if math.isfinite(value) and math.isfinite(baseline) and baseline > 0 and value >= 0:
            ratio = value / baseline
            if ratio >= 2:
                return f"{name} {feature} is {ratio:.3g}× its baseline ({_fmt(value)} vs {_fmt(baseline)})"
            if 0 < ratio <= 0.5:
                vs = f"({_fmt(value)} vs {_fmt(baseline)})"
                return f"{name} {feature} is {1 / ratio:.3g}× below its baseline {vs}"
        if feature == "sum" and baseline == 0 and value > 0:
            return f"{name} sum is {_fmt(value)} where its baseline is 0"
        word = "higher" if up else "lower"
        return f"{name} {feature} is {word} than its baseline ({_fmt(value)} vs {_fmt(baseline)}, {zt})"
    if feature in ("var", "std"):
        return f"{name} shows {'higher' if up else 'lower'} variability than its baseline ({zt})"
    if feature in ("min", "max"):
        word = {"min": "minimum", "max": "maximum"}[feature]
        return (
            f"{name} reaches a {'higher' if up else 'lower'} {word} than its baseline "
            f"({_fmt(value)} vs {_fmt(baseline)}, {zt})"
        )
    if feature == "slope":
        return f"{name} trends {'upward' if value > 0 else 'downward'} unlike its baseline ({zt})"
    if feature == "adf":
        return f"{name} is {'less' if up else 'more'} stationary than its baseline (ADF statistic, {zt})"
    words = FEATURE_WORDS.get(feature, feature)
    return f"{name} shows a different {words} than its baseline ({zt})"
