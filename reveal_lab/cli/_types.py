"""argparse value types shared by the commands: each names what it expected.

>>> positive_int("3"), share("0.01"), duration("10min"), z_clip("10"), z_clip("none")
(3, 0.01, 600.0, 10.0, None)
>>> sentinel_samples("5"), sentinel_samples("none")
(5, None)
>>> share("1")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: expected a share between 0 and 1 (exclusive), got '1'
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from reveal_lab.cli._ranges import int_in
from reveal_lab.config import parse_duration

__all__ = [
    "duration",
    "positive_int",
    "sentinel_samples",
    "share",
    "z_clip",
    "or_none",
]

def duration(text: str) -> float:
    """A length of time > 0 in seconds, from ``"10min"``, ``"2m"``, ``"3s"``, ``"500ms"`` or seconds."""
    try:
        v = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not 0 < v <= 366 * 86400:
        raise argparse.ArgumentTypeError(f"expected a duration > 0 and at most a year (8784h), got {text!r}")
    return v


#: the largest count a whole-number flag takes (windows in a row, samples, repeats)
MAX_COUNT = 1_000_000


#: a whole number from 1 to :data:`MAX_COUNT` (windows in a row, samples, repeats)
positive_int = int_in(1, MAX_COUNT)


def share(text: str) -> float:
    """A share strictly between 0 and 1 (a rate or a fraction)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text!r}") from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1 (exclusive), got {text!r}")
    return v


def or_none(
    parse: Callable[[str], Any], what: str, *, value: Any = None, words: tuple[str, ...] = ("none", "off")  # noqa: ANN401
) -> Callable[[str], Any]:
    """The one "number or none" parser: ``parse``, or ``value`` for any of ``words``; an
    error names ``what`` was expected and the words.

    >>> or_none(positive_int, "a whole number >= 1")("Off") is None
    True
    >>> or_none(float, "a number")("soon")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a number or 'none', got 'soon'
    """

    def parse_or_none(text: str) -> Any:  # noqa: ANN401
        if text.strip().lower() in words:
            return value
        try:
            return parse(text)
        except argparse.ArgumentTypeError as exc:  # the value's own message, and the word
            raise argparse.ArgumentTypeError(f"{exc} (or {words[0]!r})") from None
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} or {words[0]!r}, got {text!r}") from None

    parse_or_none.__name__ = getattr(parse, "__name__", "value")
    return parse_or_none


def _positive_number(text: str) -> float:
    v = float(text)
    if not 0 < v < float("inf"):
        raise ValueError(text)
    return v


#: ``--sentinel-samples``: a whole number of samples >= 1, or ``none`` (the sentinel rule off)
sentinel_samples = or_none(positive_int, "a whole number >= 1")
#: ``--z-clip``: a clip in standard units > 0, or ``none`` (unbounded)
z_clip = or_none(_positive_number, "a number > 0")


# the ranges --help shows (reveal_lab.cli._ranges.document_ranges)
share.range_text = "(0, 1)"  # type: ignore[attr-defined]
sentinel_samples.range_text = f"1–{MAX_COUNT:,}, or none"  # type: ignore[attr-defined]
z_clip.range_text = "> 0, or none"  # type: ignore[attr-defined]
