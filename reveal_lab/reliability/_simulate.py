"""Monte-Carlo simulation of checkpointed training jobs under exponential node failures.

The model (one job = ``work_h`` hours of useful training on N nodes):

- failures arrive as a Poisson process of rate λ = N·r_f while the job runs (each node
  fails independently and exponentially; a failed node is replaced, so λ stays constant);
- the work is cut into segments of Δ useful hours (the last one shorter when Δ does not
  divide the work), each followed by a checkpoint write of w hours; a segment counts only
  once its checkpoint is written;
- a failure during a segment or its write loses the time since the last checkpoint and
  costs a restart of u₀ hours (no failure strikes during a restart), then the segment is
  retried.

A job's ETTR is its useful training time over its wall-clock time, ``work_h / wall``
(the ratio of productive to total time the paper defines; time lost to rework,
restarts and checkpoint writes is unproductive). Vectorised over jobs: the number of
failures of a job is negative-binomial (failures before the segments' successes) and the
time lost to each failure a truncated exponential, summed exactly up to 256 failures per
job and by its normal limit beyond.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reveal_lab.reliability._model import GPUS_PER_NODE, job_failure_rate

__all__ = ["SimulationResult", "simulate_ettr"]

_EXACT_MAX = 256  # failures per job summed one by one; beyond, the CLT sum
_CHUNK = 20_000  # jobs per block (bounds memory)
#: a fixed wall-clock budget steps every job from failure to failure: at most this many
#: job-steps (expected failures per job x jobs; seconds on one core), and at most 1 % of it
#: in a row
MAX_WALL_STEPS = 1e8


@dataclass
class SimulationResult:
    """Per-job outcomes of :func:`simulate_ettr` (arrays of length ``n_jobs``)."""

    ettr: np.ndarray
    failures: np.ndarray
    wall_h: np.ndarray
    params: dict[str, float] = field(default_factory=dict)

    @property
    def mean(self) -> float:
        """The expected ETTR of a job (mean over simulated jobs)."""
        return float(self.ettr.mean())

    @property
    def ci95(self) -> tuple[float, float]:
        """95 % confidence interval of :attr:`mean` (normal, from the jobs' spread), within
        [0, 1], the range of an ETTR."""
        half = 1.96 * float(self.ettr.std(ddof=1)) / np.sqrt(self.ettr.size) if self.ettr.size > 1 else np.nan
        return (max(self.mean - half, 0.0), min(self.mean + half, 1.0))

    @property
    def pooled(self) -> float:
        """Useful time over wall time pooled across jobs (ratio of means)."""
        return float((self.ettr * self.wall_h).sum() / self.wall_h.sum())

    def quantiles(self, qs: tuple[float, ...] = (0.05, 0.5, 0.95)) -> dict[str, float]:
        """Quantiles of the per-job ETTR distribution, keyed ``p5``, ``p50``..."""
        return {f"p{round(q * 100):d}": float(np.quantile(self.ettr, q)) for q in qs}


def _trunc_exp_moments(lam: float, length: float) -> tuple[float, float]:
    """Mean and variance of an Exp(λ) time conditioned on being < length."""
    x = lam * length
    if x < 1e-6:  # ~uniform on [0, length]
        return length / 2.0, length * length / 12.0
    q = -np.expm1(-x)  # P(T < L)
    m1 = 1.0 / lam - length * np.exp(-x) / q
    m2 = 2.0 / lam**2 - np.exp(-x) * (length**2 + 2.0 * length / lam) / q
    return float(m1), float(max(m2 - m1 * m1, 0.0))


def _lost_time(rng: np.random.Generator, fails: np.ndarray, lam: float, length: float) -> np.ndarray:
    """Per job, the sum of ``fails`` times-to-failure, each Exp(λ) truncated to [0, length)."""
    out = np.zeros(fails.size)
    if length <= 0 or not fails.any():
        return out
    q = -np.expm1(-lam * length)
    small = fails <= _EXACT_MAX
    k = np.where(small, fails, 0)
    total = int(k.sum())
    if total:
        u = rng.random(total)
        t = -np.log1p(-u * q) / lam
        out += np.bincount(np.repeat(np.arange(fails.size), k), weights=t, minlength=fails.size)
    big = ~small
    if big.any():
        m, v = _trunc_exp_moments(lam, length)
        n = fails[big].astype(float)
        out[big] = np.clip(rng.normal(n * m, np.sqrt(n * v)), 0.0, n * length)
    return out


def simulate_ettr(
    gpus: int,
    interval_h: float,
    restart_h: float,
    write_h: float = 0.0,
    failure_rate: float | str = "rsc1",
    *,
    work_h: float = 24.0,
    n_jobs: int = 100_000,
    seed: int | None = 0,
    gpus_per_node: int = GPUS_PER_NODE,
    wall_h: float | None = None,
) -> SimulationResult:
    """Simulate ``n_jobs`` jobs of ``work_h`` useful hours each; their ETTR distribution.

    Parameters
    ----------
    gpus : job size (nodes = ceil(gpus / gpus_per_node)).
    interval_h, restart_h, write_h : checkpoint interval Δ, restart overhead u₀ and
        checkpoint write time w, hours.
    failure_rate : failures per 1,000 node-days, or ``"rsc1"`` / ``"rsc2"``.
    work_h : useful training per job, hours (fixed; the wall time is what varies).
    wall_h : instead, a fixed wall-clock budget per job, hours (e.g. a reservation):
        the useful time is the checkpointed work done within it (work since the last
        checkpoint when the budget runs out is lost). Both settings share the long-run
        mean (:func:`renewal_ettr`); they differ in spread and by an end effect of order
        Δ / budget.

    Examples
    --------
    >>> res = simulate_ettr(16384, 5 / 60, 5 / 60, n_jobs=20_000, seed=1)
    >>> round(res.mean, 2), bool(res.ci95[1] - res.ci95[0] < 0.002)
    (0.93, True)
    """
    if not np.isfinite(interval_h) or interval_h <= 0:
        raise ValueError(f"checkpoint interval must be > 0 hours, got {interval_h!r}")
    for name, v in (("restart", restart_h), ("checkpoint write", write_h)):
        if not np.isfinite(v) or v < 0:
            raise ValueError(f"{name} time must be a finite duration >= 0 hours, got {v!r}")
    if not np.isfinite(work_h) or work_h <= 0:
        raise ValueError(f"work per job must be > 0 hours, got {work_h!r}")
    if isinstance(n_jobs, bool) or int(n_jobs) != n_jobs or n_jobs < 1:
        raise ValueError(f"n_jobs must be a whole number >= 1, got {n_jobs!r}")
    lam = job_failure_rate(gpus, failure_rate, gpus_per_node)
    if wall_h is not None:
        return _simulate_wall(lam, float(interval_h), float(restart_h), float(write_h), wall_h, int(n_jobs),
                              seed, gpus)
    n_full = int(np.floor(work_h / interval_h + 1e-9))
    rem = max(work_h - n_full * interval_h, 0.0)
    if rem < 1e-9 * interval_h:
        rem = 0.0
    segments = [(n_full, interval_h + write_h)] if n_full else []
    if rem > 0:
        segments.append((1, rem + write_h))
    n_seg = sum(n for n, _ in segments)
    worst = max(length for _, length in segments)
    if lam * worst > 30:
        raise ValueError(
            f"a segment of {worst:.3g} h at {lam:.3g} failures/h (MTTF {1 / lam:.3g} h) almost never "
            f"completes (expected e^{lam * worst:.0f} tries); ETTR ≈ 0: shorten the checkpoint interval"
        )
    rng = np.random.default_rng(seed)
    n_jobs = int(n_jobs)
    fails = np.zeros(n_jobs, dtype=np.int64)
    lost = np.zeros(n_jobs)
    for lo in range(0, n_jobs, _CHUNK):
        hi = min(lo + _CHUNK, n_jobs)
        for count, length in segments:
            f = rng.negative_binomial(count, np.exp(-lam * length), size=hi - lo)
            fails[lo:hi] += f
            lost[lo:hi] += _lost_time(rng, f, lam, length)
    wall = work_h + n_seg * write_h + fails * restart_h + lost
    params = {
        "gpus": float(gpus),
        "interval_h": float(interval_h),
        "restart_h": float(restart_h),
        "write_h": float(write_h),
        "failures_per_hour": lam,
        "work_h": float(work_h),
    }
    return SimulationResult(ettr=work_h / wall, failures=fails, wall_h=wall, params=params)


def _simulate_wall(
    lam: float, interval_h: float, restart_h: float, write_h: float, wall_h: float, n_jobs: int,
    seed: int | None, gpus: int,
) -> SimulationResult:
    """Fixed wall-clock budget: step every job from failure to failure (vectorised over jobs)."""
    if not np.isfinite(wall_h) or wall_h <= 0:
        raise ValueError(f"wall-clock budget must be > 0 hours, got {wall_h!r}")
    cycle = interval_h + write_h
    if lam * cycle > 30:
        raise ValueError(
            f"a segment of {cycle:.3g} h at {lam:.3g} failures/h almost never completes; ETTR ≈ 0"
        )
    steps = lam * wall_h / (1.0 + lam * restart_h)  # expected failures per job: the loop's steps
    if steps * n_jobs > MAX_WALL_STEPS or steps > MAX_WALL_STEPS / 100:
        raise ValueError(
            f"a {wall_h:.3g} h wall-clock budget holds about {steps:.3g} failures per job (MTTF "
            f"{1 / lam:.3g} h), {steps * n_jobs:.3g} simulation steps over {n_jobs} jobs, more than "
            f"{MAX_WALL_STEPS:.0e}; give a shorter wall-clock budget or fewer jobs (the long-run "
            "mean is the closed form's renewal_ettr)"
        )
    rng = np.random.default_rng(seed)
    t = np.zeros(n_jobs)
    useful = np.zeros(n_jobs)
    fails = np.zeros(n_jobs, dtype=np.int64)
    active = np.arange(n_jobs)
    while active.size:
        x = rng.exponential(1.0 / lam, active.size)
        left = wall_h - t[active]
        hit = x < left
        run = np.where(hit, x, left)
        useful[active] += np.floor(run / cycle + 1e-12) * interval_h
        fails[active] += hit
        t[active] += np.where(hit, x + restart_h, left)
        active = active[hit & (t[active] < wall_h)]
    params = {
        "gpus": float(gpus),
        "interval_h": interval_h,
        "restart_h": restart_h,
        "write_h": write_h,
        "failures_per_hour": lam,
        "work_h": float("nan"),
        "wall_h": float(wall_h),
    }
    return SimulationResult(ettr=useful / wall_h, failures=fails, wall_h=np.full(n_jobs, float(wall_h)),
                            params=params)
