"""turbostat as one long-lived child (frequency, C-states, power, temperatures)."""

from __future__ import annotations

import os
import shutil
import time

import numpy as np

from reveal_lab.collect._probe import Channel, Probe, ProbeContext, ProbeUnavailable
from reveal_lab.collect.probes._child import ChildLines


def turbostat_unit(col: str) -> str:
    """Unit of a turbostat column from its name.

    >>> [turbostat_unit(c) for c in ("Busy%", "Bzy_MHz", "PkgWatt", "CoreTmp", "IRQ", "IPC")]
    ['%', 'MHz', 'W', 'C', 'count', '-']
    """
    if col.endswith("%") or col.startswith(("CPU%", "Pkg%", "Totl%", "Any%", "GFX%")):
        return "%"
    if col.endswith("MHz"):
        return "MHz"
    if col.endswith("Watt"):
        return "W"
    if col.endswith("Tmp"):
        return "C"
    if col in ("IPC",):
        return "-"
    return "count"


def parse_turbostat_block(lines: list[str]) -> tuple[list[str], dict[tuple[str, str], float]]:
    """Parse one interval of ``turbostat --quiet`` output (tab separated).

    Returns the header and ``{(column, instance): value}`` where the instance is the
    ``CPU`` column (``-`` for the summary row). ``Core``/``CPU``/``Package`` columns
    are identifiers, not values.
    """
    head = lines[0].split("\t")
    ids = {"Core", "CPU", "Package", "Die", "Node", "usec", "Time_Of_Day_Seconds", "APIC", "X2APIC"}
    out: dict[tuple[str, str], float] = {}
    cpu_col = head.index("CPU") if "CPU" in head else None
    for row in lines[1:]:
        vals = row.split("\t")
        inst = vals[cpu_col] if cpu_col is not None and cpu_col < len(vals) else "-"
        for col, v in zip(head, vals, strict=False):
            if col in ids or v == "":
                continue
            try:
                out[(col, inst)] = float(v)
            except ValueError:
                continue
    return head, out


class Turbostat(Probe):
    """Latest complete turbostat interval per sample (gauges; ``IRQ``/``SMI`` are per-interval counts)."""

    name, group = "turbostat", "turbostat"
    description = "turbostat --quiet --interval <interval> (root, x86)"

    def open(self, ctx: ProbeContext) -> None:
        exe = shutil.which("turbostat")
        if exe is None:
            raise ProbeUnavailable("`turbostat` is not installed (linux-cpupower / linux-tools)")
        if os.geteuid() != 0:
            raise ProbeUnavailable("turbostat needs root (MSR access)")
        self.cmd = [exe, "--quiet", "--interval", f"{max(ctx.interval_s, 0.1):g}"]
        self.child = ChildLines(self.cmd)
        self.block: list[str] = []
        self.latest: dict[tuple[str, str], float] = {}
        deadline = time.monotonic() + max(3.0, 5 * ctx.interval_s)
        while not self.latest and time.monotonic() < deadline and self.child.proc.poll() is None:
            time.sleep(0.05)
            self._drain()
        if not self.latest:
            self.close()
            raise ProbeUnavailable(
                f"turbostat printed no interval within the start-up wait ({' '.join(self.cmd)})"
            )
        self.keys = sorted(self.latest, key=lambda k: (k[1] != "-", k[1].zfill(6), k[0]))
        self.channels = [
            Channel("Turbostat", col, inst, turbostat_unit(col), dtype="f") for col, inst in self.keys
        ]

    def _drain(self) -> None:
        for raw in self.child.lines():
            line = raw.decode(errors="replace")
            if not line.strip():
                continue
            first = line.split("\t", 1)[0]
            is_header = not (first == "-" or first.replace(".", "").isdigit())
            if is_header:
                if len(self.block) > 1:
                    self.latest = parse_turbostat_block(self.block)[1]
                self.block = [line]
            elif self.block:
                self.block.append(line)

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        self._drain()
        get = self.latest.get
        nan = float("nan")
        floats[:] = [get(k, nan) for k in self.keys]

    def close(self) -> None:
        if getattr(self, "child", None) is not None:
            self.child.stop()
