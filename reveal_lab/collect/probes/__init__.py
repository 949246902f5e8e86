"""Probe modules, one per family. :data:`ALL_PROBES` lists every probe class once, in the
channel order of a run; :data:`reveal_lab.collect.PROBES` selects them by name."""

from reveal_lab.collect._probe import Probe
from reveal_lab.collect.probes._cgroup import Cgroups
from reveal_lab.collect.probes._cpu import LoadAvg, ProcStat
from reveal_lab.collect.probes._disk import DiskStats
from reveal_lab.collect.probes._gpu import Gpu
from reveal_lab.collect.probes._irq import Interrupts, Softirqs
from reveal_lab.collect.probes._memory import MemInfo, VmStat
from reveal_lab.collect.probes._net import NetDev, Nstat, Sockets
from reveal_lab.collect.probes._perf import Perf
from reveal_lab.collect.probes._psi import Pressure
from reveal_lab.collect.probes._self import SelfTiming
from reveal_lab.collect.probes._turbostat import Turbostat
from reveal_lab.collect.probes._unix import Unix

__all__ = ["ALL_PROBES"]

#: every probe, in the order its channels take in a run (``self`` first: the collector's
#: own timing, then the host's procfs families, cgroups, then the child-process probes)
ALL_PROBES: tuple[type[Probe], ...] = (
    SelfTiming,
    ProcStat,
    LoadAvg,
    MemInfo,
    VmStat,
    DiskStats,
    NetDev,
    Nstat,
    Sockets,
    Unix,
    Interrupts,
    Softirqs,
    Pressure,
    Cgroups,
    Perf,
    Turbostat,
    Gpu,
)
