"""Network: ``/proc/net/dev`` per interface, ``/proc/net/snmp`` + ``/proc/net/netstat``
(the counters ``nstat`` shows) and socket counts by protocol (``/proc/net/sockstat``,
as ``ss -s`` reports them; the UNIX socket count is the ``unix`` probe, ``_unix.py``).

All files are opened through ``/proc/self/net``, so a collector started inside a
network namespace (``ip netns exec NS reveal-lab collect ...``) sees that namespace.
"""

from __future__ import annotations

import os

from reveal_lab.collect._probe import (
    Channel,
    ProbeContext,
    ProbeUnavailable,
    TableProbe,
    read_all,
    sanitize_instance,
)
from reveal_lab.collect.probes._table import Layout, Table

NETDEV_FIELDS = (
    "rx_bytes",
    "rx_packets",
    "rx_errs",
    "rx_drop",
    "rx_fifo",
    "rx_frame",
    "rx_compressed",
    "rx_multicast",
    "tx_bytes",
    "tx_packets",
    "tx_errs",
    "tx_drop",
    "tx_fifo",
    "tx_colls",
    "tx_carrier",
    "tx_compressed",
)


def _netdev_index(lines: list[bytes]) -> Layout:
    mapping: dict = {}
    fixed = {i: lines[i] for i in range(min(2, len(lines)))}
    for ln, line in enumerate(lines[2:], start=2):
        toks = line.replace(b":", b" ", 1).split()
        if len(toks) != 17:
            continue
        for j in range(16):
            mapping[(toks[0].decode(), j)] = (ln, 1 + j)
    return mapping, fixed


def link_speed_mbps(dev: str, sys_root: str = "/sys") -> float | None:
    try:
        v = int(open(f"{sys_root}/class/net/{dev}/speed").read().strip())  # noqa: SIM115
    except (OSError, ValueError):
        return None
    return float(v) if v > 0 else None


class NetDev(TableProbe):
    """Per-interface byte/packet/error/drop counters (``NetworkInterStat``)."""

    name, group = "netdev", "procfs"
    description = "/proc/net/dev per interface (lo left out)"

    def open(self, ctx: ProbeContext) -> None:
        path = ctx.proc("/proc/self/net/dev")
        fd = ctx.open_ro(path)
        mapping, _ = _netdev_index(read_all(fd).split(b"\n"))
        os.close(fd)
        devs = list(dict.fromkeys(d for d, _ in mapping))
        devs = [d for d in devs if d != "lo" or ctx.options.get("include_lo")]
        if not devs:
            raise ProbeUnavailable("no network interface besides lo in /proc/self/net/dev")
        keys = [(d, j) for d in devs for j in range(16)]
        self.table = Table(ctx, path, _netdev_index, keys, colons=True)
        self.channels = [
            Channel(
                "NetworkInterStat",
                NETDEV_FIELDS[j],
                sanitize_instance(d),
                "Bytes" if j in (0, 8) else "count",
                counter=True,
            )
            for d, j in self.table.keys
        ]
        self.info["interfaces"] = devs
        # link speeds (Mb/s) feed NetworkUtilization in the dataset view
        self.info["speed_mbps"] = {sanitize_instance(d): link_speed_mbps(d, ctx.sys_root) for d in devs}


#: snmp/netstat fields that are levels or settings, not cumulative counters
NSTAT_GAUGES = frozenset(
    {
        "IpForwarding",
        "IpDefaultTTL",
        "TcpRtoAlgorithm",
        "TcpRtoMin",
        "TcpRtoMax",
        "TcpMaxConn",
        "TcpCurrEstab",
    }
)


def _nstat_index(lines: list[bytes]) -> Layout:
    """Header/value line pairs: ``Tcp: RtoAlgorithm ...`` then ``Tcp: 1 ...``."""
    mapping: dict = {}
    fixed: dict[int, bytes] = {}
    for ln in range(0, len(lines) - 1, 2):
        head, vals = lines[ln].split(), lines[ln + 1].split()
        if not head or head[0] != vals[0] or len(head) != len(vals):
            continue
        prefix = head[0].rstrip(b":").decode()
        fixed[ln] = lines[ln]
        for j in range(1, len(head)):
            mapping[prefix + head[j].decode()] = (ln + 1, j)
    return mapping, fixed


class Nstat(TableProbe):
    """Every counter of ``/proc/net/snmp`` and ``/proc/net/netstat``, named as
    ``nstat`` names them (``TcpRetransSegs``, ``TcpExtTCPSynRetrans``). TCP
    retransmission counters go to ``NetworkTCPRetrans`` like the public dataset,
    the rest to ``Nstat``."""

    name, group = "nstat", "procfs"
    description = "/proc/net/snmp + /proc/net/netstat (nstat counters)"

    def open(self, ctx: ProbeContext) -> None:
        self.tables = []
        for path in ("/proc/self/net/snmp", "/proc/self/net/netstat"):
            try:
                self.tables.append(Table(ctx, ctx.proc(path), _nstat_index))
            except ProbeUnavailable:
                if not self.tables and path.endswith("netstat"):
                    raise
        self.channels = []
        for t in self.tables:
            for k in t.keys:
                if k in NSTAT_GAUGES:
                    self.channels.append(Channel("Nstat", k, None, "count", counter=False))
                elif k.startswith("Tcp") and "Retrans" in k:
                    self.channels.append(Channel("NetworkTCPRetrans", k, None, "count", counter=True))
                else:
                    self.channels.append(Channel("Nstat", k, None, "count", counter=True))


#: (channel field, sockstat file (0: sockstat, 1: sockstat6), line label, the word the
#: value follows): ``TCP: inuse 5 orphan 0 tw 2 alloc 7 mem 1`` gives TCP=5, TCP_orphan=0 ...
SOCKSTAT = (
    ("total_connections", 0, b"sockets:", b"used"),
    ("TCP", 0, b"TCP:", b"inuse"),
    ("TCP_orphan", 0, b"TCP:", b"orphan"),
    ("TCP_timewait", 0, b"TCP:", b"tw"),
    ("TCP_alloc", 0, b"TCP:", b"alloc"),
    ("TCP_mem_pages", 0, b"TCP:", b"mem"),
    ("UDP", 0, b"UDP:", b"inuse"),
    ("UDP_mem_pages", 0, b"UDP:", b"mem"),
    ("UDPLITE", 0, b"UDPLITE:", b"inuse"),
    ("RAW", 0, b"RAW:", b"inuse"),
    ("FRAG", 0, b"FRAG:", b"inuse"),
    ("TCP6", 1, b"TCP6:", b"inuse"),
    ("UDP6", 1, b"UDP6:", b"inuse"),
    ("RAW6", 1, b"RAW6:", b"inuse"),
    ("FRAG6", 1, b"FRAG6:", b"inuse"),
)

SOCKSTAT_FILES = ("/proc/self/net/sockstat", "/proc/self/net/sockstat6")


def _sockstat_index(lines: list[bytes]) -> Layout:
    """``LABEL: word value word value ...`` lines: each known (label, word) pair's
    value, keyed by its channel field."""
    fields = {(label, word): name for name, _, label, word in SOCKSTAT}
    mapping: dict = {}
    for ln, line in enumerate(lines):
        toks = line.split()
        for j in range(1, len(toks) - 1, 2):
            name = fields.get((toks[0], toks[j]))
            if name is not None and name not in mapping:
                mapping[name] = (ln, j + 1)
    return mapping, {}


class Sockets(TableProbe):
    """Socket counts by protocol, the numbers ``ss -s`` prints (``/proc/net/sockstat``
    and, with IPv6, ``/proc/net/sockstat6``), as ``NetworkProtocolCounts:TCP`` etc.
    The UNIX socket count (``NetworkProtocolCounts:UNIX``) is the ``unix`` probe."""

    name, group = "sockets", "procfs"
    description = "/proc/net/sockstat(6): socket counts by protocol (ss -s)"

    def open(self, ctx: ProbeContext) -> None:
        self.tables: list[Table] = []
        for f, path in enumerate(SOCKSTAT_FILES):
            try:
                t = Table(ctx, ctx.proc(path), _sockstat_index, [name for name, fi, _, _ in SOCKSTAT if fi == f])
            except ProbeUnavailable:
                if f == 0:
                    raise
                continue  # no IPv6: no sockstat6
            if t.n:
                self.tables.append(t)
            else:
                t.close()
        if not self.tables:
            raise ProbeUnavailable(f"no known field in {', '.join(SOCKSTAT_FILES)}")
        self.channels = [
            Channel("NetworkProtocolCounts", k, None, "count") for t in self.tables for k in t.keys
        ]
