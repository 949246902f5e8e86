"""Numeric flag values with a range, checked when the command line is parsed.

Every numeric flag of the CLI takes one of these types (or one of :mod:`reveal_lab.cli._types`'
bounded ones): a value outside its range is an argparse error naming the flag, what was
expected and what was given, before any work; :func:`document_ranges` writes each range
into the flag's ``--help``.

>>> int_in(1, 1000)("20"), float_in(0, 1, low_open=True)("0.5"), duration_in(0.001, 3600)("500ms")
(20, 0.5, 0.5)
>>> int_in(1, 1000)("1e9")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: expected a whole number from 1 to 1,000, got '1e9'
>>> duration_in(1, 3600)("0s")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: expected a duration from 1s to 1h, got '0s'
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from reveal_lab.config import parse_duration

__all__ = ["int_in", "float_in", "duration_in", "as_text", "slots_range", "document_ranges", "fmt_duration"]

#: longest duration any flag takes (a year): beyond it, an arithmetic accident, not a plan
MAX_DURATION_S = 366 * 86400.0


def fmt_duration(s: float) -> str:
    """``3600`` → ``'1h'``, ``0.001`` → ``'1ms'``, ``90`` → ``'90s'``.

    >>> fmt_duration(3600), fmt_duration(0.001), fmt_duration(90), fmt_duration(MAX_DURATION_S)
    ('1h', '1ms', '90s', '8784h')
    """
    for unit, scale in (("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3)):
        if s >= scale and abs(s / scale - round(s / scale)) < 1e-9:
            return f"{round(s / scale)}{unit}"
    return f"{s:g}s"


def _typed(parse: Callable, name: str, range_text: str) -> Callable:
    parse.__name__ = name  # argparse's "invalid <name> value" when a type raises otherwise
    parse.range_text = range_text  # type: ignore[attr-defined]
    return parse


def int_in(lo: int, hi: int, *, what: str = "a whole number") -> Callable[[str], int]:
    """A whole number ``lo <= n <= hi`` (``"1e3"`` is not one: it reads as a float)."""
    text = f"{what} from {lo:,} to {hi:,}"

    def parse(s: str) -> int:
        try:
            v = int(s.strip())  # Python's own digits: "1_000" is one, "1__0" is not
        except (ValueError, AttributeError):
            raise argparse.ArgumentTypeError(f"expected {text}, got {s!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"expected {text}, got {s[:40]!r}")
        return v

    return _typed(parse, "int", f"{lo:,}–{hi:,}")


def float_in(
    lo: float, hi: float, *, low_open: bool = False, high_open: bool = False, what: str = "a number"
) -> Callable[[str], float]:
    """A finite number in ``[lo, hi]`` (an end excluded with ``low_open`` / ``high_open``)."""
    a, b = ("(" if low_open else "["), (")" if high_open else "]")
    text = f"{what} in {a}{lo:g}, {hi:g}{b}"

    def parse(s: str) -> float:
        try:
            v = float(s)
        except (ValueError, TypeError):
            raise argparse.ArgumentTypeError(f"expected {text}, got {s!r}") from None
        ok = math.isfinite(v) and (lo < v if low_open else lo <= v) and (v < hi if high_open else v <= hi)
        if not ok:
            raise argparse.ArgumentTypeError(f"expected {text}, got {s[:40]!r}")
        return v

    return _typed(parse, "float", f"{a}{lo:g}, {hi:g}{b}")


def duration_in(lo_s: float, hi_s: float = MAX_DURATION_S) -> Callable[[str], float]:
    """A duration in seconds, ``lo_s <= d <= hi_s``, from ``"500ms"``, ``"3s"``, ``"2m"``,
    ``"1h"`` or a number of seconds (``-5m`` is a negative duration, refused as such)."""
    text = f"a duration from {fmt_duration(lo_s)} to {fmt_duration(hi_s)}"

    def parse(s: str) -> float:
        try:
            v = parse_duration(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {text} (e.g. 500ms, 3s, 2m, 1h), got {s!r}") from None
        if not (math.isfinite(v) and lo_s <= v <= hi_s):
            raise argparse.ArgumentTypeError(f"expected {text}, got {s[:40]!r}")
        return v

    return _typed(parse, "duration", f"{fmt_duration(lo_s)}–{fmt_duration(hi_s)}")


def as_text(parse: Callable[[str], object]) -> Callable[[str], str]:
    """``parse``'s check, the text kept as given (for a value passed on as a string)."""

    def check(s: str) -> str:
        parse(s)
        return s

    return _typed(check, parse.__name__, parse.range_text)  # type: ignore[attr-defined]


def slots_range(hi: int) -> Callable[[str], tuple[int, int]]:
    """``A-B`` with ``0 <= A <= B <= hi`` (a single ``A`` is ``A-A``).

    >>> slots_range(1000)("3-9"), slots_range(1000)("4")
    ((3, 9), (4, 4))
    >>> slots_range(1000)("9-3")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected FIRST-LAST with 0 <= FIRST <= LAST <= 1,000, got '9-3' ...
    """
    text = f"FIRST-LAST with 0 <= FIRST <= LAST <= {hi:,}"

    def parse(s: str) -> tuple[int, int]:
        a, sep, b = s.strip().partition("-")
        try:
            lo_v, hi_v = int(a), int(b if sep else a)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {text}, got {s!r}") from None
        if lo_v > hi_v:
            raise argparse.ArgumentTypeError(f"expected {text}, got {s!r} (FIRST after LAST)")
        if lo_v < 0 or hi_v > hi:
            raise argparse.ArgumentTypeError(f"expected {text}, got {s[:40]!r}")
        return lo_v, hi_v

    return _typed(parse, "slots", f"0–{hi:,}")


def _parsers(parser: argparse.ArgumentParser):  # noqa: ANN202 - an iterator of parsers
    yield parser
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub in a.choices.values():
                yield from _parsers(sub)


def document_ranges(parser: argparse.ArgumentParser) -> None:
    """Append ``[range: ...]`` to the help of every flag whose type carries a range."""
    for p in _parsers(parser):
        for a in p._actions:
            rt = getattr(a.type, "range_text", None)
            if rt and a.help is not argparse.SUPPRESS and "range:" not in (a.help or ""):
                a.help = f"{a.help or ''} [range: {rt}]".strip()
