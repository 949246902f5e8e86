"""``load_run``: one entry point for any run on disk, and the canonical Parquet reader.

A *canonical Parquet run* (the lab dataset's members) is a telemetry frame written with
``timestamp`` + ``Float64`` metric columns; its :class:`RunMeta` travels as JSON in the
Parquet key-value metadata under :data:`PARQUET_META_KEY` (``RunMeta.to_dict()``).
"""

from __future__ import annotations

import io
import json
import warnings
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import polars as pl

from reveal_lab.io._collector import read_collector_run
from reveal_lab.io._meta import _read_meta_csv
from reveal_lab.io._names import _platform_of, meta_from_name
from reveal_lab.io._tsv import read_public_tsv, read_source_bytes
from reveal_lab.telemetry import (
    TIMESTAMP,
    TIMESTAMP_DTYPE,
    Run,
    RunMeta,
    TelemetryError,
    TelemetryWarning,
    frame_hosts,
    validate_frame,
)

__all__ = ["load_run", "read_parquet_run", "write_parquet_run", "PARQUET_META_KEY"]

#: Parquet key-value metadata key holding ``RunMeta.to_dict()`` as JSON
PARQUET_META_KEY = "reveal_lab.run"


def write_parquet_run(run: Run, path: str | Path) -> Path:
    """Write ``run`` as a canonical Parquet run (frame + metadata in one file).

    >>> import datetime as dt, tempfile
    >>> f = pl.DataFrame({"timestamp": [dt.datetime(2025, 1, 1)], "Perf:IPC.h1[-]": [1.0]},
    ...                  schema_overrides={"timestamp": pl.Datetime("ms")})
    >>> p = write_parquet_run(Run(RunMeta("r1", hosts=("h1",)), f), Path(tempfile.mkdtemp()) / "r1.parquet")
    >>> read_parquet_run(p).meta.hosts
    ('h1',)
    """
    import pyarrow.parquet as pq

    path = Path(path)
    validate_frame(run.frame, source=str(path))
    table = run.frame.to_arrow()
    md = dict(table.schema.metadata or {})
    md[PARQUET_META_KEY.encode()] = json.dumps(run.meta.to_dict(), default=str).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.replace_schema_metadata(md), path, compression="zstd")
    return path


def _kv_meta(data: bytes | Path) -> dict[str, Any] | None:
    import pyarrow.parquet as pq

    src = io.BytesIO(data) if isinstance(data, bytes) else data
    md = pq.read_schema(src).metadata or {}
    for key in (PARQUET_META_KEY, "reveal_lab.meta", "reveal_lab", "run_meta"):
        raw = md.get(key.encode())
        if raw:
            try:
                d = json.loads(raw)
            except ValueError:
                continue
            if isinstance(d, dict):
                return d
    return None


def read_parquet_run(
    source: str | Path | bytes | BinaryIO, name: str | None = None, *, meta: RunMeta | None = None
) -> Run:
    """Read a canonical Parquet run.

    Metadata comes from the file's key-value metadata; fields it lacks are filled from
    ``meta`` (the dataset index) or, failing both, from the file name. A timestamp in
    another unit and non-``Float64`` numeric columns are converted, each recorded as a
    warning; anything else that breaks the frame contract raises :class:`TelemetryError`.
    """
    data, label = read_source_bytes(source, name)
    notes: list[str] = []
    try:
        frame = pl.read_parquet(io.BytesIO(data))
        stored = _kv_meta(data)
    except Exception as exc:  # noqa: BLE001 - pyarrow/polars raise many types for bad files
        raise TelemetryError(
            f"not a readable Parquet file ({type(exc).__name__}: {exc})", path=label
        ) from None
    if (
        TIMESTAMP in frame.columns
        and isinstance(frame.schema[TIMESTAMP], pl.Datetime)
        and frame.schema[TIMESTAMP] != TIMESTAMP_DTYPE
    ):
        notes.append(
            f"{label}: timestamp stored as {frame.schema[TIMESTAMP].time_unit} units, "
            "converted to datetime[ms]"
        )
        frame = frame.with_columns(pl.col(TIMESTAMP).dt.replace_time_zone(None).cast(TIMESTAMP_DTYPE))
    casts = [c for c, t in frame.schema.items() if c != TIMESTAMP and t.is_numeric() and t != pl.Float64]
    if casts:
        notes.append(f"{label}: {len(casts)} numeric column(s) converted to Float64: {casts[:5]}")
        frame = frame.with_columns(pl.col(casts).cast(pl.Float64))
    validate_frame(frame, source=label)

    base = meta if meta is not None else meta_from_name(label)
    if stored:
        m = RunMeta.from_dict(stored)
        for f in (
            "workload",
            "model",
            "task",
            "dataset",
            "phase",
            "mode",
            "platform",
            "start_time",
            "interval_ms",
        ):
            if getattr(m, f) is None:
                setattr(m, f, getattr(base, f))
        m.extra = {**base.extra, **m.extra}
        m.source_path = label
        base = m
    hosts = tuple(frame_hosts(frame))
    base.hosts = hosts or base.hosts
    base.source_path = label
    if base.interval_ms is None and frame.height > 1:
        med = frame.get_column(TIMESTAMP).diff().dt.total_milliseconds().median()
        base.interval_ms = float(med) if med is not None else None  # type: ignore[arg-type]
    for msg in notes:
        warnings.warn(msg, TelemetryWarning, stacklevel=2)
    return Run(base, frame, notes)


def _meta_for_file(path: Path) -> RunMeta:
    """File-name metadata refined by a ``meta_*.csv`` found beside the run's split folder."""
    meta = meta_from_name(str(path))
    for folder in (path.parent, path.parent.parent, path.parent.parent.parent):
        plat = _platform_of(folder.name)
        if plat and meta.platform is None:
            meta.platform = plat
        for csv in sorted(folder.glob("meta_*.csv")):
            table = _read_meta_csv(csv)
            hit = table.filter(pl.col("run_id") == meta.run_id)
            if hit.height:
                r = hit.row(0, named=True)
                meta.platform = meta.platform or csv.stem[len("meta_") :].lower()
                meta.phase = r.get("phase") or meta.phase
                meta.mode = r.get("mode") or meta.mode
                meta.extra.update(
                    {"n_rows": r.get("n_rows"), "n_cols": r.get("n_cols"), "meta_file": str(csv)}
                )
                return meta
    return meta


def load_run(path: str | Path, **options: Any) -> Run:
    """Load one run from whatever ``path`` is.

    * a collector run folder (has ``meta.json``) → :func:`read_collector_run`
      (``options`` go to it, e.g. ``view="raw"``);
    * a ``.txt``/``.tsv`` file of the public dataset → :func:`read_public_tsv`
      (``options``: ``strict``, ``repair_time``);
    * a ``.parquet`` canonical run → :func:`read_parquet_run`;
    * ``ARCHIVE.zip::member`` → that member, streamed from the archive.

    Metadata comes from the file name and, when one lies beside the split folder, the
    dataset's ``meta_*.csv``.
    """
    text = str(path)
    if "::" in text:
        archive, member = text.split("::", 1)
        try:
            with zipfile.ZipFile(archive) as z:
                data = z.read(member)
        except KeyError:
            raise TelemetryError(f"no member {member!r} in the archive", path=archive) from None
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
            # a bad CRC or corrupt deflate data inside one member: name the member
            raise TelemetryError(
                f"corrupt archive member ({type(exc).__name__}: {exc}); the archive is damaged: "
                "re-download it",
                path=text,
            ) from None
        meta = _meta_for_file(Path(archive).parent / PurePosixPath(member).name)
        meta.source_path = text
        if member.lower().endswith(".parquet"):
            return read_parquet_run(data, name=text, meta=meta)
        return read_public_tsv(data, name=text, meta=meta, **options)
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or folder")
    if p.is_dir():
        if (p / "meta.json").exists():
            return read_collector_run(p, **options)
        raise TelemetryError(
            "a folder without meta.json is not a collector run; for a dataset folder use "
            "reveal_lab.io.open_dataset(path)",
            path=str(p),
        )
    if not p.is_file():  # a FIFO or a device would block or never end
        raise TelemetryError(
            "not a regular file (a FIFO, socket or device?); expected a run file", path=str(p)
        )
    suffix = p.suffix.lower()
    if suffix in (".txt", ".tsv"):
        meta = _meta_for_file(p)
        meta.source_path = str(p)
        return read_public_tsv(p, meta=meta, **options)
    if suffix == ".parquet":
        meta = _meta_for_file(p)
        return read_parquet_run(p, meta=meta)
    if suffix == ".zip":
        raise TelemetryError(
            "an archive holds many runs: open it with reveal_lab.io.open_dataset(path), "
            "or name one member as ARCHIVE.zip::member",
            path=str(p),
        )
    raise TelemetryError(
        f"unknown run file type {suffix!r}; expected a collector folder, .txt/.tsv or .parquet", path=str(p)
    )
