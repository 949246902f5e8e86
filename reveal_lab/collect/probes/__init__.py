"""Probe modules, one per family. Importing this package registers them all
(in this order, which is also the channel order of a run)."""

from reveal_lab.collect.probes import (  # noqa: F401  (registration side effect)
    _self,
    _cpu,
    _memory,
    _disk,
    _net,
    _irq,
    _psi,
    _cgroup,
    _perf,
    _turbostat,
    _gpu,
)
