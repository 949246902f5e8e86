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
    args = parser.parse_args(argv)
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
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        # Our errors carry file/line/column; show them plainly, not as a traceback.
        if args.verbose >= 2:
            raise
        print(f"reveal-lab {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
