"""Network: ``/proc/net/dev`` per interface, ``/proc/net/snmp`` + ``/proc/net/netstat``
(the counters ``nstat`` shows) and socket counts by protocol (``/proc/net/sockstat``,
as ``ss -s`` reports them).

All files are opened through ``/proc/self/net``, so a collector started inside a
network namespace (``ip netns exec NS reveal-lab collect ...``) sees that namespace.
"""

from __future__ import annotations

import os

import numpy as np

from reveal_lab.collect._probe import (
    Channel,
    Probe,
    ProbeContext,
    ProbeUnavailable,
    read_all,
    register_probe,
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
    #: sample() only reads its tables into consecutive int slices (batched reads fill them)
    direct_tables = True
    description = "/proc/net/dev per interface (lo left out)"

    def open(self, ctx: ProbeContext) -> None:
        path = "/proc/self/net/dev"
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
        self.info["speed_mbps"] = {sanitize_instance(d): link_speed_mbps(d) for d in devs}

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        self.table.read_into(ints)

    def close(self) -> None:
        self.table.close()


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


@register_probe
class Nstat(Probe):
    """Every counter of ``/proc/net/snmp`` and ``/proc/net/netstat``, named as
    ``nstat`` names them (``TcpRetransSegs``, ``TcpExtTCPSynRetrans``). TCP
    retransmission counters go to ``NetworkTCPRetrans`` like the public dataset,
    the rest to ``Nstat``."""

    name, group = "nstat", "procfs"
    #: sample() only reads its tables into consecutive int slices (batched reads fill them)
    direct_tables = True
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

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        a = 0
        for t in self.tables:
            t.read_into(ints[a : a + t.n])
            a += t.n

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
        self._tick = 0
        self._unix = 0
        self.unix_every = max(1, round(1.0 / ctx.interval_s))
        self.info["unix_every_samples"] = self.unix_every

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        toks = [os.pread(fd, 4096, 0).split() for fd in self.fds]
        n = len(self.positions)
        ints[:n] = [int(toks[f][i]) for f, i in self.positions]
        if self.unix_fd is not None:
            # /proc/net/unix grows with the socket count: counted once every `unix_every` samples
            if self._tick % self.unix_every == 0:
                data = read_all(self.unix_fd, self._unix_hint)
                self._unix_hint = max(self._unix_hint, 2 * len(data))
                self._unix = max(data.count(b"\n") - 1, 0)
            ints[n] = self._unix
        self._tick += 1
