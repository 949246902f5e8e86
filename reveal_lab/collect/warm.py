"""Fill numba's on-disk cache for the collector's compiled code ahead of time.

    python -m reveal_lab.collect.warm        # run once after installing (scripts/bootstrap.sh does)

A fresh install has no compiled code: the first ``reveal-lab collect`` would compile
the scanner, the batched reader and the hot loop (``cache=True``) before its first sample,
about 3 s on an idle VM and 10 s or more under load. This step runs a short collection
with every procfs probe into a temporary folder, which compiles every specialisation a
run uses and writes it to the cache (beside the modules, or ``NUMBA_CACHE_DIR``); later
starts load it instead of compiling. Re-running it is cheap (it then loads from the
cache). It prints the dispatchers' cache hits and misses (a miss: compiled now).
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["warm_cache", "compiled_stats"]


def compiled_stats() -> dict[str, dict[str, int]]:
    """``{function: {"hits": n, "misses": n}}`` of numba's cache for the collector's
    compiled functions in this process (a miss: the function was compiled here; empty
    without numba)."""
    try:
        from reveal_lab.collect import _burst
        from reveal_lab.collect.probes import _batch, _scan
    except ImportError:
        return {}
    out = {}
    for name, fn in (
        ("scan", _scan.scan),
        ("batch_read", _batch.batch_read),
        ("burst", _burst.burst),
        ("apply_ops", _burst.apply_ops),
    ):
        stats = getattr(fn, "stats", None)
        if stats is None:
            continue
        out[name] = {"hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values())}
    return out


def warm_cache(probes: str = "procfs") -> dict[str, Any]:
    """Run a ~0.3 s collection with ``probes`` into a temporary folder (deleted after);
    return :func:`compiled_stats` and the run's ``hot_loop`` counts."""
    from reveal_lab.collect._collect import collect

    old = os.environ.get("REVEAL_LAB_COLLECT_DEFER")
    os.environ["REVEAL_LAB_COLLECT_DEFER"] = "0"  # compile before the first tick, as a test run
    try:
        with tempfile.TemporaryDirectory(prefix="reveal-lab-warm-") as d:
            res = collect(
                Path(d) / "run", interval_s=0.05, duration_s=0.3, probes=probes, handle_signals=False
            )
            hot = res.meta.get("hot_loop", {})
    finally:
        if old is None:
            os.environ.pop("REVEAL_LAB_COLLECT_DEFER", None)
        else:
            os.environ["REVEAL_LAB_COLLECT_DEFER"] = old
    return {"compiled": compiled_stats(), "hot_loop": hot, "samples": res.samples}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv:
        print(f"reveal_lab.collect.warm takes no arguments, got {argv!r}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        import numba  # noqa: F401
    except ImportError:
        print("[warm] numba is not installed: the collector runs interpreted, nothing to warm")
        return 0
    out = warm_cache()
    parts = ", ".join(
        f"{k} {v['misses']} compiled / {v['hits']} from cache" for k, v in out["compiled"].items()
    )
    print(f"[warm] collector compiled code cached ({parts}; {out['samples']} samples in the test run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
