#!/usr/bin/env python
"""Detection and attribution on labelled server telemetry (SMD/ASD, InterFusion's release).

    .venv/bin/python benchmarks/labelled_servers.py [--data DIR] [--out DIR] [--servers a,b]

Runs ``reveal-lab bench labelled`` on every server of ``--data`` (default
``$REVEAL_LABELLED_DIR`` or ``../shared/data/labelled-servers``), writes the per-row
outputs to ``--out`` (default ``out/bench/labelled``, not committed) and copies the
scored summary to ``benchmarks/results/labelled_servers.json``; prints the table.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "labelled_servers.json"


def default_data() -> Path:
    env = os.environ.get("REVEAL_LABELLED_DIR")
    return Path(env) if env else ROOT.parent / "shared" / "data" / "labelled-servers"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=default_data())
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "bench" / "labelled")
    ap.add_argument("--servers", default=None)
    ap.add_argument("--result", type=Path, default=RESULT)
    a = ap.parse_args(argv)
    if not a.data.is_dir():
        print(f"labelled_servers: no data at {a.data} (set REVEAL_LABELLED_DIR); skipped", file=sys.stderr)
        return 3
    from reveal_lab.cli import main as cli

    os.chdir(ROOT)
    t0 = time.perf_counter()
    # a path relative to the repository, so the committed result names no machine's layout
    data = os.path.relpath(a.data.resolve(), ROOT)
    args = ["bench", "labelled", "--data", data, "--out", str(a.out), "--json", str(a.result)]
    if a.servers:
        args += ["--servers", a.servers]
    rc = cli(args)
    print(f"labelled_servers: {time.perf_counter() - t0:.0f} s, wrote {a.result}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
