"""The ``reveal-lab`` command line.

Each sub-command lives in its own module ``reveal_lab.cli._<name>`` exposing
``register(subparsers)``; heavy imports happen inside the command's handler so
``reveal-lab --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import re
import signal
import sys
from collections.abc import Sequence

from reveal_lab.cli._environment import address_space_message, prepare_process, resource_message
from reveal_lab.cli._ranges import document_ranges

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
    "synth",
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
    document_ranges(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    prepare_process()
    try:  # Ctrl-C while the commands' modules load: one line, as during a command
        parser = build_parser()
    except KeyboardInterrupt:
        print("reveal-lab: interrupted", file=sys.stderr)
        return 130
    args = parser.parse_args(_join_dash_values(sys.argv[1:] if argv is None else list(argv)))
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2) if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    if args.verbose < 2:  # fontTools logs every font subset matplotlib embeds in a PDF at INFO
        logging.getLogger("fontTools").setLevel(logging.WARNING)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    bad_path = _path_with_line_break(args) or address_space_message()
    if bad_path:
        print(f"reveal-lab {args.command}: error: {bad_path}", file=sys.stderr)
        return 2
    old_term = _terminate_as_exit()
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"reveal-lab {args.command}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError, RuntimeError, MemoryError) as exc:
        # Our errors carry file/line/column, OSError its file; show them plainly, not as a
        # traceback (-vv shows the traceback). A full disk or exhausted memory names what
        # was being written or what to make smaller.
        if args.verbose >= 2:
            raise
        print(f"reveal-lab {args.command}: error: {resource_message(exc, args) or exc}", file=sys.stderr)
        return 1
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)


#: options that name a file or folder to write
PATH_OPTIONS = ("out", "hf", "dest", "raw", "jsonl", "json")


def _path_with_line_break(args: argparse.Namespace) -> str | None:
    """A message when an output path holds a line break or NUL (every message naming it would
    split, and most file systems refuse NUL), else ``None``.

    >>> print(_path_with_line_break(argparse.Namespace(out="rep\\nort")))
    --out 'rep\\nort' holds a line break or NUL: give the path on one line
    """
    for name in PATH_OPTIONS:
        v = getattr(args, name, None)
        if isinstance(v, str) and any(c in v for c in "\n\r\x00"):
            return f"--{name} {v!r} holds a line break or NUL: give the path on one line"
    return None


def _terminate_as_exit():  # noqa: ANN202 - the previous handler, or None
    """``SIGTERM`` raises ``SystemExit(143)`` while a command runs, so that its ``finally``
    blocks and exit handlers run (a half-written output folder is removed) instead of the
    process vanishing; a command that installs its own handler (``collect``) replaces it.
    Returns the previous handler (``None`` off the main thread, where none is installed)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def on_term(signum, frame):  # noqa: ANN001, ARG001
        raise SystemExit(128 + signal.SIGTERM)

    return signal.signal(signal.SIGTERM, on_term)


#: options whose value may start with '-' (``--probes -perf`` removes a probe)
DASH_VALUE_OPTIONS = ("--probes",)


def _join_dash_values(argv: list[str]) -> list[str]:
    """``--probes -perf`` → ``--probes=-perf``: argparse would take ``-perf`` for a flag; and
    ``--restart -5m`` → ``--restart=-5m``, so that a negative value reaches the flag's type
    and its message ("expected a duration from 0s ...") instead of "expected one argument".

    >>> _join_dash_values(["collect", "--probes", "-perf,-gpu", "--out", "x"])
    ['collect', '--probes=-perf,-gpu', '--out', 'x']
    >>> _join_dash_values(["reliability", "ettr", "--restart", "-5m", "--seed", "-1"])
    ['reliability', 'ettr', '--restart=-5m', '--seed=-1']
    """
    out: list[str] = []
    i = 0
    while i < len(argv):
        a, nxt = argv[i], argv[i + 1] if i + 1 < len(argv) else None
        negative = nxt is not None and re.match(r"-\.?\d", nxt) is not None
        removal = a in DASH_VALUE_OPTIONS and nxt is not None and nxt.startswith("-") and nxt != "-"
        if a.startswith("--") and "=" not in a and (negative or (removal and not nxt.startswith("--"))):
            out.append(f"{a}={nxt}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
