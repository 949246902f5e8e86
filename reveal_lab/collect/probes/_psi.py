"""Pressure stall information (``/proc/pressure/{cpu,memory,io,irq}``)."""

from __future__ import annotations

import os

import numpy as np

from reveal_lab.collect._probe import Channel, Probe, ProbeContext, ProbeUnavailable, read_all, register_probe


@register_probe
class Pressure(Probe):
    """``some``/``full`` avg10 (%, a gauge) and total stall time (µs, a counter) per resource."""

    name, group = "psi", "procfs"
    description = "/proc/pressure/*: stall averages and totals"

    def open(self, ctx: ProbeContext) -> None:
        self.files: list[tuple[int, list[int], list[int]]] = []  # fd, float token idx, int token idx
        self.channels = []
        reasons = []
        for res in ("cpu", "memory", "io", "irq"):
            path = f"/proc/pressure/{res}"
            try:
                fd = ctx.open_ro(path)
                toks = read_all(fd).split()
            except (ProbeUnavailable, OSError) as exc:  # irq pressure needs CONFIG_IRQ_TIME_ACCOUNTING
                reasons.append(f"{res}: {exc}")
                continue
            fidx, iidx = [], []
            for i, t in enumerate(toks):
                if t in (b"some", b"full"):
                    kind = t.decode()
                    # some avg10=0.00 avg60=0.00 avg300=0.00 total=0
                    fidx.append(i + 1)
                    iidx.append(i + 4)
                    self.channels.append(Channel("PSI", f"{res}_{kind}_avg10", None, "%", dtype="f"))
            for i in iidx:
                kind = toks[i - 4].decode()
                self.channels.append(Channel("PSI", f"{res}_{kind}_total", None, "us", counter=True))
            self.files.append((fd, fidx, iidx))
        if not self.files:
            raise ProbeUnavailable("no /proc/pressure files (kernel without CONFIG_PSI or psi=0)")
        # channel order must match sample(): floats of all files, ints of all files
        fl = [c for c in self.channels if c.dtype == "f"]
        it = [c for c in self.channels if c.dtype == "i"]
        self.channels = fl + it
        self.info["unavailable"] = reasons

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        fl: list[float] = []
        it: list[int] = []
        for fd, fidx, iidx in self.files:
            toks = os.pread(fd, 512, 0).split()
            fl += [float(toks[i][6:]) for i in fidx]
            it += [int(toks[i][6:]) for i in iidx]
        floats[:] = fl
        ints[:] = it

    def close(self) -> None:
        for fd, _, _ in self.files:
            os.close(fd)
