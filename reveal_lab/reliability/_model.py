"""Closed forms of Kokolis et al. (HPCA 2025, arXiv 2410.21680, "Revisiting Reliability in
Large-Scale Machine Learning Research Clusters"): MTTF of a job against its size, the
expected effective training time ratio (ETTR) against the checkpoint interval, and the
interval that maximises it.

Units: durations in **hours**, failure rates in **failures per 1,000 node-days** (the
paper's unit), sizes in GPUs (nodes = ceil(GPUs / GPUs per node)).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "FAILURE_RATES",
    "GPUS_PER_NODE",
    "resolve_failure_rate",
    "job_failure_rate",
    "mttf_hours",
    "expected_ettr",
    "renewal_ettr",
    "optimal_interval",
]

#: node failure rates r_f, failures per 1,000 node-days (the paper's two clusters)
FAILURE_RATES: dict[str, float] = {"rsc1": 6.50, "rsc2": 2.34}
#: GPUs per node on both clusters (8× A100)
GPUS_PER_NODE = 8


def resolve_failure_rate(rate: float | str) -> float:
    """Failures per 1,000 node-days from a number, a numeric string or a cluster name.

    >>> resolve_failure_rate("rsc2"), resolve_failure_rate("6.5"), resolve_failure_rate(1)
    (2.34, 6.5, 1.0)
    """
    if isinstance(rate, str):
        key = rate.strip().lower().replace("-", "")
        if key in FAILURE_RATES:
            return FAILURE_RATES[key]
        try:
            value = float(key)
        except ValueError:
            raise ValueError(
                f"failure rate {rate!r}: expected failures per 1,000 node-days (e.g. 6.5) "
                f"or one of {sorted(FAILURE_RATES)}"
            ) from None
    else:
        value = float(rate)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"failure rate must be > 0 failures per 1,000 node-days, got {rate!r}")
    return value


def _nodes(gpus: int, gpus_per_node: int) -> int:
    if isinstance(gpus, bool) or int(gpus) != gpus or gpus < 1:
        raise ValueError(f"gpus must be a whole number >= 1, got {gpus!r}")
    if isinstance(gpus_per_node, bool) or int(gpus_per_node) != gpus_per_node or gpus_per_node < 1:
        raise ValueError(f"gpus per node must be a whole number >= 1, got {gpus_per_node!r}")
    return -(-int(gpus) // int(gpus_per_node))


def job_failure_rate(
    gpus: int, failure_rate: float | str = "rsc1", gpus_per_node: int = GPUS_PER_NODE
) -> float:
    """Failures per hour of a job on ``gpus`` GPUs: N·r_f (independent exponential nodes).

    >>> round(job_failure_rate(16384), 4)   # 2,048 nodes at 6.50 per 1,000 node-days
    0.5547
    """
    return _nodes(gpus, gpus_per_node) * resolve_failure_rate(failure_rate) / 1000.0 / 24.0


def mttf_hours(gpus: int, failure_rate: float | str = "rsc1", gpus_per_node: int = GPUS_PER_NODE) -> float:
    """Mean time to failure of a job, 1 / (N·r_f), in hours.

    >>> round(mttf_hours(16384), 2), round(mttf_hours(131072), 3)   # the paper's projections
    (1.8, 0.225)
    """
    return 1.0 / job_failure_rate(gpus, failure_rate, gpus_per_node)


def _durations(**kw: float) -> None:
    for name, v in kw.items():
        if not np.all(np.isfinite(v)) or np.any(np.asarray(v) < 0):
            raise ValueError(f"{name} must be a finite duration >= 0 hours, got {v!r}")


def expected_ettr(
    gpus: int,
    interval_h: float | np.ndarray,
    restart_h: float,
    write_h: float = 0.0,
    failure_rate: float | str = "rsc1",
    gpus_per_node: int = GPUS_PER_NODE,
) -> float | np.ndarray:
    """The paper's first-order expected ETTR, clipped at 0:

    ``E[ETTR] ≈ (1 − N·r_f·(u₀ + Δ/2)) / (1 + w/Δ)``

    with Δ the checkpoint interval (useful work between checkpoints), u₀ the restart
    overhead and w the time to write a checkpoint, all in hours. Accurate while failures
    are rare on the scale of Δ + u₀ (N·r_f·(Δ + u₀) ≪ 1); past that it undershoots
    (it reaches 0 where a simulated job still makes progress).

    >>> round(expected_ettr(16384, 1.0, 5 / 60), 3), round(expected_ettr(16384, 5 / 60, 5 / 60), 3)
    (0.676, 0.931)
    """
    _durations(restart_h=restart_h, write_h=write_h)
    iv = np.asarray(interval_h, dtype=float)
    if not np.all(np.isfinite(iv)) or np.any(iv <= 0):
        raise ValueError(f"checkpoint interval must be > 0 hours, got {interval_h!r}")
    lam = job_failure_rate(gpus, failure_rate, gpus_per_node)
    e = np.clip((1.0 - lam * (restart_h + iv / 2.0)) / (1.0 + write_h / iv), 0.0, None)
    return float(e) if e.ndim == 0 else e


def renewal_ettr(
    gpus: int,
    interval_h: float | np.ndarray,
    restart_h: float,
    write_h: float = 0.0,
    failure_rate: float | str = "rsc1",
    gpus_per_node: int = GPUS_PER_NODE,
) -> float | np.ndarray:
    """The exact long-run ETTR of the simulator's model (renewal-reward):

    ``Δ / ((exp(λ(Δ + w)) − 1) · (1/λ + u₀))``, λ = N·r_f.

    Each checkpointed segment needs Δ + w of failure-free running; every failure loses
    the segment's progress and costs u₀ (failures strike while running or writing a
    checkpoint, not during a restart). Its first-order expansion is the paper's
    :func:`expected_ettr` (up to a w/2 term in the lost work).

    >>> round(renewal_ettr(16384, 5 / 60, 5 / 60), 3)
    0.934
    """
    _durations(restart_h=restart_h, write_h=write_h)
    iv = np.asarray(interval_h, dtype=float)
    if not np.all(np.isfinite(iv)) or np.any(iv <= 0):
        raise ValueError(f"checkpoint interval must be > 0 hours, got {interval_h!r}")
    lam = job_failure_rate(gpus, failure_rate, gpus_per_node)
    with np.errstate(over="ignore"):
        e = iv / (np.expm1(lam * (iv + write_h)) * (1.0 / lam + restart_h))
    return float(e) if e.ndim == 0 else e


def optimal_interval(
    gpus: int,
    write_h: float,
    failure_rate: float | str = "rsc1",
    gpus_per_node: int = GPUS_PER_NODE,
    *,
    restart_h: float | None = None,
) -> float:
    """The checkpoint interval that maximises the expected ETTR, in hours.

    Without ``restart_h``: the paper's (Young's) ``Δ* ≈ √(2·w / (N·r_f))``. With it: the
    exact maximiser of :func:`expected_ettr`, ``−w + √(w² + 2·w·(1 − N·r_f·u₀)/(N·r_f))``
    (the two agree while w and u₀ are small against the MTTF). ``w = 0`` gives 0: with free
    checkpoints, checkpoint continuously.

    >>> round(optimal_interval(16384, 1 / 60) * 60, 1)   # minutes, 1-min writes on RSC-1
    14.7
    """
    _durations(write_h=write_h)
    lam = job_failure_rate(gpus, failure_rate, gpus_per_node)
    if restart_h is None:
        return math.sqrt(2.0 * write_h / lam)
    _durations(restart_h=restart_h)
    a = max(1.0 - lam * restart_h, 0.0)
    return -write_h + math.sqrt(write_h * write_h + 2.0 * write_h * a / lam)
