"""The collector's own timing: how late each sample was, ticks it missed, CPU it used."""

from __future__ import annotations

import time

import numpy as np

from reveal_lab.collect._probe import Channel, Probe, ProbeContext


class SelfTiming(Probe):
    """``Collector:lag`` (µs after the deadline), ``missed_ticks`` and ``cpu_time`` (cumulative).

    The loop sets ``lag_us`` and ``missed`` before each sample.
    """

    name, group = "self", "self"
    description = "collector lag, missed ticks and CPU time"

    def open(self, ctx: ProbeContext) -> None:
        self.lag_us = 0
        self.missed = 0
        self.channels = [
            Channel("Collector", "lag", None, "us"),
            Channel("Collector", "missed_ticks", None, "count", counter=True),
            Channel("Collector", "cpu_time", None, "us", counter=True),
        ]

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        ints[0] = self.lag_us
        ints[1] = self.missed
        ints[2] = time.process_time_ns() // 1000
