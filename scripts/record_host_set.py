#!/usr/bin/env python
"""Record the labelled host set (``reveal_lab.lab.host_set_plan``): N recordings of the whole
machine by ``reveal-lab collect``, each with 0-2 intermittent jobs at known times (a third
with none), after the load gate has passed; then the lab layout in --out.

    sudo .venv/bin/python scripts/record_host_set.py --n 30 --duration 90s --out data/host

Needs root (the network job's namespace pair). Raw collector folders go to --raw; --build-only
rebuilds --out from them.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys

from reveal_lab.config import parse_duration
from reveal_lab.lab import HOST_JOBS, build_host_set, host_set_plan, record_host_set


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=30, help="recordings (default 30)")
    p.add_argument("--duration", default="90s", help="length of each recording (default 90s)")
    p.add_argument("--min-len", default="10s", help="shortest job (default 10s)")
    p.add_argument("--max-len", default="30s", help="longest job (default 30s)")
    p.add_argument("--lead", default="15s", help="calm before the first job (default 15s)")
    p.add_argument("--gap", default="10s", help="calm between two jobs (default 10s)")
    p.add_argument("--tail", default="5s", help="calm after the last job (default 5s)")
    p.add_argument("--seed", type=int, default=0, help="plan seed (default 0)")
    p.add_argument(
        "--kinds",
        default=",".join(HOST_JOBS),
        help=f"job kinds, taken in turn (default all: {','.join(HOST_JOBS)})",
    )
    p.add_argument("--raw", default="/var/tmp/reveal_lab/host_raw", help="raw collector folders")
    p.add_argument("--out", default="data/host", help="dataset folder (default data/host)")
    p.add_argument("--load-gate", type=float, default=0.5, help="1-min load average (less our own) to wait for")
    p.add_argument("--gate-wait", default="10min", help="give up waiting for the gate after this long")
    p.add_argument(
        "--probes",
        default=None,
        help="the collector's --probes (default all; e.g. '-interrupts' when the set would pass 10 MiB)",
    )
    p.add_argument("--build-only", action="store_true", help="build --out from --raw, record nothing")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if not a.build_only:
        plans = host_set_plan(
            a.n,
            duration_s=parse_duration(a.duration),
            min_len_s=parse_duration(a.min_len),
            max_len_s=parse_duration(a.max_len),
            lead_s=parse_duration(a.lead),
            gap_s=parse_duration(a.gap),
            tail_s=parse_duration(a.tail),
            seed=a.seed,
            kinds=[k for k in a.kinds.split(",") if k],
        )
        record_host_set(
            plans, a.raw, load_gate=a.load_gate, gate_wait_s=parse_duration(a.gate_wait), probes=a.probes
        )
    meta, labels = build_host_set(a.raw, a.out, command=shlex.join([sys.argv[0], *(argv or sys.argv[1:])]))
    print(f"{a.out}: {len(meta)} recordings, {len(labels)} labelled jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
