"""The one machine-info function: what the machine a measurement or a recording ran on is
(CPU model, cores, memory, kernel, Python, load), for the collector's ``meta.json``, the
lab's ``recording.json``, the runtime tables and the benchmarks' results.

The number of logical cores is ``cores``; files written before it was named so say
``cpu_count``, and :func:`machine_cores` reads either.

>>> info = machine_info()
>>> sorted(info) == sorted(MACHINE_KEYS) and machine_cores(info) == info["cores"] >= 1
True
>>> machine_cores({"cpu_count": 64}), machine_cores({})
(64, None)
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
from collections.abc import Mapping
from pathlib import Path

__all__ = ["MACHINE_KEYS", "cpu_model", "machine_cores", "machine_info"]

#: the keys of :func:`machine_info`
MACHINE_KEYS = (
    "hostname", "kernel", "machine", "cpu_model", "cores", "mem_total_kb", "python", "platform", "loadavg"
)


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (``model name``, or ``Processor`` / ``cpu
    model`` on other architectures), else what :mod:`platform` says."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Processor", "cpu model")):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _mem_total_kb() -> int | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(Path("/proc/meminfo").read_text().split("\n", 1)[0].split()[1])
    return None


def machine_info() -> dict[str, object]:
    """Host name, kernel release, architecture, CPU model, logical cores, memory (kB, ``None``
    where ``/proc/meminfo`` cannot be read), Python version, platform string and the
    1/5/15-minute load average now (:data:`MACHINE_KEYS`)."""
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "mem_total_kb": _mem_total_kb(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def machine_cores(info: Mapping[str, object]) -> int | None:
    """The logical cores a machine-info record (:func:`machine_info`, or one written before
    under ``cpu_count``) gives, ``None`` when it gives none."""
    n = info.get("cores", info.get("cpu_count"))
    return None if n is None else int(n)  # type: ignore[call-overload]
