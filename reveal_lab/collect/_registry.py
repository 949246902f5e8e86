"""Which probes a ``--probes`` spec selects, and how often each is sampled: the probes by
name (:data:`PROBES`, from :data:`~reveal_lab.collect.probes.ALL_PROBES`), groups, removals
and ``name@period`` items."""

from __future__ import annotations

from collections.abc import Iterable

from reveal_lab.collect._probe import GROUPS, Probe
from reveal_lab.collect.probes import ALL_PROBES
from reveal_lab.config import parse_duration

__all__ = ["PROBES", "SLOW_GROUPS", "probe_periods", "probe_table", "resolve_probes", "tick_divisors"]


def probe_table(classes: Iterable[type[Probe]]) -> dict[str, type[Probe]]:
    """Probe classes by name, in the given order; a class without a name, of an unknown
    group, or whose name is taken is refused.

    >>> list(probe_table(ALL_PROBES))[:3]
    ['self', 'cpu', 'loadavg']
    """
    out: dict[str, type[Probe]] = {}
    for cls in classes:
        if not cls.name:
            raise ValueError(f"{cls.__name__} has no name")
        if cls.group not in GROUPS:
            raise ValueError(f"{cls.__name__}: unknown group {cls.group!r}; expected one of {sorted(GROUPS)}")
        if cls.name in out:
            raise ValueError(f"{cls.__name__}: probe name {cls.name!r} is taken by {out[cls.name].__name__}")
        out[cls.name] = cls
    return out


#: every probe by name, in the channel order of a run (from :data:`ALL_PROBES`)
PROBES: dict[str, type[Probe]] = probe_table(ALL_PROBES)


def resolve_probes(spec: str | Iterable[str] | None) -> list[str]:
    """Probe names from a ``--probes`` spec such as ``"procfs,perf,-gpu"``.

    Items are probe names or group names (or ``all``); a leading ``-`` removes.
    Starting with a removal means "everything except". ``self`` (the collector's
    own lag/missed-tick/CPU channels) is always added unless ``-self`` is given.
    Unknown names raise. An item may carry a sampling period (``interrupts@1s``,
    see :func:`probe_periods`); it is ignored here.

    >>> "gpu" in resolve_probes("all,-gpu")
    False
    >>> resolve_probes("meminfo,cpu")
    ['self', 'cpu', 'meminfo']
    >>> resolve_probes("meminfo,-self")
    ['meminfo']
    """
    if spec is None:
        spec = "all"
    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    if not items:
        raise ValueError("empty --probes")
    items = [it.partition("@")[0].strip() for it in items]
    order = list(PROBES)
    chosen: set[str] = set()
    if items[0].startswith("-"):
        chosen = set(order)

    def expand(item: str) -> set[str]:
        if item == "all":
            return set(order)
        if item in GROUPS:
            return {n for n, c in PROBES.items() if c.group == item}
        if item in PROBES:
            return {item}
        raise ValueError(
            f"unknown probe or group {item!r}; probes: {', '.join(order)}; groups: {', '.join(GROUPS)}, all"
        )

    for it in items:
        if it.startswith("-"):
            chosen -= expand(it[1:])
        else:
            chosen |= expand(it.lstrip("+"))
    if "self" in PROBES and "-self" not in items:
        chosen.add("self")  # the collector's own timing comes along unless removed explicitly
    return [n for n in order if n in chosen]


#: probe groups whose probes may be sampled less often than every tick (pull-based
#: readers; the child-process probes run at their child's own interval)
SLOW_GROUPS = ("procfs", "cgroup")


def probe_periods(spec: str | Iterable[str] | None) -> dict[str, float]:
    """Sampling periods (seconds) from ``name@period`` items of a ``--probes`` spec.

    ``interrupts@1s`` samples ``/proc/interrupts`` once a second while the other
    probes run every tick; a group name (``procfs@500ms``) sets the period of each
    of its probes; a probe's own item beats its group's (``procfs@1s,cpu@100ms``),
    otherwise a later item overrides an earlier one. Only probes of the
    groups in :data:`SLOW_GROUPS` take a period. Bad periods raise ``ValueError``.

    >>> probe_periods("procfs,interrupts@1s,nstat@500ms")
    {'interrupts': 1.0, 'nstat': 0.5}
    >>> probe_periods("interrupts@500ms,procfs@1s")["interrupts"]
    0.5
    """
    if spec is None:
        return {}
    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    out: dict[str, float] = {}
    own: dict[str, float] = {}
    for it in items:
        name, at, period = it.partition("@")
        if not at:
            continue
        name = name.strip().lstrip("+")
        if name.startswith("-"):
            raise ValueError(f"--probes item {it!r}: a removed probe takes no sampling period")
        try:
            sec = parse_duration(period)
        except ValueError as exc:
            raise ValueError(f"--probes item {it!r}: {exc}") from None
        if not sec > 0:
            raise ValueError(f"--probes item {it!r}: the sampling period must be positive")
        if name in PROBES and PROBES[name].group not in SLOW_GROUPS:
            raise ValueError(
                f"--probes item {it!r}: only probes of the groups {', '.join(SLOW_GROUPS)} "
                f"take a sampling period; {name} ({PROBES[name].group}) runs at its own interval"
            )
        if name in PROBES:
            own[name] = sec
            continue
        for n in resolve_probes([name, "-self"]):
            if PROBES[n].group in SLOW_GROUPS:  # a group or 'all': its pull-based probes
                out[n] = sec
    out.update(own)
    return out


def tick_divisors(periods: dict[str, float], interval_s: float) -> dict[str, int]:
    """Ticks between samples for each probe with a period: ``round(period / interval)``.

    A period must be a whole multiple of the interval (within 1 %), so the sampled
    ticks fall at fixed times; otherwise ``ValueError``.

    >>> tick_divisors({"interrupts": 1.0, "nstat": 0.3}, 0.1)
    {'interrupts': 10, 'nstat': 3}
    """
    out = {}
    for n, sec in periods.items():
        d = round(sec / interval_s)
        if d < 1 or abs(d * interval_s - sec) > 0.01 * sec:
            raise ValueError(
                f"sampling period {sec:g}s of probe {n} is not a whole multiple "
                f"of the interval {interval_s:g}s"
            )
        out[n] = d
    return out
