"""Probe modules, one per family. Importing this package registers them all; the
registry is then put in :data:`ORDER`, which is also the channel order of a run."""

from reveal_lab.collect._probe import PROBES
from reveal_lab.collect.probes import (  # noqa: F401  (registration side effect)
    _cgroup,
    _cpu,
    _disk,
    _gpu,
    _irq,
    _memory,
    _net,
    _perf,
    _psi,
    _self,
    _turbostat,
    _unix,
)

ORDER = (
    "self",
    "cpu",
    "loadavg",
    "meminfo",
    "vmstat",
    "diskstats",
    "netdev",
    "nstat",
    "sockets",
    "unix",
    "interrupts",
    "softirqs",
    "psi",
    "cgroup",
    "perf",
    "turbostat",
    "gpu",
)
_registered = dict(PROBES)
PROBES.clear()
PROBES.update({n: _registered[n] for n in ORDER if n in _registered})
PROBES.update({n: c for n, c in _registered.items() if n not in PROBES})
