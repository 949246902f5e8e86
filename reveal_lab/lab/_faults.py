"""Fault injection for the lab dataset, with exact start and end times as ground truth.

Every fault is an object with :meth:`Fault.start` and :meth:`Fault.stop`; the harness
records the wall-clock time (``time.time()``, ms) right after the fault became active
and right after it was removed. Those are the ``start``/``end`` of the label.

==================  ==========================================================  ===========
fault_type          how                                                         subsystem
==================  ==========================================================  ===========
packet_loss         ``iptables -I INPUT/OUTPUT -m statistic --mode random       network
                    --probability P -j DROP`` inside the host's namespace
cpu_contention      a busy-looping process in the host's cgroup, i.e. pinned    cpu
                    to the core the workload trains on
memory_pressure     a process in the host's cgroup that holds ``magnitude`` MiB memory
                    of touched anonymous memory and writes+fsyncs files of
                    ``magnitude``/8 MiB (dirty-page and writeback bursts)
storage_read        ``O_DIRECT`` sequential reads of a 512 MiB file (bypassing   storage
                    the page cache, so every read reaches the disk) for a
                    share ``magnitude`` of every 200 ms (duty cycle)
config_cpu_quota    the host's cgroup CPU quota lowered (e.g. to 50 % of a      cpu
                    core) for a whole run: a cross-host configuration
                    difference
config_threads      one host's workload runs ``magnitude`` intra-op threads     cpu
                    (``torch.set_num_threads``) where the others run one, for
                    a whole run: a cross-host configuration difference (an
                    ``OMP_NUM_THREADS`` left over on one machine)
config_irq_         every host's network processing (RPS/XPS of both ends of    network
imbalance           its veth) steered to the labelled host's core, against
                    "spread" (each host's on its own core), for a whole run;
                    ``magnitude`` = cores that receive it (1)
==================  ==========================================================  ===========

The stressors live in ``_stress.py``, a stand-alone script (no package imports, so it starts
in milliseconds even on a loaded core) started inside the host's cgroup; it prints
``ready`` once the stress is really on, and only then is the start time taken.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from reveal_lab.lab._hosts import LabError, LabHost

__all__ = [
    "FAULT_SUBSYSTEM",
    "Fault",
    "PacketLoss",
    "CpuContention",
    "MemoryPressure",
    "StorageReadBurst",
    "CpuQuota",
    "ThreadCount",
    "IrqImbalance",
    "RUN_ONLY_FAULTS",
    "make_fault",
    "prepare_read_file",
    "now_ms",
]

#: the subsystem a fault is expected to show up in (the label's ``expected_subsystem``)
FAULT_SUBSYSTEM: dict[str, str] = {
    "packet_loss": "network",
    "cpu_contention": "cpu",
    "memory_pressure": "memory",
    "storage_read": "storage",
    "config_cpu_quota": "cpu",
    "config_threads": "cpu",
    "config_irq_imbalance": "network",
}


#: the stand-alone stressor script (run as a file, not as a package module)
STRESS_SCRIPT = str(Path(__file__).with_name("_stress.py"))


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch (the clock the collector stamps rows with)."""
    return time.time_ns() // 1_000_000


@dataclass
class Fault:
    """A fault on one lab host. ``magnitude`` is in ``unit`` (probability, cores, MiB, share)."""

    host: LabHost
    fault_type: str = ""
    magnitude: float = float("nan")
    unit: str = ""
    started_ms: int | None = None
    stopped_ms: int | None = None
    _proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def expected_subsystem(self) -> str:
        return FAULT_SUBSYSTEM[self.fault_type]

    def start(self) -> int:
        self._activate()
        self.started_ms = now_ms()
        return self.started_ms

    def stop(self) -> int:
        self._deactivate()
        self.stopped_ms = now_ms()
        return self.stopped_ms

    # stressor-process faults share these
    def _activate(self) -> None:
        self._proc = self.host.popen(
            self._stressor_cmd(), netns=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        line = self._proc.stdout.readline()  # blocks until the stress is on (or the process died)
        if line.strip() != b"ready":
            self._deactivate()
            err = (
                self._proc.stderr.read().decode(errors="replace") if self._proc and self._proc.stderr else ""
            )
            raise LabError(f"{self.fault_type} stressor did not start: {line!r} {err.strip()}")

    def _deactivate(self) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGTERM)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(timeout=10)
        for fh in (self._proc.stdout, self._proc.stderr):
            if fh:
                fh.close()
        self._proc = None

    def _stressor_cmd(self) -> list[str]:  # pragma: no cover - overridden
        raise NotImplementedError

    def label(self) -> dict:
        """This fault's ground-truth row (start/end as epoch ms)."""
        if self.started_ms is None or self.stopped_ms is None:
            raise LabError(f"{self.fault_type} on {self.host.name} was not started and stopped")
        return {
            "host": self.host.name,
            "fault_type": self.fault_type,
            "start_ms": self.started_ms,
            "end_ms": self.stopped_ms,
            "expected_subsystem": self.expected_subsystem,
            "magnitude": self.magnitude,
            "unit": self.unit,
        }


@dataclass
class PacketLoss(Fault):
    """Drop a random share ``magnitude`` of the host's incoming and outgoing packets."""

    fault_type: str = "packet_loss"
    unit: str = "probability"

    def _rules(self) -> list[list[str]]:
        p = f"{self.magnitude:.6f}"
        return [
            [chain, "-m", "statistic", "--mode", "random", "--probability", p, "-j", "DROP"]
            for chain in ("INPUT", "OUTPUT")
        ]

    def _activate(self) -> None:
        if not 0.0 < self.magnitude < 1.0:
            raise LabError(f"packet-loss probability must be in (0, 1), got {self.magnitude}")
        for rule in self._rules():
            self.host.run(["iptables", "-w", "-I", *rule])

    def _deactivate(self) -> None:
        for rule in self._rules():
            self.host.run(["iptables", "-w", "-D", *rule], check=False)


@dataclass
class CpuContention(Fault):
    """``magnitude`` busy-looping processes on the host's core."""

    fault_type: str = "cpu_contention"
    magnitude: float = 1.0
    unit: str = "processes"

    def _stressor_cmd(self) -> list[str]:
        return [sys.executable, STRESS_SCRIPT, "cpu", "--procs", str(int(self.magnitude))]


@dataclass
class MemoryPressure(Fault):
    """Hold ``magnitude`` MiB of touched memory and write+fsync files in ``workdir``."""

    fault_type: str = "memory_pressure"
    magnitude: float = 1024.0
    unit: str = "MiB"
    workdir: str = "/var/tmp/reveal_lab"

    def _stressor_cmd(self) -> list[str]:
        return [
            sys.executable,
            STRESS_SCRIPT,
            "memory",
            "--mib",
            str(int(self.magnitude)),
            "--dir",
            self.workdir,
        ]


@dataclass
class StorageReadBurst(Fault):
    """Sequential ``O_DIRECT`` reads of ``path`` (made by :func:`prepare_read_file`) for a
    share ``magnitude`` (duty cycle, 0-1] of the time."""

    fault_type: str = "storage_read"
    magnitude: float = 1.0
    unit: str = "duty cycle"
    path: str = "/var/tmp/reveal_lab/readburst.bin"

    def _stressor_cmd(self) -> list[str]:
        if not 0 < self.magnitude <= 1:
            raise LabError(f"a storage-read duty cycle must be in (0, 1], got {self.magnitude}")
        return [sys.executable, STRESS_SCRIPT, "read", "--path", self.path, "--duty", f"{self.magnitude:g}"]


@dataclass
class CpuQuota(Fault):
    """Lower the host's cgroup CPU quota to ``magnitude`` of one core (a configuration difference)."""

    fault_type: str = "config_cpu_quota"
    magnitude: float = 0.5
    unit: str = "cores"

    _before: float | None = field(default=None, repr=False)

    def _activate(self) -> None:
        self._before = self.host.cpu_quota()  # a run's base quota comes back afterwards
        self.host.set_cpu_quota(self.magnitude)

    def _deactivate(self) -> None:
        self.host.set_cpu_quota(self._before)


@dataclass
class ThreadCount(Fault):
    """The host's workload runs ``magnitude`` threads (the recorder passes ``--threads``)."""

    fault_type: str = "config_threads"
    magnitude: float = 4.0
    unit: str = "threads"

    def _activate(self) -> None:  # the workload reads it when it starts; nothing to switch here
        if self.magnitude < 1 or self.magnitude != int(self.magnitude):
            raise LabError(f"a thread count must be a whole number >= 1, got {self.magnitude}")

    def _deactivate(self) -> None:
        pass


@dataclass
class IrqImbalance(Fault):
    """Steer the network processing of ``peers`` (every host of the run) to ``host``'s core.

    Recorded on ``host``; in ``labels.csv`` the label goes to the peers whose processing left
    their own core (:func:`reveal_lab.lab.label_hosts`), the hosts whose configuration changed."""

    fault_type: str = "config_irq_imbalance"
    magnitude: float = 1.0
    unit: str = "cores"
    peers: tuple[LabHost, ...] = ()

    def _activate(self) -> None:
        for h in self.peers or (self.host,):
            h.set_steering(self.host.core)

    def _deactivate(self) -> None:
        for h in self.peers or (self.host,):
            h.set_steering()  # spread: each host's on its own core


#: configuration differences that only exist for a whole run (``FaultPlan.at_s`` is None)
RUN_ONLY_FAULTS = frozenset({"config_cpu_quota", "config_threads", "config_irq_imbalance"})


_KINDS = {
    "packet_loss": PacketLoss,
    "cpu_contention": CpuContention,
    "memory_pressure": MemoryPressure,
    "storage_read": StorageReadBurst,
    "config_cpu_quota": CpuQuota,
    "config_threads": ThreadCount,
    "config_irq_imbalance": IrqImbalance,
}


def make_fault(fault_type: str, host: LabHost, magnitude: float | None = None, **kw) -> Fault:
    """A fault by its ``fault_type`` name (see :data:`FAULT_SUBSYSTEM`)."""
    try:
        cls = _KINDS[fault_type]
    except KeyError:
        raise LabError(f"unknown fault type {fault_type!r}; expected one of {sorted(_KINDS)}") from None
    if magnitude is not None:
        kw["magnitude"] = magnitude
    return cls(host=host, **kw)


def prepare_read_file(path: str | Path = "/var/tmp/reveal_lab/readburst.bin", mib: int = 512) -> Path:
    """Write (once) the file the storage-read bursts read; random bytes, fsynced."""
    p = Path(path)
    if p.exists() and p.stat().st_size == mib << 20:
        return p
    p.parent.mkdir(parents=True, exist_ok=True)
    chunk = os.urandom(1 << 20)
    with open(p, "wb") as fh:
        for _ in range(mib):
            fh.write(chunk)
        fh.flush()
        os.fsync(fh.fileno())
    return p
