#!/usr/bin/env python
"""Build the labelled GPU-host set (``reveal_lab.lab.build_gpu_host_set``) from raw recordings:
collector folders with ``labels.json`` and, where a job ran, ``steps.csv``.

    .venv/bin/python scripts/build_gpu_host_set.py ../shared/data/gpu-host/gpu-a ../shared/data/gpu-host/gpu-phases --out data/gpu-host

Rebuilding from the set's own ``raw/`` folders gives the same files:

    .venv/bin/python scripts/build_gpu_host_set.py data/gpu-host/raw/* --out data/gpu-host
"""

from __future__ import annotations

import argparse
import sys

from reveal_lab.lab import build_gpu_host_set


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("raw", nargs="+", help="raw recordings (collector folders with labels.json)")
    p.add_argument("--out", default="data/gpu-host", help="the set's folder (default data/gpu-host)")
    a = p.parse_args(argv)
    try:
        out = build_gpu_host_set(a.raw, a.out)
    except ValueError as exc:
        print(f"build_gpu_host_set: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
