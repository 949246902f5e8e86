"""Record the /proc sample behind ``tests/features/test_tsfresh_parity.py``.

Runs the project's own collector (``reveal_lab.collect.collect``, probes cpu, loadavg,
meminfo, vmstat) for a few seconds at 40 ms, reads it back with
``reveal_lab.io.read_collector_run(view="raw")`` (cumulative counters as recorded) and
keeps the columns the parity test uses, written as CSV (every value is an integer
count, so the text round trip is exact). Usage::

    .venv/bin/python scripts/record_procfs_fixture.py tests/features/fixtures/procfs_sample.csv

A new recording gives other numbers (it is this machine's /proc at that moment); the
test only needs a real sample, never a particular one. Do not edit the CSV by hand.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

#: the parity test's metrics, as the collector names them (host "fixture")
KEEP_PREFIXES = (
    "CPU:user.-.",
    "CPU:nice.-.",
    "CPU:system.-.",
    "CPU:idle.-.",
    "CPU:iowait.-.",
    "CPU:irq.-.",
    "CPU:softirq.-.",
    "CPU:steal.-.",
    "CPU:procs_running.",
    "Memory:MemTotal.",
    "Memory:MemFree.",
    "Memory:MemAvailable.",
    "Memory:Cached.",
    "Memory:Active.",
    "Memory:Dirty.",
    "Vmstat:pgfault.",
    "Vmstat:pgalloc_normal.",
    "Vmstat:pgfree.",
    "Vmstat:nr_free_pages.",
    "Vmstat:nr_anon_pages.",
)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--interval", type=float, default=0.04)
    a = ap.parse_args(argv)
    import polars as pl

    from reveal_lab.collect import collect
    from reveal_lab.io import read_collector_run

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        collect(
            run_dir,
            interval_s=a.interval,
            duration_s=a.seconds,
            probes=["cpu", "loadavg", "meminfo", "vmstat"],
            host="fixture",
            handle_signals=False,
        )
        frame = read_collector_run(run_dir, view="raw").frame
    cols = [c for c in frame.columns if c.startswith(KEEP_PREFIXES)]
    missing = [p for p in KEEP_PREFIXES if not any(c.startswith(p) for c in cols)]
    if missing:
        raise SystemExit(f"this kernel's /proc lacks {missing}")
    frame = frame.select(pl.col("timestamp").dt.strftime("%Y-%m-%dT%H:%M:%S%.3f"), *[pl.col(c).cast(pl.Int64) for c in cols])
    a.out.parent.mkdir(parents=True, exist_ok=True)
    frame.write_csv(a.out)
    print(f"wrote {a.out}: {frame.height} rows x {len(cols)} metrics")


if __name__ == "__main__":
    main()
