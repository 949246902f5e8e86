"""The metric-name grammar shared by the public Reveal dataset and our collector.

``<Source>:<field>[.<instance>].<host>[<unit>]``

* ``Source`` may carry a ``_diff`` suffix: the column holds first differences of a
  cumulative counter (``NetworkInterStat_diff``).
* GPU columns are written ``GPU: field...`` (a space after the colon).
* ``instance`` is a CPU core number, ``-`` for the package/summary row, a GPU index
  or a named device (network interface, block device).
* ``host`` is the last dot-separated part before the unit; host names therefore
  never contain dots (the collector replaces them with ``-``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace

__all__ = [
    "MetricName",
    "parse_metric_name",
    "format_metric_name",
    "metric_key",
    "sanitize_host",
    "DIFF_SUFFIX",
]

DIFF_SUFFIX = "_diff"

# Sources whose instance may be a name (not a number or "-"), e.g. network interfaces.
NAMED_INSTANCE_SOURCES: frozenset[str] = frozenset(
    {"NetworkInterStat", "Disk", "Cgroup", "Softirqs", "Interrupts", "PSI"}
)
# Sources written with a space after the colon in the public dataset.
SPACED_SOURCES: frozenset[str] = frozenset({"GPU"})

_NAME_RE = re.compile(r"^(?P<source>[A-Za-z][A-Za-z0-9_]*):\s?(?P<body>.+?)(?:\[(?P<unit>[^\[\]]*)\])?$")
_NUMERIC_INSTANCE = re.compile(r"^(?:-|\d+)$")
#: parsed names and metric keys kept per process (each an LRU of this many column names)
NAME_CACHE_SIZE = 1 << 16


@dataclass(frozen=True, slots=True)
class MetricName:
    """A parsed metric column name.

    Examples
    --------
    >>> m = parse_metric_name("GPU: utilization.gpu.0.htc-g004[%]")
    >>> (m.source, m.field, m.instance, m.host, m.unit)
    ('GPU', 'utilization.gpu', '0', 'htc-g004', '%')
    >>> m.format()
    'GPU: utilization.gpu.0.htc-g004[%]'
    >>> parse_metric_name("NetworkInterStat_diff:rx_bytes.ib0.nserver07[Bytes]").diff
    True
    """

    source: str
    field: str
    host: str
    instance: str | None = None
    unit: str | None = None
    diff: bool = False

    @property
    def full_source(self) -> str:
        """Source as written in the column, with the ``_diff`` suffix if any."""
        return self.source + (DIFF_SUFFIX if self.diff else "")

    def format(self) -> str:
        return format_metric_name(self)

    def with_host(self, host: str) -> MetricName:
        return replace(self, host=sanitize_host(host))

    def as_diff(self) -> MetricName:
        return replace(self, diff=True)

    def key(self) -> str:
        """Host-free identity of the metric (``Source:field.instance``), used to
        compare the same metric across hosts."""
        inst = f".{self.instance}" if self.instance is not None else ""
        return f"{self.full_source}:{self.field}{inst}"


def metric_key(column: str) -> str:
    """A metric column's host-free key (:meth:`MetricName.key`), or the column itself when it
    does not follow the grammar: runs on different hosts align on it.

    >>> metric_key("Nstat_diff:TcpExtTCPOFOQueue.labB[count]"), metric_key("free text")
    ('Nstat_diff:TcpExtTCPOFOQueue', 'free text')
    """
    return _key_of(column) if isinstance(column, str) else column  # not a name: parses to None


@functools.lru_cache(maxsize=NAME_CACHE_SIZE)
def _key_of(column: str) -> str:
    m = parse_metric_name(column)
    return m.key() if m is not None else column


def sanitize_host(host: str) -> str:
    """Make a host name usable in the grammar: no dots, brackets, colons or spaces.

    >>> sanitize_host("node1.cluster.local")
    'node1-cluster-local'
    """
    cleaned = re.sub(r"[.\[\]:\s]+", "-", host.strip()).strip("-")
    if not cleaned:
        raise ValueError(f"host name {host!r} is empty after sanitizing")
    return cleaned


def parse_metric_name(name: str) -> MetricName | None:
    """Parse a column name; return ``None`` when it does not follow the grammar.

    Never raises on odd names: callers decide whether an unparsable column is an
    error (see :func:`reveal_lab.telemetry.validate_frame`).

    >>> parse_metric_name("Turbostat:Busy%.-.nserver07[%]").instance
    '-'
    >>> parse_metric_name("Perf:IPC.nserver07[-]").instance is None
    True
    >>> parse_metric_name("timestamp") is None
    True

    Results are kept per name (an LRU of :data:`NAME_CACHE_SIZE` names): a
    :class:`MetricName` is frozen, so one parsed object may be shared by every caller.
    """
    if not isinstance(name, str):
        return None
    return _parse(name)


@functools.lru_cache(maxsize=NAME_CACHE_SIZE)
def _parse(name: str) -> MetricName | None:
    m = _NAME_RE.match(name.strip())
    if m is None:
        return None
    source, body, unit = m.group("source"), m.group("body"), m.group("unit")
    diff = source.endswith(DIFF_SUFFIX)
    if diff:
        source = source[: -len(DIFF_SUFFIX)]
    parts = body.rsplit(".", 1)
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    rest, host = parts
    instance: str | None = None
    head = rest.rsplit(".", 1)
    if len(head) == 2 and head[0]:
        candidate = head[1]
        if _NUMERIC_INSTANCE.match(candidate) or source in NAMED_INSTANCE_SOURCES:
            rest, instance = head[0], candidate
    return MetricName(source=source, field=rest, host=host, instance=instance, unit=unit, diff=diff)


def format_metric_name(m: MetricName) -> str:
    """Format a :class:`MetricName` back into the dataset's spelling."""
    if "." in m.host:
        raise ValueError(f"host {m.host!r} contains a dot; use sanitize_host()")
    sep = ": " if m.source in SPACED_SOURCES else ":"
    inst = f".{m.instance}" if m.instance is not None else ""
    unit = f"[{m.unit}]" if m.unit is not None else ""
    return f"{m.full_source}{sep}{m.field}{inst}.{m.host}{unit}"
