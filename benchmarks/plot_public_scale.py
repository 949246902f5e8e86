#!/usr/bin/env python
"""The figure of ``benchmarks/public_scale.py``'s result: wall time and peak memory of the
process tree against the runs of the proxy, per engine, with the limits drawn in; a reproduction
that stopped is marked with a red x (its time and memory up to the failure).

    .venv/bin/python benchmarks/plot_public_scale.py [RESULT.json] [--out docs/img/public_scale.png]

Reads the result file only (measures nothing).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from _harness import RESULTS, ROOT


def plot(result: dict, out: Path) -> Path:
    """Two panels over the runs: wall seconds and peak tree RSS (GB), one line per engine.
    The time panel shows K x (time at the smallest scale) as the line time may not cross."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = [r for r in result["measured"] if r["runs"]]
    if not measured:
        raise SystemExit("no reproduction with runs in the result: nothing to plot")
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(9, 3.6))
    for engine in sorted({r["engine"] for r in measured}):
        rows = sorted((r for r in measured if r["engine"] == engine), key=lambda r: r["runs"])
        label = "in process" if engine == "inprocess" else f"{engine} Dask workers"
        runs = [r["runs"] for r in rows]
        ax_t.plot(runs, [r["wall_s"] / 60 for r in rows], "o-", label=label)
        ax_m.plot(runs, [r["peak_tree_rss_mb"] / 1000 for r in rows], "o-", label=label)
        for r in rows:  # a reproduction that stopped: its time and memory up to the failure
            if r["exit"] != 0:
                ax_t.plot(r["runs"], r["wall_s"] / 60, "rx", ms=10, label=f"exit {r['exit']} (stopped)")
                ax_m.plot(r["runs"], r["peak_tree_rss_mb"] / 1000, "rx", ms=10)
        lo = rows[0]
        ax_t.plot(
            runs, [lo["wall_s"] / 60 * r["scale"] / lo["scale"] * 1.1 for r in rows], ":", color="grey",
            label="1.1 x proportional" if engine == "inprocess" else None,
        )
    ax_m.axhline(3.0, color="grey", ls=":", label="3 GB")
    ax_t.set(xlabel="runs in the proxy", ylabel="wall minutes", title="reproduce --preset full --data")
    ax_m.set(xlabel="runs in the proxy", ylabel="peak RSS of the process tree (GB)", ylim=(0, None))
    for ax in (ax_t, ax_m):
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(f"{result.get('date', '')[:10]}, commit {result.get('commit', '?')}", fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    ap.add_argument("result", nargs="?", type=Path, default=RESULTS / "public_scale.json")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "public_scale.png")
    args = ap.parse_args(argv)
    try:
        result = json.loads(args.result.read_text())
    except (OSError, ValueError) as exc:
        print(f"plot_public_scale: {args.result}: {exc}", file=sys.stderr)
        return 2
    print(plot(result, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
