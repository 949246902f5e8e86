"""Seeded synthetic telemetry in the dataset's grammar, with anomalies planted in
known subsystems and the ground truth kept.

The generator imitates a data-parallel training job sampled every 100 ms: a step
period (forward/backward on the GPU, then data loading and the optimizer on the
CPU, an all-reduce on the network, a storage read every few steps), per-core CPU
channels (turbostat), perf counters, GPU (nvidia-smi), ``/proc/meminfo``,
network interfaces and TCP retransmissions, ``/proc/diskstats``; sparse event
counters; static configuration channels (``MemTotal``, ``HugePages_Total``,
``TSC_MHz``, link speeds, power limits). Names follow
``<Source>:<field>[.<instance>].<host>[<unit>]`` and the registry classifies every
one of them (:func:`reveal_lab.telemetry.classify`).

An :class:`Anomaly` perturbs a few channels of one subsystem on one host over a
time span: ``level`` (a shift), ``variance`` (louder noise), ``trend`` (a ramp),
``oscillation`` (a new periodic component) or ``static`` (a different
configuration value over the whole run, the HugePages case).

Examples
--------
>>> run, truth = make_run(20, n_channels=120, seed=1,
...                       anomalies=[Anomaly("network", 8.0, 12.0, kind="level")])
>>> run.frame.height, run.frame.width - 1
(200, 120)
>>> sorted(set(truth["subsystem"]))
['network']
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

from reveal_lab.telemetry import TIMESTAMP, TIMESTAMP_DTYPE, Run, RunMeta, classify, sanitize_host

__all__ = [
    "Anomaly",
    "SyntheticRun",
    "make_run",
    "ANOMALY_KINDS",
    "channel_table",
    "PUBLIC_WORKLOADS",
    "write_public_proxy",
    "proxy_size",
]

ANOMALY_KINDS: tuple[str, ...] = ("level", "variance", "trend", "oscillation", "static")

#: the subsystems an anomaly may target (``system`` has no synthetic channels)
TARGET_SUBSYSTEMS: tuple[str, ...] = ("cpu", "gpu", "memory", "network", "storage")


@dataclass(frozen=True)
class Anomaly:
    """One planted episode.

    Parameters
    ----------
    subsystem : one of ``cpu, gpu, memory, network, storage``.
    start_s, end_s : seconds from the start of the run (ignored for ``static``).
    kind : ``level | variance | trend | oscillation | static``.
    host : the host to perturb (default: the first host).
    magnitude : size in robust standard deviations of each perturbed channel.
    n_columns : how many channels of the subsystem to perturb.
    """

    subsystem: str
    start_s: float
    end_s: float
    kind: str = "level"
    host: str | None = None
    magnitude: float = 6.0
    n_columns: int = 4

    def __post_init__(self) -> None:
        if self.subsystem not in TARGET_SUBSYSTEMS:
            raise ValueError(f"anomaly subsystem {self.subsystem!r}; expected one of {TARGET_SUBSYSTEMS}")
        if self.kind not in ANOMALY_KINDS:
            raise ValueError(f"anomaly kind {self.kind!r}; expected one of {ANOMALY_KINDS}")
        if self.kind != "static" and not self.end_s > self.start_s:
            raise ValueError(f"anomaly needs end_s > start_s, got {self.start_s}..{self.end_s}")
        if self.n_columns < 1:
            raise ValueError("anomaly n_columns must be >= 1")


class SyntheticRun(NamedTuple):
    """A synthetic :class:`~reveal_lab.telemetry.Run` and its ground truth.

    ``truth`` has one row per perturbed column: ``anomaly, subsystem, kind, host,
    column, start_s, end_s, start, end``.
    """

    run: Run
    truth: pl.DataFrame


# --------------------------------------------------------------------------------------
# Channel templates: (source, field, unit, base, offset, gain, noise, lo, hi)
#   base: which activity drives it (gpu, cpu, net, io, mem, heat, const, event)
# --------------------------------------------------------------------------------------
_Tmpl = tuple[str, str, str, str, float, float, float, float, float]

_PACKAGE: list[_Tmpl] = [
    ("Turbostat", "Busy%", "%", "cpu", 20.0, 55.0, 2.0, 0, 100),
    ("Turbostat", "Bzy_MHz", "MHz", "cpu", 2400.0, 700.0, 25.0, 800, 4000),
    ("Turbostat", "Avg_MHz", "MHz", "cpu", 600.0, 1500.0, 40.0, 0, 4000),
    ("Turbostat", "IPC", "-", "cpu", 0.6, 0.9, 0.04, 0, 5),
    ("Turbostat", "C1%", "%", "cpu", 30.0, -25.0, 2.0, 0, 100),
    ("Turbostat", "CPU%c6", "%", "cpu", 45.0, -35.0, 2.5, 0, 100),
    ("Turbostat", "PkgWatt", "W", "cpu", 60.0, 110.0, 3.0, 0, 400),
    ("Turbostat", "PkgTmp", "C", "heat", 45.0, 20.0, 0.3, 0, 110),
    ("Turbostat", "TSC_MHz", "MHz", "const", 2100.0, 0.0, 0.0, 0, 1e9),
    ("Turbostat", "SMI", "count", "event", 0.002, 0.0, 0.0, 0, 1e9),
]
_PERF: list[_Tmpl] = [
    ("Perf", "Cycles", "count", "cpu", 2.0e8, 6.0e8, 1.5e7, 0, 1e12),
    ("Perf", "Instructions", "count", "cpu", 1.5e8, 7.0e8, 2.0e7, 0, 1e12),
    ("Perf", "IPC", "-", "cpu", 0.7, 0.5, 0.03, 0, 5),
    ("Perf", "Branches", "count", "cpu", 3.0e7, 1.2e8, 4.0e6, 0, 1e12),
    ("Perf", "Branch_Misses", "count", "cpu", 4.0e5, 1.5e6, 6.0e4, 0, 1e12),
    ("Perf", "BranchUtilization", "%", "cpu", 1.0, 0.4, 0.05, 0, 100),
    ("Perf", "Cache_References", "count", "mem", 2.0e6, 8.0e6, 3.0e5, 0, 1e12),
    ("Perf", "Cache_Misses", "count", "mem", 5.0e5, 2.5e6, 1.0e5, 0, 1e12),
    ("Perf", "CacheUtilization", "%", "mem", 20.0, 15.0, 1.0, 0, 100),
    ("Perf", "Mem-loads", "count", "mem", 1.0e7, 3.0e7, 1.0e6, 0, 1e12),
    ("Perf", "Mem-stores", "count", "mem", 5.0e6, 1.5e7, 6.0e5, 0, 1e12),
]
_PROCSTAT: list[_Tmpl] = [
    ("CPU", "user", "%", "cpu", 15.0, 50.0, 2.0, 0, 100),
    ("CPU", "system", "%", "cpu", 3.0, 6.0, 0.6, 0, 100),
    ("CPU", "iowait", "%", "io", 0.2, 3.0, 0.2, 0, 100),
    ("CPU", "softirq", "%", "net", 0.3, 2.0, 0.15, 0, 100),
    ("CPU", "idle", "%", "cpu", 80.0, -58.0, 2.0, 0, 100),
]
_MEMORY: list[_Tmpl] = [
    ("Memory", "MemTotal", "kB", "const", 263_000_000.0, 0.0, 0.0, 0, 1e12),
    ("Memory", "Hugepagesize", "kB", "const", 2048.0, 0.0, 0.0, 0, 1e12),
    ("Memory", "HugePages_Total", "count", "const", 0.0, 0.0, 0.0, 0, 1e12),
    ("Memory", "SwapTotal", "kB", "const", 8_000_000.0, 0.0, 0.0, 0, 1e12),
    ("Memory", "MemoryUtilization", "%", "mem", 30.0, 25.0, 0.3, 0, 100),
    ("Meminfo_diff", "MemAvailable", "kB", "memd", 0.0, -4.0e4, 8.0e3, -1e12, 1e12),
    ("Meminfo_diff", "Cached", "kB", "memd", 0.0, 3.0e4, 6.0e3, -1e12, 1e12),
    ("Meminfo_diff", "Dirty", "kB", "io", 0.0, 2.0e3, 5.0e2, -1e12, 1e12),
    ("Meminfo_diff", "AnonPages", "kB", "memd", 0.0, 1.0e4, 3.0e3, -1e12, 1e12),
    ("Turbostat", "RAMWatt", "W", "mem", 8.0, 12.0, 0.5, 0, 200),
]
_STORAGE: list[_Tmpl] = [
    ("Storage_diff", "sectors_read", "sectors", "io", 50.0, 4.0e4, 1.0e3, 0, 1e12),
    ("Storage_diff", "sectors_written", "sectors", "io", 200.0, 2.0e3, 2.0e2, 0, 1e12),
    ("Storage_diff", "reads_completed", "count", "io", 2.0, 300.0, 10.0, 0, 1e12),
    ("Storage_diff", "writes_completed", "count", "io", 5.0, 20.0, 3.0, 0, 1e12),
    ("Storage_diff", "time_spent_reading_(ms)", "ms", "io", 1.0, 90.0, 4.0, 0, 1e12),
    ("Storage_diff", "time_spent_writing_(ms)", "ms", "io", 2.0, 10.0, 1.5, 0, 1e12),
    ("Storage_diff", "io_in_progress", "count", "io", 0.1, 6.0, 0.4, 0, 1e12),
]
_NET_HOST: list[_Tmpl] = [
    ("NetworkProtocolCounts", "TCP", "count", "net", 40.0, 8.0, 1.0, 0, 1e9),
    ("NetworkProtocolCounts", "UDP", "count", "cpu", 6.0, 1.0, 0.3, 0, 1e9),
    ("NetworkProtocolCounts", "total_connections", "count", "net", 60.0, 10.0, 1.2, 0, 1e9),
    ("NetworkTCPRetrans_diff", "TcpRetransSegs", "count", "event", 0.02, 0.0, 0.0, 0, 1e9),
    ("NetworkTCPRetrans_diff", "TcpExtTCPSynRetrans", "count", "event", 0.005, 0.0, 0.0, 0, 1e9),
]
_NET_IFACE: list[_Tmpl] = [
    ("NetworkInterStat_diff", "rx_bytes", "Bytes", "net", 2.0e4, 1.2e8, 4.0e6, 0, 1e13),
    ("NetworkInterStat_diff", "tx_bytes", "Bytes", "net", 2.0e4, 1.2e8, 4.0e6, 0, 1e13),
    ("NetworkInterStat_diff", "rx_packets", "count", "net", 50.0, 9.0e4, 3.0e3, 0, 1e12),
    ("NetworkInterStat_diff", "tx_packets", "count", "net", 50.0, 9.0e4, 3.0e3, 0, 1e12),
    ("NetworkInterStat_diff", "NetworkUtilization", "%", "net", 0.1, 40.0, 1.5, 0, 100),
    ("NetworkInterStat_diff", "rx_drop", "count", "event", 0.01, 0.0, 0.0, 0, 1e9),
    ("NetworkInterStat_diff", "tx_errors", "count", "event", 0.002, 0.0, 0.0, 0, 1e9),
    ("NetworkInterStat", "speed", "Mb/s", "const", 100000.0, 0.0, 0.0, 0, 1e12),
]
_GPU: list[_Tmpl] = [
    ("GPU", "utilization.gpu", "%", "gpu", 5.0, 90.0, 2.0, 0, 100),
    ("GPU", "utilization.memory", "%", "gpu", 3.0, 55.0, 2.0, 0, 100),
    ("GPU", "power.draw", "W", "gpu", 70.0, 230.0, 5.0, 0, 700),
    ("GPU", "temperature.gpu", "C", "heat", 40.0, 35.0, 0.3, 0, 110),
    ("GPU", "clocks.sm", "MHz", "gpu", 1200.0, 500.0, 12.0, 0, 3000),
    ("GPU", "memory.used", "MiB", "gmem", 30000.0, 2000.0, 40.0, 0, 1e6),
    ("GPU", "ecc.errors.corrected.volatile.dram", "count", "event", 0.001, 0.0, 0.0, 0, 1e9),
    ("GPU", "pcie.link.gen.max", "-", "const", 4.0, 0.0, 0.0, 0, 100),
    ("GPU", "power.limit", "W", "const", 300.0, 0.0, 0.0, 0, 1e4),
]
_CORE: list[_Tmpl] = [
    ("Turbostat", "Busy%", "%", "cpu", 15.0, 60.0, 4.0, 0, 100),
    ("Turbostat", "Bzy_MHz", "MHz", "cpu", 2400.0, 700.0, 40.0, 800, 4000),
    ("Turbostat", "Avg_MHz", "MHz", "cpu", 500.0, 1600.0, 80.0, 0, 4000),
    ("Turbostat", "IPC", "-", "cpu", 0.5, 1.0, 0.08, 0, 5),
    ("Turbostat", "C1%", "%", "cpu", 30.0, -25.0, 3.0, 0, 100),
    ("Turbostat", "CorWatt", "W", "cpu", 2.0, 4.0, 0.2, 0, 50),
    ("Turbostat", "CoreTmp", "C", "heat", 42.0, 18.0, 0.4, 0, 110),
    ("Turbostat", "IRQ", "count", "cpu", 30.0, 120.0, 8.0, 0, 1e9),
]
_IFACES = ("ib0", "ens1f0")


def _fixed_templates(n_gpus: int) -> list[tuple[_Tmpl, str | None]]:
    """Host-level channels, interleaved across subsystems so that a small
    ``n_channels`` still covers every subsystem."""
    groups: list[list[tuple[_Tmpl, str | None]]] = [
        [(t, "-") for t in _PACKAGE] + [(t, None) for t in _PERF] + [(t, "-") for t in _PROCSTAT],
        [(t, str(g)) for t in _GPU for g in range(n_gpus)],
        [(t, "-" if t[0] == "Turbostat" else None) for t in _MEMORY],
        [(t, None) for t in _NET_HOST] + [(t, i) for t in _NET_IFACE for i in _IFACES],
        [(t, None) for t in _STORAGE],
    ]
    out: list[tuple[_Tmpl, str | None]] = []
    for i in range(max(len(g) for g in groups)):
        for g in groups:
            if i < len(g):
                out.append(g[i])
    return out


def _name(t: _Tmpl, instance: str | None, host: str) -> str:
    src, fld, unit = t[0], t[1], t[2]
    sep = ": " if src == "GPU" else ":"
    inst = f".{instance}" if instance is not None else ""
    return f"{src}{sep}{fld}{inst}.{host}[{unit}]"


def channel_table(n_channels: int = 700, n_gpus: int = 2) -> list[tuple[_Tmpl, str | None]]:
    """The channel templates (and instances) of one host, ``n_channels`` long."""
    fixed = _fixed_templates(n_gpus)
    if n_channels <= len(fixed):
        return fixed[:n_channels]
    per_core = len(_CORE)
    n_cores = -(-(n_channels - len(fixed)) // per_core)
    cores = [(t, str(c)) for c in range(n_cores) for t in _CORE]
    return fixed + cores[: n_channels - len(fixed)]


def _smooth(x: np.ndarray, alpha: float) -> np.ndarray:
    """Exponential smoothing started in steady state (no warm-up transient)."""
    from scipy.signal import lfilter

    if alpha >= 1 or x.size == 0:
        return x
    y0 = float(np.mean(x[: max(1, min(x.size, int(round(2 / alpha))))]))
    y, _ = lfilter([alpha], [1.0, alpha - 1.0], x, zi=[(1.0 - alpha) * y0])
    return y


def _activities(
    t: np.ndarray,
    rng: np.random.Generator,  # noqa: ARG001 - kept for signature stability
    period: float,
    lag: float,
    n_hosts: int,
) -> dict[str, np.ndarray]:
    u = ((t + lag) / period) % 1.0
    step = np.floor((t + lag) / period)
    gpu = np.where(u < 0.68, 1.0, 0.12)
    cpu = 0.35 + 0.55 * (u >= 0.68) + 0.05 * np.sin(2 * np.pi * t / 37.0)
    net_amp = 1.0 if n_hosts > 1 else 0.35
    net = 0.03 + net_amp * ((u >= 0.6) & (u < 0.82))
    io = 0.02 + 1.0 * ((step % 5 == 0) & (u < 0.3))
    mem = 0.55 + 0.1 * np.sin(2 * np.pi * t / 240.0) + 0.15 * ((t % 60.0) / 60.0)
    memd = np.gradient(mem) * 50 + 0.2 * (u >= 0.68)
    gmem = 0.8 + 0.2 * (u < 0.68)
    a = {
        "gpu": _smooth(gpu, 0.6),
        "cpu": _smooth(cpu, 0.7),
        "net": _smooth(net, 0.8),
        "io": _smooth(io, 0.7),
        "mem": mem,
        "memd": memd,
        "gmem": gmem,
    }
    a["heat"] = _smooth(0.5 * a["gpu"] + 0.5 * a["cpu"], 0.01)
    return a


def make_run(
    n_seconds: float = 60.0,
    n_channels: int = 700,
    hosts: Sequence[str] = ("nserver07",),
    seed: int = 0,
    anomalies: Sequence[Anomaly] = (),
    *,
    interval_ms: float = 100.0,
    n_gpus: int = 2,
    start: dt.datetime | str = "2025-05-11T12:27:13.400",
    gaps: Sequence[tuple[float, float]] = (),
    jitter_ms: float = 0.0,
    run_id: str | None = None,
    profile_seed: int | None = None,
) -> SyntheticRun:
    """Synthetic telemetry for one run: ``n_channels`` metrics per host.

    Parameters
    ----------
    n_seconds : run length; rows are ``n_seconds * 1000 / interval_ms``.
    n_channels : metric columns per host (the public dataset has ≈700-800).
    hosts : host names; several hosts give one multi-host frame (columns carry the host).
    seed : the noise, phase and anomalies are drawn from ``numpy.random.default_rng(seed)``.
    anomalies : planted episodes (see :class:`Anomaly`).
    gaps : ``(start_s, end_s)`` spans whose rows are removed (collector outages).
    jitter_ms : uniform jitter added to each timestamp (kept strictly increasing).
    profile_seed : seed of the machine/workload profile (step period, per-channel gains,
        host lags); default ``seed``. Runs sharing a ``profile_seed`` but not a ``seed``
        are repeated runs of one workload on one machine (baseline runs).

    Returns
    -------
    SyntheticRun
        ``(run, truth)``.
    """
    if n_seconds <= 0:
        raise ValueError("n_seconds must be > 0")
    if n_channels < 1:
        raise ValueError("n_channels must be >= 1")
    if not hosts:
        raise ValueError("at least one host is needed")
    if jitter_ms < 0 or jitter_ms >= interval_ms / 2:
        raise ValueError("jitter_ms must be in [0, interval_ms / 2)")
    hosts = [sanitize_host(h) for h in hosts]
    rng = np.random.default_rng(seed)
    prof = np.random.default_rng(seed if profile_seed is None else profile_seed)
    dt_s = interval_ms / 1000.0
    n = int(round(n_seconds / dt_s))
    t = np.arange(n) * dt_s
    period = float(prof.uniform(0.6, 1.2))
    phase = float(rng.uniform(0, period))  # where in the training step this run starts
    table = channel_table(n_channels, n_gpus)

    columns, meta_cols, bounds = _channels(t, hosts, table, rng, prof, period, phase)
    truth_rows: list[dict[str, object]] = []
    for ai, an in enumerate(anomalies):
        channels = (hosts, columns, meta_cols, bounds)
        truth_rows += _plant(ai, an, channels, rng, t, dt_s, n_seconds, period, n_channels)

    t0 = dt.datetime.fromisoformat(start) if isinstance(start, str) else start
    offs_ms = t * 1000.0
    if jitter_ms > 0:
        offs_ms = offs_ms + rng.uniform(-jitter_ms, jitter_ms, size=n)
    keep = np.ones(n, dtype=bool)
    for g0, g1 in gaps:
        keep &= ~((t >= g0) & (t < g1))
    ts = pl.Series(TIMESTAMP, (np.datetime64(t0, "ms") + np.round(offs_ms).astype("timedelta64[ms]"))[keep])
    frame = pl.DataFrame([ts.cast(TIMESTAMP_DTYPE)] + [pl.Series(k, v[keep]) for k, v in columns.items()])

    rid = run_id or f"synth_seed{seed}"
    meta = RunMeta(
        run_id=rid,
        hosts=tuple(hosts),
        workload="SYNTH__Training__synthetic",
        model="SYNTH",
        task="Training",
        dataset="synthetic",
        phase="train",
        mode="nonllm",
        platform="synthetic",
        start_time=t0.isoformat(),
        interval_ms=interval_ms,
        extra={"seed": seed, "step_period_s": period, "n_channels_per_host": len(table)},
    )
    return SyntheticRun(Run(meta, frame), _truth(truth_rows, t0))


def _channels(t, hosts, table, rng, prof, period, phase):  # noqa: ANN001, ANN202
    """Every host's channels over times ``t``: ``(columns, name -> (host, base, subsystem),
    name -> (low, high))``; the hosts share the profile's gains, with small differences."""
    n = len(t)
    columns: dict[str, np.ndarray] = {}
    meta_cols: dict[str, tuple[str, str, str]] = {}  # name -> (host, base, subsystem)
    bounds: dict[str, tuple[float, float]] = {}
    base_gain = prof.uniform(0.8, 1.2, size=len(table))
    for host in hosts:
        acts = _activities(t, rng, period, lag=phase + float(prof.uniform(0, 0.05)), n_hosts=len(hosts))
        c = len(table)
        # hosts of one cluster share the workload profile, with small per-host differences
        gain = base_gain * (1.0 + 0.01 * prof.standard_normal(c))
        noise = rng.standard_normal((n, c))
        # AR(1) measurement noise: real counters are autocorrelated at 100 ms
        from scipy.signal import lfilter

        noise = lfilter([np.sqrt(1 - 0.3**2)], [1.0, -0.3], noise, axis=0)
        for j, (tm, inst) in enumerate(table):
            _, _, _, base, offset, g, sd, lo, hi_ = tm
            name = _name(tm, inst, host)
            if base == "const":
                x = np.full(n, offset)
            elif base == "event":
                x = rng.poisson(offset, size=n).astype(np.float64)
            else:
                x = offset + g * gain[j] * acts[base] + sd * noise[:, j]
                x = np.clip(x, lo, hi_)
            columns[name] = x
            meta_cols[name] = (host, base, classify(name).subsystem)
            bounds[name] = (lo, hi_)
    return columns, meta_cols, bounds


def _plant(ai, an, channels, rng, t, dt_s, n_seconds, period, n_channels):  # noqa: ANN001, ANN202
    """Plant anomaly ``ai`` (:class:`Anomaly`) into the channels' columns (``(hosts,
    columns, meta, bounds)`` of :func:`_channels`) in place; its truth rows."""
    hosts, columns, meta_cols, bounds = channels
    n = len(t)
    truth_rows: list[dict[str, object]] = []
    host = sanitize_host(an.host) if an.host else hosts[0]
    if host not in hosts:
        raise ValueError(f"anomaly {ai} targets host {host!r}, not among {hosts}")
    want_static = an.kind == "static"
    pool = []
    for name, (h, base, sub) in meta_cols.items():
        if h != host or sub != an.subsystem:
            continue
        if want_static != (base == "const"):
            continue
        if base == "event" and an.kind != "level":
            continue
        pool.append(name)
    if not pool:
        raise ValueError(
            f"anomaly {ai}: no {an.kind} channel of subsystem {an.subsystem!r} "
            f"on host {host!r} (n_channels={n_channels} too small?)"
        )
    chosen = list(rng.choice(pool, size=min(an.n_columns, len(pool)), replace=False))
    if want_static:
        i0, i1, s0, s1 = 0, n, 0.0, float(n_seconds)
    else:
        i0 = int(np.clip(np.ceil(an.start_s / dt_s), 0, n))
        i1 = int(np.clip(np.ceil(an.end_s / dt_s), 0, n))
        s0, s1 = float(an.start_s), float(an.end_s)
    m = i1 - i0
    for name in chosen:
        x = columns[name]
        base = meta_cols[name][1]
        if want_static:
            x[:] = x[0] * 2 + 1024 if x[0] >= 0 else x[0] * 2
        elif m > 0:
            sd = _robust_sd(x)
            amp = an.magnitude * sd
            if base == "event":
                x[i0:i1] += rng.poisson(max(1.0, an.magnitude), size=m)
            elif an.kind == "level":
                lo, hi_ = bounds[name]
                med = float(np.median(x))
                sign = 1.0 if hi_ - med >= med - lo or hi_ - med > 1.5 * amp else -1.0
                x[i0:i1] += sign * amp
            elif an.kind == "variance":
                x[i0:i1] += amp * rng.standard_normal(m)
            elif an.kind == "trend":
                x[i0:i1] += np.linspace(0.0, 2 * amp, m)
            elif an.kind == "oscillation":
                freq = 1.0 / max(4 * dt_s, 0.45 * period)
                x[i0:i1] += amp * np.sin(2 * np.pi * freq * t[i0:i1])
            np.clip(x, *bounds[name], out=x)
        truth_rows.append(
            {
                "anomaly": ai,
                "subsystem": an.subsystem,
                "kind": an.kind,
                "host": host,
                "column": name,
                "start_s": s0,
                "end_s": s1,
            }
        )
    return truth_rows


def _truth(truth_rows: list[dict[str, object]], t0: dt.datetime) -> pl.DataFrame:
    """The planted anomalies' rows with their wall-clock start and end."""
    truth_schema = {
        "anomaly": pl.Int64,
        "subsystem": pl.String,
        "kind": pl.String,
        "host": pl.String,
        "column": pl.String,
        "start_s": pl.Float64,
        "end_s": pl.Float64,
    }
    return pl.DataFrame(truth_rows, schema=truth_schema).with_columns(
        start=pl.lit(t0).cast(TIMESTAMP_DTYPE) + pl.duration(milliseconds=pl.col("start_s") * 1000),
        end=pl.lit(t0).cast(TIMESTAMP_DTYPE) + pl.duration(milliseconds=pl.col("end_s") * 1000),
    )


def _public_file(frame, platform, stem, prefix, model, task, dataset):  # noqa: ANN001, ANN202
    """One run as a member of the platform's zip (``(name, tab-separated bytes)``, with
    all-missing and all-zero columns as in the data; the CPU zip's inference folder misspelt)
    and its meta row."""
    cols = [c for c in frame.columns if c != TIMESTAMP]
    empty, zero = cols[5:8], cols[-4:-1]  # all-missing and all-zero columns, as in the data
    frame = frame.with_columns(
        *[pl.lit(None, pl.Float64).alias(c) for c in empty], *[pl.lit(0.0).alias(c) for c in zero]
    )
    split = "infer" if prefix == "infer" else "train"
    misspelt = platform == "cpu" and split == "infer"
    folder = f"{split}_seperated" if misspelt else f"{split}_separated"
    meta_row = {
        "source_file": f"./{split}_separated/{stem}.txt",
        "n_rows": frame.height,
        "n_cols": frame.width,
        "phase": _PHASE[prefix],
        "mode": "llm" if prefix == "data" else "nonllm",
        "model": model,
        "task": task,
        "dataset": dataset,
        "model_task": f"{model}for{task}",
        "workload": f"{model}__{task}__{dataset}",
    }
    return (f"{folder}/{stem}.txt", _tsv_bytes(frame)), meta_row


def _bad_members(first: dict[str, bytes], meta_rows: dict, summary: dict) -> tuple[dict, dict[str, object]]:
    """A file whose header has no timestamp column (GPU), a member to be damaged (CPU), both
    made from the platform's first member, and a meta row naming a file that is not there
    (returned with the members); ``summary["bad"]`` says which."""
    no_time = b"\n".join(line.split(b"\t", 1)[-1] for line in first["gpu"].split(b"\n"))
    broken = "train_VGG16forImageClassification_broken_2025-04-19T08-00-00_htc-g003.txt"
    damaged = "train_Resnet50forImageClassification_damaged_2025-04-19T09-00-00_nserver07.txt"
    missing = "train_VGG16forImageClassification_missing_2025-04-19T10-00-00_htc-g003.txt"
    extra = {"gpu": (f"train_separated/{broken}", no_time), "cpu": (f"train_separated/{damaged}", first["cpu"])}
    named_only = {**meta_rows["gpu"][0], "source_file": f"./train_separated/{missing}"}
    summary["bad"] = [
        f"Reveal_GPU.zip:train_separated/{broken}: header without timestamp column",
        f"Reveal_CPU.zip:train_separated/{damaged}: damaged member (its CRC fails)",
        f"meta_gpu.csv names train_separated/{missing}: no such file",
    ]
    return extra, named_only


#: the zip of each platform
_ZIPS = {"gpu": "Reveal_GPU.zip", "cpu": "Reveal_CPU.zip"}


def _damage(path: Path, info) -> None:  # noqa: ANN001 - a zipfile.ZipInfo
    """Zero 64 bytes inside the data of the member ``info`` (4 KiB past its local header):
    its CRC no longer matches."""
    at = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + 4096
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(b"\x00" * 64)


def _write_meta(out: Path, meta_rows: dict, named_only: dict | None) -> None:
    """The meta tables: the GPU table disagrees with its files (every third file left out,
    and ``named_only`` added)."""
    for platform in _ZIPS:
        rows = meta_rows[platform]
        if platform == "gpu":
            rows = [m for i, m in enumerate(rows) if i % 3 != 2] + ([named_only] if named_only else [])
        pl.DataFrame(rows).write_csv(out / f"meta_{platform}.csv")


def _robust_sd(x: np.ndarray) -> float:
    med = np.median(x)
    mad = 1.4826 * np.median(np.abs(x - med))
    sd = mad if mad > 0 else float(np.std(x))
    if sd <= 0:
        sd = max(abs(float(med)) * 0.05, 1.0)
    return float(sd)


# -- a copy of the public dataset's layout, with its quirks ---------------------------------------
#: (platform, file-name prefix, model, task, dataset) of the proxy's workloads, in the order
#: ``write_public_proxy`` takes them (``scale`` K takes 2K per platform, cycling)
PUBLIC_WORKLOADS: tuple[tuple[str, str, str, str, str], ...] = (
    ("gpu", "train", "VGG16", "ImageClassification", "CIFAR10"),
    ("gpu", "data", "LLAMA", "TextClassification", "imdb"),
    ("gpu", "infer", "Resnet18", "ImageClassification", "CIFAR10"),
    ("gpu", "train", "BERTBASE", "TextClassification", "imdb"),
    ("cpu", "train", "Resnet50", "ImageClassification", "CIFAR10"),
    ("cpu", "infer", "BARTBASE", "TableQuestionAnswering", "default"),
    ("cpu", "train", "ViTB16", "ImageSemanticSegmentation", "scene_parse_150"),
    ("cpu", "data", "MISTRAL", "TextClassification", "imdb"),
)
_PUBLIC_HOSTS = {"gpu": ("htc-g003", "htc-g004"), "cpu": ("nserver07", "nserver08", "nserver09", "nserver11")}
_PUBLIC_CHANNELS = {"gpu": (765, 2), "cpu": (790, 0)}
_PHASE = {"train": "train", "infer": "infer", "data": "fine-tuning"}


def _tsv_bytes(frame: pl.DataFrame) -> bytes:
    """A frame as the public dataset's text: tab-separated, an empty first header, local
    millisecond timestamps, empty cells for missing values."""
    body = frame.select(
        pl.col(TIMESTAMP).dt.strftime("%Y-%m-%d %H:%M:%S%.3f").alias(""),
        *[pl.col(c).cast(pl.Float64) for c in frame.columns if c != TIMESTAMP],
    )
    return body.write_csv(separator="\t", null_value="", include_header=True, quote_style="never").encode()


def write_public_proxy(
    out: str | Path,
    scale: int = 1,
    *,
    runs_per_workload: int = 10,
    seconds: float = 240.0,
    seed: int = 0,
    bad_inputs: bool = True,
    overwrite: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, object]:
    """Write a dataset in the public Reveal layout (``../shared/reveal-dataset-format.md``)
    with its quirks, for tests and scale benchmarks; ``scale`` K multiplies the workloads
    (2K per platform, ``runs_per_workload`` runs of ``seconds`` each).

    ``Reveal_GPU.zip`` (≈765 channels per host, two GPUs) and ``Reveal_CPU.zip`` (≈790),
    each with ``train_separated/`` and ``infer_separated/`` (the CPU zip's inference folder
    misspelt ``infer_seperated/``), a ``.DS_Store``; tab-separated text with an empty first
    header; per platform one file holding two hosts' columns; every file with all-missing
    and all-zero columns; every fourth run with a planted anomaly (``truth.csv`` beside the
    zips says where). ``meta_cpu.csv`` matches its files; ``meta_gpu.csv`` misses some
    files and names one that does not exist. ``bad_inputs``: also a damaged zip member
    (bytes zeroed: its CRC fails), a file whose header has no timestamp column, and a
    member ``meta_gpu.csv`` names that is not there. Returns a summary of what was written.

    ``out`` must be absent or empty (``overwrite``: a non-empty ``out`` is replaced whole):
    the dataset is written into a hidden sibling folder and moved into place once complete
    (:class:`reveal_lab.io.StagedFolder`), so a failure (a full disk) leaves ``out`` as it
    was. Each member goes into its zip as it is made: memory holds one run at a time.
    ``progress`` is called with a line after each workload.

    >>> import tempfile, zipfile
    >>> d = Path(tempfile.mkdtemp())
    >>> s = write_public_proxy(d, runs_per_workload=2, seconds=6.0, bad_inputs=False)
    >>> sorted(p.name for p in d.iterdir())
    ['Reveal_CPU.zip', 'Reveal_GPU.zip', 'meta_cpu.csv', 'meta_gpu.csv', 'truth.csv']
    >>> s["runs"], s["two_host_files"]
    (8, 2)
    >>> any("_seperated/" in n for n in zipfile.ZipFile(d / "Reveal_CPU.zip").namelist())
    True
    >>> write_public_proxy(d, runs_per_workload=1, seconds=6.0)
    Traceback (most recent call last):
    ...
    FileExistsError: ... is not empty (use --overwrite to replace it)
    """
    from reveal_lab.io import staged_folder

    if scale < 1 or runs_per_workload < 1 or seconds <= 0:
        raise ValueError("scale and runs_per_workload must be >= 1 and seconds > 0")
    out = Path(out)
    with staged_folder(out, overwrite=overwrite) as tmp:
        if progress is not None:
            size = proxy_size(scale, runs_per_workload, seconds, bad_inputs=bad_inputs)
            progress(
                f"{out}: writing {size['runs']:,} runs of {seconds:g} s (about {size['zip_bytes'] / 1e6:,.0f} MB "
                f"of zips, {size['run_memory_bytes'] / 1e6:,.0f} MB of memory per run)"
            )
        summary = _write_proxy(tmp, scale, runs_per_workload, seconds, seed, bad_inputs, progress)
    summary["bytes"] = sum((out / z).stat().st_size for z in _ZIPS.values())
    return summary


#: bytes a value takes in a member's tab-separated text, and in memory while one run is made
#: (values, their frame and their text), measured on the proxy's runs
TEXT_BYTES_PER_VALUE = 25.0
MEMORY_BYTES_PER_VALUE = 45.0
#: a deflated member's size against its text
DEFLATED_SHARE = 0.4


def proxy_size(scale: int, runs_per_workload: int, seconds: float, *, bad_inputs: bool = True) -> dict[str, float]:
    """What :func:`write_public_proxy` makes, estimated before it starts: ``runs``, the bytes
    of the zips (stored uncompressed with ``bad_inputs``, else deflated) and the memory one
    run takes while it is made.

    >>> s = proxy_size(1, 10, 240.0)
    >>> s["runs"], round(s["zip_bytes"] / 1e9, 1), round(s["run_memory_bytes"] / 1e6)
    (40, 1.9, 86)
    """
    runs = 4 * scale * runs_per_workload
    values = seconds / 0.1 * (max(c for c, _ in _PUBLIC_CHANNELS.values()) + 10)
    share = 1.0 if bad_inputs else DEFLATED_SHARE
    return {
        "runs": runs,
        "zip_bytes": runs * values * TEXT_BYTES_PER_VALUE * share,
        "run_memory_bytes": values * MEMORY_BYTES_PER_VALUE,
    }


def _write_proxy(out: Path, scale, runs_per_workload, seconds, seed, bad_inputs, progress):  # noqa: ANN001, ANN202
    """The files of :func:`write_public_proxy`, written into ``out``; the summary."""
    import contextlib
    import zipfile

    rng = np.random.default_rng(seed)
    first: dict[str, bytes] = {}  # each platform's first member: the bad inputs are made from it
    meta_rows: dict[str, list[dict[str, object]]] = {"gpu": [], "cpu": []}
    truth_parts: list[pl.DataFrame] = []
    summary: dict[str, object] = {"runs": 0, "two_host_files": 0, "planted": 0, "bad": []}
    day0 = dt.datetime(2025, 4, 20, 8, 0, 0)
    # stored, not deflated, when a member's bytes are to be damaged
    how = zipfile.ZIP_STORED if bad_inputs else zipfile.ZIP_DEFLATED
    with contextlib.ExitStack() as stack:
        zips = {p: stack.enter_context(zipfile.ZipFile(out / name, "w", how)) for p, name in _ZIPS.items()}
        for z in zips.values():
            z.writestr("train_separated/.DS_Store", b"\x00\x00\x00\x01Bud1")
        for platform in ("gpu", "cpu"):
            zf = zips[platform]
            mine = [w for w in PUBLIC_WORKLOADS if w[0] == platform]
            n_channels, n_gpus = _PUBLIC_CHANNELS[platform]
            hosts = _PUBLIC_HOSTS[platform]
            for k in range(2 * scale):
                _, prefix, model, task, dataset = mine[k % len(mine)]
                if k >= len(mine):
                    dataset = f"{dataset}{k // len(mine)}"  # another workload of the same model
                profile = int(rng.integers(1 << 30))
                for r in range(runs_per_workload):
                    n = int(summary["runs"])
                    two = r == 1 and k == 0  # one file per platform holds two hosts
                    run_hosts = (hosts[0], hosts[1]) if two else (hosts[(k + r) % len(hosts)],)
                    start = day0 + dt.timedelta(days=k, minutes=7 * r, seconds=int(rng.integers(60)))
                    anomalies = []
                    if r % 4 == 3:
                        sub = ("cpu", "memory", "network", "storage")[(k + r) % 4]
                        anomalies = [Anomaly(sub, seconds * 0.5, seconds * 0.65, magnitude=6.0)]
                        summary["planted"] = int(summary["planted"]) + 1
                    sr = make_run(
                        seconds,
                        n_channels=n_channels,
                        hosts=run_hosts,
                        seed=seed * 100_003 + n,
                        anomalies=anomalies,
                        n_gpus=n_gpus,
                        start=start + dt.timedelta(milliseconds=400),
                        profile_seed=profile,
                    )
                    stem = f"{prefix}_{model}for{task}_{dataset}_{start:%Y-%m-%dT%H-%M-%S}_{run_hosts[0]}"
                    member, meta_row = _public_file(sr.run.frame, platform, stem, prefix, model, task, dataset)
                    zf.writestr(*member)
                    first.setdefault(platform, member[1])
                    meta_rows[platform].append(meta_row)
                    if len(sr.truth):
                        truth_parts.append(sr.truth.with_columns(pl.lit(stem).alias("file")))
                    summary["runs"] = n + 1
                    summary["two_host_files"] = int(summary["two_host_files"]) + two
                if progress is not None:
                    progress(f"  {platform} workload {k + 1} of {2 * scale}: {summary['runs']} runs written")
        damaged = None
        if bad_inputs:
            extra, named_only = _bad_members(first, meta_rows, summary)
            for platform, (name, data) in extra.items():
                zips[platform].writestr(name, data)
            damaged = zips["cpu"].getinfo(extra["cpu"][0])
    if damaged is not None:
        _damage(out / _ZIPS["cpu"], damaged)
    _write_meta(out, meta_rows, named_only if bad_inputs else None)
    truth = pl.concat(truth_parts) if truth_parts else pl.DataFrame()
    truth.drop("start", "end", strict=False).write_csv(out / "truth.csv")
    return summary
