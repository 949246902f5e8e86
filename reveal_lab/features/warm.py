"""Fill numba's on-disk cache for the window-feature kernels ahead of time.

    python -m reveal_lab.features.warm        # run once after installing (scripts/bootstrap.sh does)

A fresh install has no compiled feature kernels: the first ``reveal-lab detect`` (or notebook,
or ``evaluate``) compiles them (``cache=True``) before it scores anything, about 20 s of CPU on
an idle VM, and every process that starts before the first one has written the cache compiles
them again. This step computes the features of a small synthetic frame whose columns take each
path of the kernels (a noisy gauge, a counter, a ramp that the ADF fit matches exactly, a
constant, missing samples), as the pipeline calls it (serially), which compiles every
specialisation a run uses and writes it to the cache (beside the modules, or ``NUMBA_CACHE_DIR``); later
processes load it. Re-running it is cheap. It prints the dispatchers' cache hits and misses
(a miss: compiled now).
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import Any

import numpy as np
import polars as pl

__all__ = ["compiled_stats", "warm_cache"]

#: seconds of the synthetic frame (at 100 ms: enough windows for every feature)
_SECONDS = 30


def _frame() -> pl.DataFrame:
    """A canonical frame at 100 ms whose columns take each path of the kernels: a noisy gauge,
    a counter, a ramp (an exact ADF fit), a constant, a gauge with missing samples."""
    n = _SECONDS * 10
    rng = np.random.default_rng(0)
    t0 = dt.datetime(2026, 1, 1)
    noisy = 50 + rng.normal(0, 5, n)
    gappy = noisy.copy()
    gappy[::7] = np.nan
    return pl.DataFrame(
        {
            "timestamp": pl.Series([t0 + dt.timedelta(milliseconds=100 * i) for i in range(n)]).cast(
                pl.Datetime("us")
            ),
            "Memory:MemFree.w[kB]": noisy,
            "CPU:ctxt.w[count]": np.cumsum(rng.integers(0, 100, n)).astype(float),
            "CPU:intr.w[count]": np.arange(n, dtype=float),
            "Memory:MemTotal.w[kB]": np.full(n, 1e6),
            "Memory:Cached.w[kB]": gappy,
        }
    )


def compiled_stats() -> dict[str, dict[str, int]]:
    """``{function: {"hits": n, "misses": n}}`` of numba's cache for the feature kernels in this
    process (a miss: the function was compiled here)."""
    from numba.core.registry import CPUDispatcher

    from . import _adf, _kernels

    out = {}
    for module in (_kernels, _adf):
        for name, fn in sorted(vars(module).items()):
            if isinstance(fn, CPUDispatcher) and (fn.stats.cache_hits or fn.stats.cache_misses):
                out[f"{module.__name__}.{name}"] = {
                    "hits": sum(fn.stats.cache_hits.values()),
                    "misses": sum(fn.stats.cache_misses.values()),
                }
    return out


def warm_cache() -> dict[str, Any]:
    """Compute the features of :func:`_frame` as the pipeline does; the dispatchers' stats."""
    from . import window_features

    window_features(_frame())
    return compiled_stats()


def main(argv: list[str] | None = None) -> int:
    del argv
    stats = warm_cache()
    misses = sum(s["misses"] for s in stats.values())
    hits = sum(s["hits"] for s in stats.values())
    print(f"feature kernels: {len(stats)} functions, {misses} compiled now, {hits} loaded from the cache")
    return 0


if __name__ == "__main__":
    sys.exit(main())
