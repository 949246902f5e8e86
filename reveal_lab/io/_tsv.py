"""Read one run file of the public Reveal dataset (tab-separated text) into a :class:`Run`.

The format (see ``../shared/reveal-dataset-format.md``): one header line, tab separated;
the first header is empty and its column holds local timestamps such as
``2025-04-26 13:38:18.600``; every other column is a float metric named in the metric
grammar, with empty cells (or ``NaN``) for missing values.

Parsing uses polars' CSV reader; the checks around it turn every malformed input into a
:class:`TelemetryError` that names the file, the 1-based file line (the header is line 1)
and the column, or into a recorded warning when the reader can repair it:

========================================  ==============================================
input                                     outcome
========================================  ==============================================
empty file, header only                   error
not tab separated (commas, semicolons)    error naming the delimiter found
duplicate column name                     error naming both positions
a row with more or fewer fields           error naming the line and both counts
the *last* row cut short (truncated copy)  warning, that partial row is not loaded
                                          (error with ``strict=True``)
non-numeric cell                          error naming line, column and the value
unreadable or empty timestamp             error naming the line
duplicate / decreasing timestamps         error naming both lines; ``repair_time=True``
                                          sorts rows by time and keeps the first of
                                          duplicates, recorded as a warning
unknown column names                      kept, warned, classified with fall-backs
all-missing / all-zero columns            kept, warned, listed in ``meta.extra``
``NaN`` cells                             stored as null (missing), like empty cells
========================================  ==============================================
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import numpy as np
import polars as pl

from reveal_lab.io._names import meta_from_name
from reveal_lab.telemetry import (
    DEFAULT_REGISTRY,
    TIMESTAMP,
    TIMESTAMP_DTYPE,
    Run,
    RunMeta,
    TelemetryError,
    TelemetryWarning,
    metric_columns,
    parse_metric_name,
)

__all__ = ["read_public_tsv", "read_source_bytes", "TIMESTAMP_FORMATS"]

#: accepted spellings of the first column (the dataset's is ``%Y-%m-%d %H:%M:%S.%f``)
TIMESTAMP_FORMATS: tuple[str, ...] = ("%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f")
#: first-column headers taken for the timestamp besides the dataset's empty one
_TIMESTAMP_HEADERS = frozenset({"", "timestamp", "time", "Unnamed: 0", "datetime"})
#: column names listed in full in a warning before it says "and N more"
_LIST_MAX = 8
#: cells read as missing values (the dataset writes empty cells; NaN spellings mean the same)
NULL_VALUES: list[str] = ["", "NaN", "nan", "NAN", "-nan", "-NaN"]


def read_source_bytes(source: str | Path | bytes | BinaryIO, name: str | None = None) -> tuple[bytes, str]:
    """The bytes of ``source`` and the label used in messages (``name`` or the path)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), name or "<bytes>"
    if isinstance(source, (str, Path)):
        p = Path(source)
        try:
            return p.read_bytes(), name or str(p)
        except FileNotFoundError:
            raise FileNotFoundError(f"{p}: no such file") from None
    data = source.read()
    return data, name or getattr(source, "name", None) or "<stream>"


def _short(names: list[str]) -> str:
    head = ", ".join(repr(n) for n in names[:_LIST_MAX])
    return head + (f" and {len(names) - _LIST_MAX} more" if len(names) > _LIST_MAX else "")


def read_public_tsv(
    source: str | Path | bytes | BinaryIO,
    name: str | None = None,
    *,
    meta: RunMeta | None = None,
    strict: bool = False,
    repair_time: bool = False,
) -> Run:
    """Read one tab-separated run file of the public Reveal dataset.

    Parameters
    ----------
    source
        A path, the file's bytes or a binary stream (e.g. a zip member).
    name
        How the file is named in messages and, when ``meta`` is not given, where the
        run's metadata is parsed from (the dataset's file-name grammar). Defaults to the path.
    meta
        Metadata to attach (the dataset index supplies it); ``hosts`` and ``interval_ms``
        are filled from the data.
    strict
        Turn repairable oddities (a truncated last line) into errors.
    repair_time
        Sort rows by time and keep the first of duplicated timestamps instead of
        raising; each repair is recorded in ``Run.warnings``.

    Returns
    -------
    Run
        ``frame`` is a canonical telemetry frame (``timestamp`` + ``Float64`` metrics).

    Examples
    --------
    >>> data = (b"\\tPerf:IPC.h1[-]\\tGPU: power.draw.0.h1[W]\\n"
    ...         b"2025-04-26 13:38:18.600\\t1.5\\t230.0\\n"
    ...         b"2025-04-26 13:38:18.700\\t\\t231.5\\n")
    >>> name = "train_VGG16forImageClassification_CIFAR10_2025-04-26T13-38-18_h1.txt"
    >>> run = read_public_tsv(data, name=name)
    >>> run.frame.shape, run.meta.model, run.meta.hosts, run.meta.interval_ms
    ((2, 3), 'VGG16', ('h1',), 100.0)
    >>> read_public_tsv(b"a,b\\n1,2\\n", name="x.txt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    reveal_lab.telemetry._errors.TelemetryError: x.txt, line 1: the file is not tab-separated ...
    """
    data, label = read_source_bytes(source, name)
    notes: list[str] = []

    def warn(msg: str) -> None:
        notes.append(f"{label}: {msg}")

    lines, ended_with_newline = _lines(data, label)
    names = _header_names(lines[0], label, warn)
    body = _checked_body(lines[1:], len(names), ended_with_newline, strict, label, warn)
    frame = _check_time(_read_values(body, names, label), label, repair_time, warn)
    run_meta = _fill_meta(meta, label, frame, warn)
    _report_columns(frame, run_meta, warn)

    for msg in notes:
        warnings.warn(msg, TelemetryWarning, stacklevel=2)
    return Run(run_meta, frame, notes)


def _lines(data: bytes, label: str) -> tuple[list[bytes], bool]:
    """The file's lines (CRLF and a byte-order mark removed, trailing empty lines dropped)
    and whether it ended with a newline."""
    if not data or data.isspace():  # as ``not data.strip()``, without copying the file
        raise TelemetryError(
            "the file is empty; expected a tab-separated header line and data rows", path=label
        )
    if b"\r\n" in data:
        data = data.replace(b"\r\n", b"\n")
    if data.startswith(b"\xef\xbb\xbf"):  # UTF-8 byte-order mark
        data = data[3:]
    lines = data.split(b"\n")
    while lines and not lines[-1]:
        lines.pop()
    return lines, data.endswith(b"\n")


def _header_names(line: bytes, label: str, warn: Callable[[str], None]) -> list[str]:
    """The column names of the header line: the timestamp first (its header is empty in the
    dataset), then the metrics; no name twice."""
    try:
        header = line.decode("utf-8").split("\t")
    except UnicodeDecodeError as exc:
        raise TelemetryError(
            f"the header is not UTF-8 text ({exc.reason} at byte {exc.start})", path=label, line=1
        ) from None
    if len(header) == 1:
        found = next((d for d in (",", ";", "|") if d in header[0]), None)
        what = f"contains {found!r}" if found else "has no tab"
        raise TelemetryError(
            f"the file is not tab-separated (the header has one column and {what}); "
            "expected tab-separated columns with an empty first header (the timestamp)",
            path=label,
            line=1,
        )
    first = header[0].strip()
    if first not in _TIMESTAMP_HEADERS:
        from reveal_lab.telemetry import parse_metric_name

        if parse_metric_name(first) is not None:
            raise TelemetryError(
                "the first column must hold the timestamps (empty header); found a metric",
                path=label,
                line=1,
                column=first,
            )
        warn(f"first header {first!r} is taken as the timestamp column (the dataset leaves it empty)")
    names = [TIMESTAMP, *header[1:]]
    seen: dict[str, int] = {}
    for i, n in enumerate(names):
        if n in seen:
            raise TelemetryError(
                f"duplicate column name (header fields {seen[n] + 1} and {i + 1})",
                path=label,
                line=1,
                column=n,
            )
        seen[n] = i
    return names


def _checked_body(  # noqa: PLR0913
    body: list[bytes],
    n_fields: int,
    ended_with_newline: bool,
    strict: bool,
    label: str,
    warn: Callable[[str], None],
) -> list[bytes]:
    """The data lines, each with the header's field count (polars would pad short rows with
    nulls silently); a truncated last line is left out with a warning unless ``strict``."""
    if not body:
        raise TelemetryError("the file has a header but no data rows", path=label, line=2)
    counts = [ln.count(b"\t") + 1 for ln in body]
    bad = [i for i, c in enumerate(counts) if c != n_fields]
    if not bad:
        return body
    last = len(body) - 1
    i = bad[0]
    truncated = bad == [last] and counts[last] < n_fields and (not ended_with_newline or len(body[last]) > 0)
    if truncated and not strict:
        warn(
            f"line {last + 2} has {counts[last]} of {n_fields} fields (truncated file?); "
            "that partial row is not loaded"
        )
        body = body[:-1]
        if not body:
            raise TelemetryError("the file has a header and only a truncated data row", path=label, line=2)
        return body
    more = "more" if counts[i] > n_fields else "fewer"
    hint = " (a blank line?)" if not body[i] else (" (truncated file?)" if i == last else "")
    raise TelemetryError(
        f"{counts[i]} fields, {more} than the {n_fields} of the header on line 1"
        f"{hint}; expected one tab-separated value per column",
        path=label,
        line=i + 2,
    )


def _read_values(body: list[bytes], names: list[str], label: str) -> pl.DataFrame:
    """The data lines as a frame: parsed timestamps and ``Float64`` metrics (NaN spelled in a
    way ``NULL_VALUES`` does not list is a missing value too)."""
    buf = b"\n".join([*body, b""])  # every line ended by a newline, in one copy
    internal = [f"c{i}" for i in range(len(names))]
    schema = {c: (pl.String if i == 0 else pl.Float64) for i, c in enumerate(internal)}
    try:
        raw = pl.read_csv(
            io.BytesIO(buf),
            separator="\t",
            has_header=False,
            schema=schema,
            quote_char=None,
            null_values=NULL_VALUES,
        )
    except pl.exceptions.ComputeError as exc:
        _raise_non_numeric(buf, internal, names, label, exc)
        raise  # unreachable: _raise_non_numeric always raises
    if raw.height != len(body):  # pragma: no cover - guarded by the field-count check
        raise TelemetryError(f"read {raw.height} rows from {len(body)} data lines", path=label)
    raw.columns = names
    frame = raw.with_columns(_parse_timestamps(raw.get_column(TIMESTAMP), label))
    metrics = metric_columns(frame)
    if metrics:
        has_nan = frame.select(pl.col(metrics).is_nan().any()).row(0)
        nan_cols = [c for c, v in zip(metrics, has_nan, strict=True) if v]
        if nan_cols:
            frame = frame.with_columns(pl.col(nan_cols).fill_nan(None))
    return frame


def _raise_non_numeric(buf: bytes, internal: list[str], names: list[str], label: str, exc: Exception) -> None:
    """Find the first cell that is not a number and raise an error naming it."""
    try:
        buf.decode("utf-8")
    except UnicodeDecodeError as bad:  # polars' own error would name neither line nor column
        start = buf.rfind(b"\n", 0, bad.start) + 1
        field = buf.count(b"\t", start, bad.start)
        raise TelemetryError(
            f"bytes that are not UTF-8 text ({bad.reason}); expected a number",
            path=label,
            line=buf.count(b"\n", 0, bad.start) + 2,
            column=names[field] if field < len(names) else None,
        ) from None
    text = pl.read_csv(
        io.BytesIO(buf),
        separator="\t",
        has_header=False,
        new_columns=internal,
        infer_schema=False,
        quote_char=None,
        null_values=NULL_VALUES,
    )
    best: tuple[int, str, str] | None = None
    for c, n in zip(internal[1:], names[1:], strict=True):
        s = text.get_column(c)
        bad = s.is_not_null() & s.cast(pl.Float64, strict=False).is_null()
        if bad.any():
            row = int(bad.arg_max())  # type: ignore[arg-type]
            if best is None or row < best[0]:
                best = (row, n, s[row])
    if best is None:
        raise TelemetryError(f"cannot parse the data: {str(exc).splitlines()[0]}", path=label) from None
    row, col, value = best
    raise TelemetryError(
        f"non-numeric value {value!r}; expected a number (or an empty cell for a missing value)",
        path=label,
        line=row + 2,
        column=col,
    ) from None


def _parse_timestamps(s: pl.Series, label: str) -> pl.Series:
    parsed = [s.str.strptime(TIMESTAMP_DTYPE, f, strict=False) for f in TIMESTAMP_FORMATS]
    ts = pl.select(pl.coalesce(parsed)).to_series().alias(TIMESTAMP)
    if ts.null_count():
        row = int(ts.is_null().arg_max())  # type: ignore[arg-type]
        value = s[row]
        what = "empty timestamp" if value is None else f"cannot read timestamp {value!r}"
        raise TelemetryError(
            f"{what}; expected e.g. '2025-04-26 13:38:18.600' in the first column",
            path=label,
            line=row + 2,
            column=TIMESTAMP,
        )
    return ts


def _check_time(frame: pl.DataFrame, label: str, repair: bool, warn) -> pl.DataFrame:  # noqa: ANN001
    ts = frame.get_column(TIMESTAMP)
    d = ts.diff().dt.total_milliseconds()
    dup = (d == 0).fill_null(False)
    back = (d < 0).fill_null(False)
    if not (dup.any() or back.any()):
        return frame
    if not repair:
        row = int((dup | back).arg_max())  # type: ignore[arg-type]
        kind = "duplicate timestamp" if dup[row] else "timestamp goes back in time"
        raise TelemetryError(
            f"{kind}: {ts[row]} after {ts[row - 1]} on line {row + 1}; timestamps must "
            "increase strictly (read with repair_time=True to sort rows and keep the first "
            "of duplicates)",
            path=label,
            line=row + 2,
            column=TIMESTAMP,
        )
    lines = pl.int_range(2, frame.height + 2, eager=True).alias("__line")
    if back.any():
        where = (lines.filter(back)).to_list()
        warn(
            f"timestamps go back in time on lines {where[:_LIST_MAX]}"
            f"{' …' if len(where) > _LIST_MAX else ''}; rows were sorted by time"
        )
    framed = frame.with_columns(lines).sort(TIMESTAMP, maintain_order=True)
    dupe = framed.get_column(TIMESTAMP).is_duplicated() & ~framed.get_column(TIMESTAMP).is_first_distinct()
    if dupe.any():
        where = framed.get_column("__line").filter(dupe).to_list()
        warn(
            f"duplicate timestamps on lines {where[:_LIST_MAX]}{' …' if len(where) > _LIST_MAX else ''}: "
            f"{len(where)} later row(s) with an already-seen timestamp were not loaded (the first is kept)"
        )
        framed = framed.filter(~dupe)
    return framed.drop("__line")


def _fill_meta(meta: RunMeta | None, label: str, frame: pl.DataFrame, warn) -> RunMeta:  # noqa: ANN001
    version = _registry_version()
    hosts = tuple(
        dict.fromkeys(st[2] for c in metric_columns(frame) if (st := _column_status(c, version))[0])
    )
    if meta is None:
        meta = meta_from_name(label)
    name_host = meta.host or (meta.hosts[0] if meta.hosts else None)
    if name_host and hosts and name_host not in hosts:
        warn(f"the file name says host {name_host!r} but its columns name {list(hosts)}")
    ts = frame.get_column(TIMESTAMP)
    interval = None
    if frame.height > 1:
        med = ts.diff().dt.total_milliseconds().median()
        interval = float(med) if med is not None else None  # type: ignore[arg-type]
    meta.hosts = hosts or meta.hosts
    meta.interval_ms = interval
    meta.source_path = meta.source_path or label
    if meta.start_time is None:
        meta.start_time = ts[0].isoformat()
    meta.extra.setdefault("first_timestamp", ts[0].isoformat())
    return meta


def _report_columns(frame: pl.DataFrame, meta: RunMeta, warn) -> None:  # noqa: ANN001
    metrics = metric_columns(frame)
    if not metrics:
        warn("the file has a timestamp column but no metric columns")
        return
    # one pass in numpy (nulls are NaN there; real NaNs were turned into nulls already)
    values = frame.select(metrics).to_numpy()
    missing = np.isnan(values)
    none = missing.all(axis=0)
    zero = ((values == 0) | missing).all(axis=0) & ~none
    inf = np.isinf(values).any(axis=0)
    all_null = [c for c, v in zip(metrics, none.tolist(), strict=True) if v]
    all_zero = [c for c, v in zip(metrics, zero.tolist(), strict=True) if v]
    with_inf = [c for c, v in zip(metrics, inf.tolist(), strict=True) if v]
    meta.extra["all_null_columns"] = all_null
    meta.extra["all_zero_columns"] = all_zero
    if all_null:
        warn(f"{len(all_null)} column(s) hold no value at all (kept): {_short(all_null)}")
    if all_zero:
        warn(f"{len(all_zero)} column(s) are zero throughout (kept): {_short(all_zero)}")
    if with_inf:
        warn(f"{len(with_inf)} column(s) hold infinite values (kept): {_short(with_inf)}")
    version = _registry_version()
    status = [_column_status(c, version) for c in metrics]
    unparsed = [c for c, st in zip(metrics, status, strict=True) if not st[0]]
    unknown = [c for c, st in zip(metrics, status, strict=True) if st[0] and not st[1]]
    meta.extra["unknown_columns"] = unparsed + unknown
    if unparsed:
        warn(
            f"{len(unparsed)} column name(s) do not follow <Source>:<field>[.<instance>].<host>[<unit>] "
            f"(kept, classified as subsystem 'system', kind 'dynamic'): {_short(unparsed)}"
        )
    if unknown:
        warn(
            f"{len(unknown)} metric(s) are not in the metric registry (kept, fall-back subsystem "
            f"'system'; teach it with reveal_lab.telemetry.register_metric): {_short(unknown)}"
        )


_STATUS_CACHE: dict[tuple[str, int], tuple[bool, bool, str | None]] = {}


def _registry_version() -> int:
    """Changes whenever a rule is registered or removed (invalidates the cache below)."""
    return hash(tuple(map(id, DEFAULT_REGISTRY.rules)))


def _column_status(name: str, version: int) -> tuple[bool, bool, str | None]:
    """``(parsed, known to the registry, host)`` of a column name, cached: the same names
    recur in every file of a host, and parsing/classifying is the slow part of a read."""
    key = (name, version)
    hit = _STATUS_CACHE.get(key)
    if hit is None:
        m = parse_metric_name(name)
        hit = (m is not None, m is not None and DEFAULT_REGISTRY.classify(m).known, m.host if m else None)
        if len(_STATUS_CACHE) > 200_000:
            _STATUS_CACHE.clear()
        _STATUS_CACHE[key] = hit
    return hit
