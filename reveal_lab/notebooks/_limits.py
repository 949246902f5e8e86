"""The ranges of notebook parameters given on the command line (``reproduce --param``,
``--workers``, ``--platform``): the same ranges as the flags that set the same things
(``detect --window``/``--stride``, ``compare --bootstrap``, ...), checked before any
notebook runs, each error naming how the value was given.

>>> check_parameters({"max_runs": -2}, {})
Traceback (most recent call last):
...
ValueError: --param max_runs=-2: expected a whole number from 0 (0: every run) to 1,000,000
>>> check_parameters({"granularities": "3/1,3/10"}, {})
Traceback (most recent call last):
...
ValueError: --param granularities='3/1,3/10': the stride 10 s of '3/10' is longer than its window 3 s: the samples between windows would never be scored; give WINDOW/STRIDE with STRIDE <= WINDOW
>>> check_parameters({"workers": 0}, {"workers": "--workers"})
Traceback (most recent call last):
...
ValueError: --workers 0: expected a whole number from 1 to 512
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MAX_WORKERS", "PLATFORMS", "check_parameters", "check_window", "flag_name"]

#: Dask worker processes ``--workers`` / ``workers`` may start
MAX_WORKERS = 512
#: the notebooks' ``platform`` values
PLATFORMS = ("each", "gpu", "cpu", "all")
#: the longest window or stride (seconds), as ``detect --window``
MAX_WINDOW_S = 3600.0
MIN_WINDOW_S = 0.001


def _whole(lo: int, hi: int, zero: str | None = None) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:  # noqa: ANN401 - a coerced parameter value
        if isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi:
            return None
        low = f"{lo} (0: {zero})" if zero else f"{lo}"
        return f"expected a whole number from {low} to {hi:,}"

    return check


def _number(lo: float, hi: float, *, low_open: bool = False, high_open: bool = False, zero: str | None = None):  # noqa: ANN202
    a, b = ("(" if low_open else "["), (")" if high_open else "]")

    def check(v: Any) -> str | None:  # noqa: ANN401
        ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        ok = ok and (lo < v if low_open else lo <= v) and (v < hi if high_open else v <= hi)
        return None if ok else f"expected a number in {a}{lo:g}, {hi:g}{b}" + (f" (0: {zero})" if zero else "")

    return check


def _seconds(v: Any) -> str | None:  # noqa: ANN401
    ok = isinstance(v, int | float) and not isinstance(v, bool) and MIN_WINDOW_S <= v <= MAX_WINDOW_S
    return None if ok else f"expected seconds from {MIN_WINDOW_S:g} to {MAX_WINDOW_S:g}"


def _granularities(v: Any) -> str | None:  # noqa: ANN401
    """``"W/S,W/S,..."`` in seconds, each stride no longer than its window."""
    parts = [p.strip() for p in str(v).split(",") if p.strip()]
    if not parts:
        return "expected WINDOW/STRIDE pairs in seconds, e.g. '3/1,1.5/0.5'"
    for p in parts:
        w, sep, s = p.partition("/")
        try:
            win, stride = float(w), float(s)
        except ValueError:
            return f"{p!r} is not WINDOW/STRIDE in seconds (e.g. 3/1)"
        if not sep or _seconds(win) or _seconds(stride):
            return f"{p!r}: window and stride are seconds from {MIN_WINDOW_S:g} to {MAX_WINDOW_S:g}"
        if stride > win:
            return (
                f"the stride {stride:g} s of {p!r} is longer than its window {win:g} s: the samples between "
                "windows would never be scored; give WINDOW/STRIDE with STRIDE <= WINDOW"
            )
    return None


def _choice(options: tuple[str, ...]) -> Callable[[Any], str | None]:
    return lambda v: None if v in options else f"expected one of {', '.join(options)}"


#: the check of each parameter a value is given for; a name not here takes its declared type only
CHECKS: dict[str, Callable[[Any], str | None]] = {
    "max_runs": _whole(0, 1_000_000, "every run"),
    "max_runs_per_workload": _whole(0, 1_000_000, "every run"),
    "max_runs_per_side": _whole(0, 1_000_000, "every run"),
    "lemon_max_runs": _whole(0, 1_000_000, "every run"),
    "max_metrics": _whole(0, 1_000_000, "every metric"),
    "max_seconds": _number(0, 366 * 86400.0, zero="the whole run"),
    "max_windows": _whole(1, 10_000_000),
    "max_windows_per_run": _whole(1, 10_000_000),
    "max_samples_per_run": _whole(1, 100_000_000),
    "max_other_workloads": _whole(1, 1_000_000),
    "window_s": _seconds,
    "stride_s": _seconds,
    "granularities": _granularities,
    "workers": _whole(0, MAX_WORKERS, "in the notebook's own process"),
    "platform": _choice(PLATFORMS),
    "false_alarm_rate": _number(0, 1, low_open=True, high_open=True),
    "alpha": _number(0, 1, low_open=True, high_open=True),
    "threshold": _number(0, 1, low_open=True),
    "min_agreement": _whole(0, 3),
    "n_boot": _whole(1, 20_000),
    "repeats": _whole(1, 1000),
    "runtime_repeats": _whole(1, 1000),
    "seed": _whole(0, 2**32 - 1),
    "top_evidence": _whole(1, 10_000),
    "timeline_runs": _whole(1, 10_000),
}
#: what a flag of ``reproduce`` accepts where the flag's range is narrower than the parameter's
FLAG_CHECKS: dict[str, Callable[[Any], str | None]] = {"workers": _whole(1, MAX_WORKERS)}


def flag_name(name: str, value: Any, flags: Mapping[str, str]) -> str:  # noqa: ANN401
    """How a value was given: ``--workers 4`` for a flag, ``--param max_runs=4`` otherwise."""
    return f"{flags[name]} {value}" if name in flags else f"--param {name}={value!r}"


def check_parameters(values: Mapping[str, Any], flags: Mapping[str, str]) -> None:
    """Raise ``ValueError`` for the first value outside its parameter's range (names in
    ``flags`` were given by that flag, and are checked with the flag's range), and for a
    ``stride_s`` longer than the ``window_s`` given or declared beside it."""
    for name, v in values.items():
        check = FLAG_CHECKS.get(name, CHECKS.get(name)) if name in flags else CHECKS.get(name)
        problem = check(v) if check is not None else None
        if problem:
            raise ValueError(f"{flag_name(name, v, flags)}: {problem}")


def check_window(params: Mapping[str, Any], where: str) -> None:
    """A notebook's resolved ``window_s``/``stride_s`` (given or declared): the stride no
    longer than the window, as ``detect --stride``."""
    w, s = params.get("window_s"), params.get("stride_s")
    if isinstance(w, int | float) and isinstance(s, int | float) and s > w:
        raise ValueError(
            f"{where}: stride_s {s:g} s is longer than window_s {w:g} s (--param): the samples between "
            "windows would never be scored; give a stride no longer than the window"
        )
