"""The benchmarks' one harness: their common arguments, one timer, the machine and one
result schema, so that ``summarize.py`` reads every timing the same way.

A timing benchmark builds its parser with :func:`parser`, times with :func:`time_repeats`,
builds each row with :func:`row` (its sides with :func:`side`) and writes with
:meth:`Session.write`:

.. code-block:: json

    {"schema": 2, "benchmark": "dtw_vs_tslearn", "kind": "timing",
     "command": "benchmarks/dtw_vs_tslearn.py --repeats 5", "date": "2026-11-27T13:30:00+00:00",
     "commit": "03e5b57", "machine": {"cpu_model": "...", "cores": 2, ...},
     "load_before": [0.4, 0.5, 0.6], "load_after": [0.5, 0.5, 0.6],
     "results": [{"case": "...", "unit": "s",
                  "ours": {"name": "...", "median": 0.2, "min": 0.19, "max": 0.21, "std": 0.01,
                           "n": 5, "runs": [...]},
                  "alternative": {"name": "...", "median": 2.0, ...}, "ratio": 10.0,
                  "higher_is_better": false, "peak_mb": null, "note": "..."}],
     ...}

After ``results`` come the benchmark's own keys, what else it measured in its own terms
(``details``; none may take a name above), and ``elapsed_s``. ``ratio`` is how many times
better ours is (``alternative / ours`` for times, ``ours / alternative`` when
``higher_is_better``), ``null`` without an alternative.

>>> s = stats([3.0, 1.0, 2.0])
>>> (s["median"], s["min"], s["max"], s["n"])
(2.0, 1.0, 3.0, 3)
>>> r = row("one case", "s", side("ours", [1.0]), side("theirs", [4.0]))
>>> r["ratio"], r["higher_is_better"]
(4.0, False)
>>> validate_timing({"schema": 2, "kind": "timing", "results": [r]})[0]["case"]
'one case'
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reveal_lab.cli._types import positive_int
from reveal_lab.machine import machine_info

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"

#: the version of the result schema this harness writes
SCHEMA = 2
#: the keys every timing result has, in order
TOP_KEYS = (
    "schema",
    "benchmark",
    "kind",
    "command",
    "date",
    "commit",
    "machine",
    "load_before",
    "load_after",
    "results",
)


def parser(
    name: str,
    doc: str | None,
    *,
    repeats: int | None = None,
    quick: str | None = None,
) -> argparse.ArgumentParser:
    """The parser of benchmark ``name`` with the common arguments: ``--out`` (default
    ``benchmarks/results/NAME.json``), ``--repeats`` (when ``repeats`` is its default) and
    ``--quick`` (when ``quick`` says what the quick run is: tiny, seconds, numbers not
    quotable). The benchmark adds its own arguments to it."""
    ap = argparse.ArgumentParser(
        prog=f"benchmarks/{name}.py",
        description=(doc or name).strip().split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--out", type=Path, default=RESULTS / f"{name}.json", help="result JSON (default: %(default)s)"
    )
    if repeats is not None:
        ap.add_argument(
            "--repeats",
            type=positive_int,
            default=repeats,
            help="timed repeats; medians (default: %(default)s)",
        )
    if quick is not None:
        ap.add_argument("--quick", action="store_true", help=quick)
    return ap


def number(x: object) -> float | None:
    """``x`` as a finite float, else None (booleans are not numbers here)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(float(x)) else None


def stats(values: Sequence[float]) -> dict[str, Any]:
    """Median, min, max, sample standard deviation (0 for one value), count and the values."""
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("no values to summarise")
    return {
        "median": statistics.median(vals),
        "min": min(vals),
        "max": max(vals),
        "std": statistics.stdev(vals) if len(vals) > 1 else 0.0,
        "n": len(vals),
        "runs": vals,
    }


def time_repeats(fn: Callable[[], Any], repeats: int, *, per: float = 1.0) -> tuple[dict, dict, Any]:
    """Call ``fn`` ``repeats`` times; the :func:`stats` of its wall-clock seconds
    (:func:`time.perf_counter`) and of its process CPU seconds, each divided by ``per``
    (e.g. the items one call handles), and the last call's return value."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    wall, cpu, out = [], [], None
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        wall.append((time.perf_counter() - t0) / per)
        cpu.append((time.process_time() - c0) / per)
    return stats(wall), stats(cpu), out


def side(name: str, measured: Sequence[float] | dict | float, **extra: Any) -> dict[str, Any]:
    """One side of a row: ``{"name", "median", ...}`` from a list of values (their
    :func:`stats`), a :func:`stats` dict or a single figure (its median)."""
    if isinstance(measured, dict):
        body = dict(measured)
    elif isinstance(measured, (int, float)) and not isinstance(measured, bool):
        body = {"median": float(measured)}
    else:
        body = stats(measured)
    return {"name": name, **body, **extra}


def row(
    case: str,
    unit: str,
    ours: dict,
    alternative: dict | None = None,
    *,
    higher_is_better: bool = False,
    peak_mb: float | None = None,
    note: str | None = None,
    ratio: float | None = None,
) -> dict[str, Any]:
    """One result row. ``ratio`` (how many times better ours is) is computed from the two
    medians unless given; ``None`` without an alternative."""
    if ratio is None and alternative is not None:
        o, a = number(ours.get("median")), number(alternative.get("median"))
        if o and a:
            ratio = o / a if higher_is_better else a / o
    return {
        "case": case,
        "unit": unit,
        "ours": ours,
        "alternative": alternative,
        "ratio": ratio,
        "higher_is_better": higher_is_better,
        "peak_mb": peak_mb,
        "note": note or "",
    }


def validate_timing(data: object) -> list[dict]:
    """The rows of a timing result; a ValueError naming the key and what was expected
    when ``data`` is not one."""
    if not isinstance(data, dict):
        raise ValueError("top level is not an object")
    if data.get("schema") != SCHEMA or data.get("kind") != "timing":
        raise ValueError(
            f"expected 'schema': {SCHEMA} and 'kind': 'timing', "
            f"got {data.get('schema')!r} / {data.get('kind')!r}"
        )
    rows = data.get("results")
    if not isinstance(rows, list) or not rows:
        raise ValueError("'results' is not a non-empty list of rows")
    for i, r in enumerate(rows):
        where = f"results[{i}]"
        if not isinstance(r, dict):
            raise ValueError(f"{where} is not an object")
        for key in ("case", "unit"):
            if not isinstance(r.get(key), str):
                raise ValueError(f"{where}.{key} is not a string")
        for key in ("ours", "alternative"):
            s = r.get(key)
            if s is None and key == "alternative":
                continue
            if (
                not isinstance(s, dict)
                or not isinstance(s.get("name"), str)
                or number(s.get("median")) is None
            ):
                raise ValueError(f"{where}.{key} is not {{'name': str, 'median': number, ...}}")
        if not isinstance(r.get("higher_is_better"), bool):
            raise ValueError(f"{where}.higher_is_better is not true or false")
        if r.get("ratio") is not None and number(r["ratio"]) is None:
            raise ValueError(f"{where}.ratio is not a number or null")
    return rows


def _clean(x: Any) -> Any:
    """``x`` with NaN and infinities as None (JSON has neither)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def write_json(path: Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON (NaN as null) through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(_clean(obj), indent=1, default=str) + "\n")
    os.replace(tmp, path)
    return path


def git_commit() -> str | None:
    """The short commit of the working tree, with ``-dirty`` when tracked files differ from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def load_average() -> list[float]:
    """The 1, 5 and 15-minute load average, rounded to 0.01."""
    return [round(x, 2) for x in os.getloadavg()]


class Session:
    """One run of one benchmark: the command, date, commit, machine and load average when it
    starts; :meth:`write` adds the load average at the end and the rows.

    ``versions`` names libraries whose versions go into ``machine`` (e.g. the alternative's)."""

    def __init__(self, name: str, argv: Sequence[str] | None = None, versions: Sequence[str] = ()) -> None:
        self.name = name
        args = list(sys.argv[1:] if argv is None else argv)
        self.header: dict[str, Any] = {
            "schema": SCHEMA,
            "benchmark": name,
            "kind": "timing",
            "command": shlex.join([f"benchmarks/{name}.py", *args]),
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "commit": git_commit(),
            "machine": {k: v for k, v in machine_info().items() if k != "loadavg"} | _versions(versions),
            "load_before": load_average(),
        }
        self.started = time.perf_counter()

    def result(self, rows: list[dict], details: dict | None = None) -> dict[str, Any]:
        """The result document: the header, the load average now, ``rows``, then ``details``'
        keys and the seconds the benchmark ran (``elapsed_s``)."""
        clash = sorted(set(details or {}) & {*TOP_KEYS, "elapsed_s"})
        if clash:
            raise ValueError(f"details may not use the schema's keys {clash}")
        out = {**self.header, "load_after": load_average(), "results": rows, **(details or {})}
        out["elapsed_s"] = round(time.perf_counter() - self.started, 2)
        validate_timing(_clean(out))
        return out

    def write(self, out: Path, rows: list[dict], details: dict | None = None) -> dict[str, Any]:
        """Validate, write to ``out`` and print where; returns the document."""
        doc = self.result(rows, details)
        write_json(out, doc)
        print(f"wrote {out}", flush=True)
        return doc


def _versions(names: Sequence[str]) -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for n in names:
        try:
            out[n] = version(n)
        except PackageNotFoundError:
            out[n] = None
    return out
