"""Network: ``/proc/net/dev`` per interface, ``/proc/net/snmp`` + ``/proc/net/netstat``
(the counters ``nstat`` shows) and socket counts by protocol (``/proc/net/sockstat``,
as ``ss -s`` reports them).

All files are opened through ``/proc/self/net``, so a collector started inside a
network namespace (``ip netns exec NS reveal-lab collect ...``) sees that namespace.
"""

from __future__ import annotations

import os

from reveal_lab.collect._probe import (
    Channel,
    Probe,
    ProbeContext,
    ProbeUnavailable,
    read_all,
    register_probe,
    sanitize_instance,
)
from reveal_lab.collect.probes._table import Layout, Table, lines_tokens

NETDEV_FIELDS = (
    "rx_bytes", "rx_packets", "rx_errs", "rx_drop", "rx_fifo", "rx_frame", "rx_compressed", "rx_multicast",
    "tx_bytes", "tx_packets", "tx_errs", "tx_drop", "tx_fifo", "tx_colls", "tx_carrier", "tx_compressed",
)


def _netdev_index(data: bytes) -> Layout:
    mapping: dict = {}
    anchors: dict[int, bytes] = {}
    for i, (off, toks) in enumerate(lines_tokens(data)):
        if i < 2 or len(toks) != 17:
            if i < 2:
                anchors[off] = toks[0]
            continue
        dev = toks[0].decode()
        anchors[off] = toks[0]
        for j in range(16):
            mapping[(dev, j)] = off + 1 + j
    return mapping, anchors


def link_speed_mbps(dev: str) -> float | None:
    try:
        v = int(open(f"/sys/class/net/{dev}/speed").read().strip())  # noqa: SIM115
    except (OSError, ValueError):
        return None
    return float(v) if v > 0 else None


@register_probe
class NetDev(Probe):
    """Per-interface byte/packet/error/drop counters (``NetworkInterStat``)."""

    name, group = "netdev", "procfs"
    description = "/proc/net/dev per interface (lo left out)"

    def open(self, ctx: ProbeContext) -> None:
        path = "/proc/self/net/dev"
        mapping, _ = _netdev_index(read_all(ctx.open_ro(path)).replace(b":", b" "))
        devs = list(dict.fromkeys(d for d, _ in mapping))
        devs = [d for d in devs if d != "lo" or ctx.options.get("include_lo")]
        if not devs:
            raise ProbeUnavailable("no network interface besides lo in /proc/self/net/dev")
        keys = [(d, j) for d in devs for j in range(16)]
        self.table = Table(ctx, path, _netdev_index, keys, colons=True)
        self.channels = [
            Channel("NetworkInterStat", NETDEV_FIELDS[j], sanitize_instance(d), "Bytes" if j in (0, 8) else "count",
                    counter=True)
            for d, j in self.table.keys
        ]
        self.info["interfaces"] = devs
        # link speeds (Mb/s) feed NetworkUtilization in the dataset view
        self.info["speed_mbps"] = {sanitize_instance(d): link_speed_mbps(d) for d in devs}

    def sample(self, ints: list[int], floats: list[float]) -> None:
        ints.extend(self.table.values())

    def close(self) -> None:
        self.table.close()


#: snmp/netstat fields that are levels or settings, not cumulative counters
NSTAT_GAUGES = frozenset({
    "IpForwarding", "IpDefaultTTL", "TcpRtoAlgorithm", "TcpRtoMin", "TcpRtoMax", "TcpMaxConn", "TcpCurrEstab",
})


def _nstat_index(data: bytes) -> Layout:
    """Header/value line pairs: ``Tcp: RtoAlgorithm ...`` then ``Tcp: 1 ...``."""
    mapping: dict = {}
    anchors: dict[int, bytes] = {}
    rows = list(lines_tokens(data))
    for (hoff, head), (voff, vals) in zip(rows[::2], rows[1::2], strict=False):
        if head[0] != vals[0] or len(head) != len(vals):
            continue
        prefix = head[0].rstrip(b":").decode()
        anchors[hoff] = head[0]
        anchors[hoff + len(head) - 1] = head[-1]
        anchors[voff] = vals[0]
        for j in range(1, len(head)):
            mapping[prefix + head[j].decode()] = voff + j
    return mapping, anchors


@register_probe
class Nstat(Probe):
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
                self.tables.append(Table(ctx, path, _nstat_index))
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

    def sample(self, ints: list[int], floats: list[float]) -> None:
        for t in self.tables:
            ints.extend(t.values())

    def close(self) -> None:
        for t in self.tables:
            t.close()


#: (channel field, sockstat file, line label, position of the value after the label)
SOCKSTAT = (
    ("total_connections", 0, b"sockets:", 2),
    ("TCP", 0, b"TCP:", 2),
    ("TCP_orphan", 0, b"TCP:", 4),
    ("TCP_timewait", 0, b"TCP:", 6),
    ("TCP_alloc", 0, b"TCP:", 8),
    ("TCP_mem_pages", 0, b"TCP:", 10),
    ("UDP", 0, b"UDP:", 2),
    ("UDP_mem_pages", 0, b"UDP:", 4),
    ("UDPLITE", 0, b"UDPLITE:", 2),
    ("RAW", 0, b"RAW:", 2),
    ("FRAG", 0, b"FRAG:", 2),
    ("TCP6", 1, b"TCP6:", 2),
    ("UDP6", 1, b"UDP6:", 2),
    ("RAW6", 1, b"RAW6:", 2),
    ("FRAG6", 1, b"FRAG6:", 2),
)


@register_probe
class Sockets(Probe):
    """Socket counts by protocol, the numbers ``ss -s`` prints, as
    ``NetworkProtocolCounts:TCP`` etc.; ``UNIX`` counts ``/proc/net/unix`` lines."""

    name, group = "sockets", "procfs"
    description = "/proc/net/sockstat(6) and /proc/net/unix: socket counts by protocol"

    def open(self, ctx: ProbeContext) -> None:
        self.fds = [ctx.open_ro("/proc/self/net/sockstat")]
        try:
            self.fds.append(ctx.open_ro("/proc/self/net/sockstat6"))
        except ProbeUnavailable:
            pass
        self._fds = list(self.fds)
        self.positions: list[tuple[int, int]] = []  # (file, token index)
        fields = []
        for f, (fd) in enumerate(self.fds):
            toks = read_all(fd).split()
            for name, fi, label, pos in SOCKSTAT:
                if fi == f and label in toks:
                    i = toks.index(label) + pos
                    if i < len(toks):
                        self.positions.append((f, i))
                        fields.append(name)
        self._labels = [(f, i) for f, i in self.positions]
        self.unix_fd = None
        if ctx.options.get("unix_sockets", True):
            try:
                self.unix_fd = ctx.open_ro("/proc/self/net/unix")
                self._fds.append(self.unix_fd)
                fields.append("UNIX")
            except ProbeUnavailable:
                pass
        self.channels = [Channel("NetworkProtocolCounts", f, None, "count") for f in fields]
        self._unix_hint = 65536

    def sample(self, ints: list[int], floats: list[float]) -> None:
        toks = [os.pread(fd, 4096, 0).split() for fd in self.fds]
        ints.extend(int(toks[f][i]) for f, i in self.positions)
        if self.unix_fd is not None:
            data = read_all(self.unix_fd, self._unix_hint)
            self._unix_hint = max(self._unix_hint, 2 * len(data))
            ints.append(max(data.count(b"\n") - 1, 0))
