"""The one machine-info helper: what the machine a measurement or a recording ran on is
(CPU model, cores, kernel, Python, load), for ``meta.json``, ``recording.json``, the
runtime tables and the benchmarks' results.

>>> info = machine_info()
>>> sorted(info) == sorted(MACHINE_KEYS) and info["cores"] >= 1
True
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
from pathlib import Path

__all__ = ["MACHINE_KEYS", "cpu_model", "machine_info"]

#: the keys of :func:`machine_info`
MACHINE_KEYS = ("hostname", "kernel", "machine", "cpu_model", "cores", "python", "platform", "loadavg")


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (``model name``, or ``Processor`` / ``cpu
    model`` on other architectures), else what :mod:`platform` says."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Processor", "cpu model")):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, object]:
    """Host name, kernel release, architecture, CPU model, logical cores, Python version,
    platform string and the 1/5/15-minute load average now (:data:`MACHINE_KEYS`)."""
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }
