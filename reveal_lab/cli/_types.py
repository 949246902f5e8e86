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
import dataclasses

from reveal_lab.config import DetectConfig, Preset, parse_duration

__all__ = [
    "CALIBRATIONS",
    "SENTINEL_DEFAULT",
    "add_rule_arguments",
    "add_sentinel_argument",
    "add_trim_argument",
    "TRIM_CHOICES",
    "with_rule_arguments",
    "SENTINEL_HELP",
    "Z_CLIP_DEFAULT",
    "Z_CLIP_HELP",
    "duration",
    "positive_int",
    "sentinel_samples",
    "share",
    "z_clip",
]

#: ``--calibration`` choices of ``detect`` and ``evaluate``: the pipeline's
#: ``CALIBRATION_RULES``, written here so that building the parser imports no pipeline
#: (a test checks the two agree)
CALIBRATIONS = ("trimmed", "pooled", "median")
#: ``--z-clip`` of ``detect`` and ``evaluate``: the detect config's default and one help text
Z_CLIP_DEFAULT = DetectConfig.calibrated_z_clip
Z_CLIP_HELP = (
    "with calibrated thresholds, a standardized feature counts at most this many units in the "
    f"Z-score mean and the Mahalanobis projection (default {Z_CLIP_DEFAULT:g}; a counter silent in the "
    "baseline is not clipped); none: unbounded, as the paper"
)

#: ``--sentinel-samples`` of ``detect`` and ``evaluate``: the detect config's default and one help text
SENTINEL_DEFAULT = DetectConfig.sentinel_samples
SENTINEL_HELP = (
    "with baseline runs, a window is anomalous also when a counter that is 0 in every baseline sample "
    f"is non-zero in N or more of its samples (default {SENTINEL_DEFAULT}); a run alone: when a counter 0 "
    "in at least half of its samples moves in 90 %% of a window's samples, 4+ windows in a row; none: "
    "the detectors' agreement alone, as the paper (the counters are still listed in sentinels.csv)"
)


def add_rule_arguments(p: argparse.ArgumentParser) -> None:
    """``--z-clip`` and ``--sentinel-samples``: the detection rules ``detect`` and ``evaluate``
    share (read back with :func:`with_rule_arguments`)."""
    p.add_argument("--z-clip", type=z_clip, default=Z_CLIP_DEFAULT, metavar="UNITS|none", help=Z_CLIP_HELP)
    add_sentinel_argument(p)


#: ``--trim`` choices: the pipeline's ``TRIM_RULES``, written here so that building the parser
#: imports no pipeline
TRIM_CHOICES = ("auto", "span", "active", "none")
TRIM_HELP = (
    "which part of each recording is scored: auto (default): a lab run's recorded workload span, a "
    "public-dataset run or a host recording (collector folder) whole; span: the recorded workload "
    "span (whole when there is none); active: the span where utilisation is high, less 3 s at each "
    "end (on a host with intermittent jobs it keeps the busiest and leaves the others out); none: "
    "the whole recording. The report's first lines say what was left out and why"
)


def add_trim_argument(p: argparse.ArgumentParser) -> None:
    """``--trim auto|span|active|none`` (``detect``, ``evaluate``, ``scan``, ``compare``)."""
    p.add_argument("--trim", choices=TRIM_CHOICES, default="auto", help=TRIM_HELP)


def add_sentinel_argument(p: argparse.ArgumentParser) -> None:
    """``--sentinel-samples N|none`` (``detect``, ``evaluate``, ``watch``)."""
    p.add_argument(
        "--sentinel-samples",
        type=sentinel_samples,
        default=SENTINEL_DEFAULT,
        metavar="N|none",
        help=SENTINEL_HELP,
    )


def with_rule_arguments(preset: Preset, args: argparse.Namespace) -> Preset:
    """``preset`` with the detect settings of :func:`add_rule_arguments`' flags (a command
    with only :func:`add_sentinel_argument`, such as ``watch``, keeps the preset's clip)."""
    detect = dataclasses.replace(
        preset.detect,
        calibrated_z_clip=getattr(args, "z_clip", preset.detect.calibrated_z_clip),
        sentinel_samples=args.sentinel_samples,
    )
    return dataclasses.replace(preset, detect=detect)


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
_COUNT_TEXT = f"a whole number from 1 to {MAX_COUNT:,}"


def positive_int(text: str) -> int:
    """A whole number from 1 to :data:`MAX_COUNT`."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {_COUNT_TEXT}, got {text!r}") from None
    if not 1 <= v <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"expected {_COUNT_TEXT}, got {text[:40]!r}")
    return v


positive_int.range_text = f"1–{MAX_COUNT:,}"  # type: ignore[attr-defined]


def share(text: str) -> float:
    """A share strictly between 0 and 1 (a rate or a fraction)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text!r}") from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1 (exclusive), got {text!r}")
    return v


def sentinel_samples(text: str) -> int | None:
    """A whole number of samples >= 1, or ``none`` (the sentinel rule off)."""
    if text.strip().lower() in ("none", "off"):
        return None
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1 or 'none', got {text!r}") from None


def z_clip(text: str) -> float | None:
    """A clip in standard units > 0, or ``none`` (unbounded)."""
    if text.strip().lower() in ("none", "off"):
        return None
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0 or 'none', got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0 or 'none', got {text!r}")
    return v


# the ranges --help shows (reveal_lab.cli._ranges.document_ranges)
share.range_text = "(0, 1)"  # type: ignore[attr-defined]
sentinel_samples.range_text = f"1–{MAX_COUNT:,}, or none"  # type: ignore[attr-defined]
z_clip.range_text = "> 0, or none"  # type: ignore[attr-defined]
