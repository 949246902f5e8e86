"""The ``reveal-lab`` command line.

Each sub-command lives in its own module ``reveal_lab.cli._<name>`` exposing
``register(subparsers)``; heavy imports happen inside the command's handler so
``reveal-lab --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

__all__ = ["main", "build_parser"]

#: sub-command modules, in the order ``--help`` lists them
COMMAND_MODULES: tuple[str, ...] = (
    "collect",
    "dataset",
    "detect",
    "evaluate",
    "compare",
    "bench",
    "reproduce",
    "lab",
    "record",
    "watch",
    "scan",
    "reliability",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reveal-lab",
        description="Find why ML training and inference run slow, from hardware telemetry alone.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv: debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        # every listed command must exist: a missing module is an ImportError, not a shorter CLI
        importlib.import_module(f"reveal_lab.cli._{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_join_dash_values(sys.argv[1:] if argv is None else list(argv)))
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2) if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (ValueError, OSError, RuntimeError) as exc:
        # Our errors carry file/line/column, OSError its file; show them plainly, not as a
        # traceback (-vv shows the traceback).
        if args.verbose >= 2:
            raise
        print(f"reveal-lab {args.command}: error: {exc}", file=sys.stderr)
        return 1


#: options whose value may start with '-' (``--probes -perf`` removes a probe)
DASH_VALUE_OPTIONS = ("--probes",)


def _join_dash_values(argv: list[str]) -> list[str]:
    """``--probes -perf`` → ``--probes=-perf``: argparse would take ``-perf`` for a flag.

    >>> _join_dash_values(["collect", "--probes", "-perf,-gpu", "--out", "x"])
    ['collect', '--probes=-perf,-gpu', '--out', 'x']
    """
    out: list[str] = []
    it = iter(argv)
    for a in it:
        if a in DASH_VALUE_OPTIONS:
            nxt = next(it, None)
            if nxt is not None and nxt.startswith("-") and nxt != "--" and not nxt.startswith("--"):
                out.append(f"{a}={nxt}")
                continue
            out.append(a)
            if nxt is not None:
                out.append(nxt)
            continue
        out.append(a)
    return out


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
