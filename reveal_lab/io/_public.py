"""Index and load the public Reveal dataset, unzipped or straight from its zip archives,
and our bundled lab dataset (same layout, ``.parquet`` members).

Layout (``../shared/reveal-dataset-format.md``)::

    ROOT/
      Reveal_GPU.zip            # or an unzipped Reveal_GPU/ folder, or the split folders in ROOT
        train_separated/{prefix}_{MODEL}for{Task}_{dataset}_{YYYY-MM-DDTHH-MM-SS}_{host}.txt
        infer_separated/...
      Reveal_CPU.zip
      meta_gpu.csv, meta_cpu.csv    # (meta_lab.csv and labels.csv for the lab dataset)

The index is built from archive directories and file names only: no member is read
until a run is loaded, so indexing the 17 GB CPU archive takes a moment. The file name
is the authority for model, task, dataset, start and host; ``meta_*.csv`` adds phase,
mode and the expected shape, and :meth:`Dataset.reconcile` reports where they disagree.
"""

from __future__ import annotations

import io
import re
import warnings as _warnings
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import polars as pl

from reveal_lab.io._archives import MEMBER_SUFFIXES, _dir_members, _find_split_dirs, _Member, _zip_members
from reveal_lab.io._csv import read_csv_table
from reveal_lab.io._load import read_parquet_run
from reveal_lab.io._meta import META_COLUMNS, _read_meta_csv  # noqa: F401 - META_COLUMNS: its old home
from reveal_lab.io._names import (
    LLM_MODELS,
    PREFIX_PHASE,
    RunFileName,
    _platform_of,
    meta_from_name,
    parse_run_filename,
)
from reveal_lab.io._reconcile import Reconciliation, reconcile
from reveal_lab.io._tsv import read_public_tsv
from reveal_lab.telemetry import Run, RunMeta, TelemetryError, TelemetryWarning

__all__ = [
    "Dataset",
    "RunFileName",
    "Reconciliation",
    "open_dataset",
    "parse_run_filename",
    "meta_from_name",
    "INDEX_SCHEMA",
    "LLM_MODELS",
]

INDEX_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "member": pl.String(),
    "archive": pl.String(),
    "prefix": pl.String(),
    "model": pl.String(),
    "task": pl.String(),
    "dataset": pl.String(),
    "start": pl.Datetime("ms"),
    "host": pl.String(),
    "phase": pl.String(),
    "mode": pl.String(),
    "workload": pl.String(),
    "platform": pl.String(),
    "n_rows": pl.Int64(),
    "n_cols": pl.Int64(),
    "split": pl.String(),
    "format": pl.String(),
    "size_bytes": pl.Int64(),
    "in_meta": pl.Boolean(),
}



# --------------------------------------------------------------------------------------------


class Dataset:
    """An index of runs (one row per run file) and lazy loading of each run.

    Build it with :func:`open_dataset`. Open zip archives are cached on the instance;
    :meth:`close` (or a ``with`` block) releases them.
    """

    def __init__(
        self,
        root: Path,
        index: pl.DataFrame,
        meta_tables: dict[str, pl.DataFrame],
        meta_files: dict[str, str],
        warnings: list[str],
        skipped: list[str],
    ) -> None:
        self.root = root
        self._index = index
        self.meta_tables = meta_tables
        self.meta_files = meta_files
        self.warnings = warnings
        self.skipped = skipped
        self._zips: dict[str, zipfile.ZipFile] = {}

    # -- python protocol ------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._index.height

    def __contains__(self, run_id: object) -> bool:
        return run_id in set(self._index.get_column("run_id").to_list())

    def __repr__(self) -> str:
        per = self._index.group_by("platform").len().sort("platform").rows()
        return f"Dataset({str(self.root)!r}, {len(self)} runs: " + ", ".join(f"{p} {n}" for p, n in per) + ")"

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:  # picklable for Dask: drop open handles
        state = dict(self.__dict__)
        state["_zips"] = {}
        return state

    def close(self) -> None:
        for z in self._zips.values():
            z.close()
        self._zips.clear()

    # -- index ------------------------------------------------------------------------------------
    @property
    def index(self) -> pl.DataFrame:
        """One row per run (see :data:`INDEX_SCHEMA`)."""
        return self._index

    @property
    def run_ids(self) -> list[str]:
        return self._index.get_column("run_id").to_list()

    def filter(self, **criteria: str | Iterable[str] | None) -> Dataset:
        """A dataset restricted to runs whose index columns match.

        Each keyword names an index column (platform, phase, model, task, dataset, host,
        workload, prefix, split, mode, run_id, format); a value is a string or a collection
        of strings (any of them); ``None`` means no constraint.
        """
        expr = pl.lit(True)
        for key, value in criteria.items():
            if key not in self._index.columns:
                raise ValueError(f"cannot filter on {key!r}; index columns are {self._index.columns}")
            if value is None:
                continue
            values = [value] if isinstance(value, str) else list(value)
            expr = expr & pl.col(key).cast(pl.String).is_in(values)
        out = Dataset(
            self.root,
            self._index.filter(expr),
            self.meta_tables,
            self.meta_files,
            self.warnings,
            self.skipped,
        )
        out._zips = self._zips  # share open archives
        return out

    def row(self, run_id: str) -> dict[str, Any]:
        rows = self._index.filter(pl.col("run_id") == run_id)
        if rows.is_empty():
            close = [r for r in self.run_ids if run_id in r][:3]
            raise KeyError(
                f"no run {run_id!r} in {self.root}" + (f"; did you mean {close}?" if close else "")
            )
        return rows.row(0, named=True)

    # -- reading ----------------------------------------------------------------------------------
    def _zip(self, archive: str) -> zipfile.ZipFile:
        z = self._zips.get(archive)
        if z is None:
            try:
                z = zipfile.ZipFile(archive)
            except zipfile.BadZipFile as exc:
                raise TelemetryError(f"not a readable zip archive ({exc})", path=archive) from None
            self._zips[archive] = z
        return z

    @staticmethod
    def _label(row: dict[str, Any]) -> str:
        return f"{row['archive']}::{row['member']}" if row["archive"] else row["member"]

    def open_member(self, run_id: str) -> io.BufferedIOBase:
        """A binary stream of the run's file (streamed from the zip, never extracted)."""
        row = self.row(run_id)
        if row["archive"] is None:
            return open(row["member"], "rb")  # noqa: SIM115 - the caller closes it
        try:
            return self._zip(row["archive"]).open(row["member"])  # type: ignore[return-value]
        except (zipfile.BadZipFile, zlib.error, OSError) as exc:
            raise TelemetryError(f"cannot open the archive member ({exc})", path=self._label(row)) from None

    def read_bytes(self, run_id: str) -> bytes:
        """The raw bytes of one run file."""
        row = self.row(run_id)
        try:
            with self.open_member(run_id) as f:
                return f.read()
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise TelemetryError(
                f"corrupt archive member ({type(exc).__name__}: {exc}); the archive "
                "is damaged: re-download it",
                path=self._label(row),
            ) from None

    def header(self, run_id: str) -> list[str]:
        """Column names of one run (reads only the header, streamed)."""
        row = self.row(run_id)
        if row["format"] == "parquet":
            import pyarrow.parquet as pq

            with self.open_member(run_id) as f:
                return list(pq.read_schema(io.BytesIO(f.read()) if row["archive"] else f).names)
        try:
            with self.open_member(run_id) as f:
                first = f.readline()
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise TelemetryError(f"corrupt archive member ({exc})", path=self._label(row)) from None
        return first.decode("utf-8", errors="replace").rstrip("\r\n").split("\t")

    def run_meta(self, run_id: str) -> RunMeta:
        """The metadata the index knows for a run (before reading it)."""
        r = self.row(run_id)
        return RunMeta(
            run_id=r["run_id"],
            hosts=(r["host"],) if r["host"] else (),
            workload=r["workload"],
            model=r["model"],
            task=r["task"],
            dataset=r["dataset"],
            phase=r["phase"],
            mode=r["mode"],
            platform=r["platform"],
            source_path=self._label(r),
            start_time=r["start"].isoformat() if r["start"] else None,
            extra={k: r[k] for k in ("prefix", "split", "archive", "member", "in_meta", "n_rows", "n_cols")},
        )

    def load(self, run_id: str, **read_options: Any) -> Run:
        """Read one run (only now is its file read). ``read_options`` go to the reader
        (``strict``, ``repair_time`` for text files)."""
        row = self.row(run_id)
        data = self.read_bytes(run_id)
        meta = self.run_meta(run_id)
        if row["format"] == "parquet":
            return read_parquet_run(data, name=self._label(row), meta=meta)
        return read_public_tsv(data, name=self._label(row), meta=meta, **read_options)

    def iter_runs(self, *, on_error: str = "raise", **filters: Any) -> Iterator[Run]:
        """Load the (filtered) runs one at a time, in index order.

        ``on_error="skip"`` goes on past a run that cannot be read (a corrupt member, a
        malformed file): the error is appended to :attr:`warnings` and emitted as a
        :class:`~reveal_lab.telemetry.TelemetryWarning`, never dropped silently.
        """
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
        ds = self.filter(**filters) if filters else self
        for run_id in ds.run_ids:
            try:
                run = ds.load(run_id)
            except TelemetryError as exc:
                if on_error == "raise":
                    raise
                msg = f"skipped run {run_id}: {exc}"
                self.warnings.append(msg)
                _warnings.warn(msg, TelemetryWarning, stacklevel=2)
                continue
            yield run

    def labels(self) -> pl.DataFrame | None:
        """``labels.csv`` beside the data (the lab dataset's ground truth), or ``None``."""
        p = self.root / "labels.csv" if self.root.is_dir() else self.root.parent / "labels.csv"
        return read_csv_table(p, what="labels file", infer=True) if p.exists() else None

    # -- checks -----------------------------------------------------------------------------------
    def reconcile(self, *, check_cols: bool = False, check_rows: bool = False) -> Reconciliation:
        """Compare the ``meta_*.csv`` tables with the files.

        Names and workloads are always compared. ``check_cols`` reads each file's header to
        compare ``n_cols``; ``check_rows`` reads each whole file to compare ``n_rows``
        (slow on the full archives). ``n_cols`` may count the timestamp column or not, and
        ``n_rows`` the header line or not: either convention is accepted.
        """
        return reconcile(self, check_cols=check_cols, check_rows=check_rows)

    def _count_rows(self, run_id: str) -> int:
        row = self.row(run_id)
        if row["format"] == "parquet":
            import pyarrow.parquet as pq

            return pq.read_metadata(io.BytesIO(self.read_bytes(run_id))).num_rows
        n, last = 0, b"\n"
        with self.open_member(run_id) as f:
            while chunk := f.read(1 << 20):
                n += chunk.count(b"\n")
                last = chunk[-1:]
        n += last != b"\n"
        return n - 1  # the header line


# --------------------------------------------------------------------------------------------


def open_dataset(root: str | Path) -> Dataset:
    """Index a local copy of the public Reveal dataset (or of our lab dataset).

    ``root`` is a folder holding ``Reveal_GPU.zip`` / ``Reveal_CPU.zip`` and/or unzipped
    copies (``train_separated/``, ``infer_separated/``, possibly under ``Reveal_CPU/``-style
    folders) plus ``meta_*.csv``; or a single zip archive. Nothing is extracted and no run
    file is read.

    Examples
    --------
    >>> from reveal_lab.config import fixtures_dir
    >>> ds = open_dataset(fixtures_dir() / "reveal_sample")
    >>> ds  # doctest: +ELLIPSIS
    Dataset('...reveal_sample', 11 runs: cpu 5, gpu 6)
    >>> ds.filter(platform="gpu", phase="infer").index.get_column("model").to_list()
    ['Resnet18', 'ViTB16', 'BERTBASE']
    """
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(
            f"{root}: no such file or folder; fetch the dataset with "
            f"`reveal-lab dataset pull --dest {root}` or place the files there by hand"
        )
    skipped: list[str] = []
    warnings: list[str] = []
    members: list[_Member] = []
    meta_dir = root.parent if root.is_file() else root
    if root.is_file():
        if root.suffix.lower() != ".zip":
            raise TelemetryError("expected a folder or a .zip archive of the dataset", path=str(root))
        members += _zip_members(root, skipped)
    else:
        for d in _find_split_dirs(root):
            members += _dir_members(d, skipped)
        for z in sorted(root.glob("*.zip")):
            members += _zip_members(z, skipped)

    meta_tables: dict[str, pl.DataFrame] = {}
    meta_files: dict[str, str] = {}
    for p in sorted(meta_dir.glob("meta_*.csv")):
        plat = p.stem[len("meta_") :].lower()
        meta_tables[plat] = _read_meta_csv(p)
        meta_files[plat] = str(p)
    if not members and not meta_tables:
        raise TelemetryError(
            "no Reveal dataset here: expected Reveal_GPU.zip / Reveal_CPU.zip (zipped is fine) or folders "
            "train_separated/ and infer_separated/, and meta_gpu.csv / meta_cpu.csv "
            "(`reveal-lab dataset pull --help` says how to get them)",
            path=str(root),
        )

    rows = []
    seen: dict[tuple[str | None, str], str] = {}
    meta_ids = {p: set(t.get_column("run_id").to_list()) for p, t in meta_tables.items()}
    for m in members:
        base = PurePosixPath(m.member.replace("\\", "/")).name
        suffix = PurePosixPath(base).suffix.lower()
        stem = base[: -len(suffix)] if suffix else base
        platform = _platform_of(m.container)
        if platform is None:
            hits = [p for p, ids in meta_ids.items() if stem in ids]
            platform = (
                hits[0]
                if len(hits) == 1
                else (
                    next(iter(meta_tables))
                    if len(meta_tables) == 1
                    else ("lab" if suffix == ".parquet" else None)
                )
            )
        label = f"{m.archive}::{m.member}" if m.archive else m.member
        key = (platform, stem)
        if key in seen:
            warnings.append(f"run {stem} appears twice ({seen[key]} and {label}); the first is indexed")
            continue
        seen[key] = label
        name = parse_run_filename(base)
        if name is None:
            warnings.append(
                f"{label}: file name does not follow "
                "{prefix}_{MODEL}for{Task}_{dataset}_{YYYY-MM-DDTHH-MM-SS}_{host}.txt; "
                "indexed without model/task/dataset/host"
            )
        rows.append(
            {
                "run_id": stem,
                "member": m.member,
                "archive": m.archive,
                "prefix": name.prefix if name else None,
                "model": name.model if name else None,
                "task": name.task if name else None,
                "dataset": name.dataset if name else None,
                "start": name.start if name else None,
                "host": name.host if name else None,
                "phase": None,
                "mode": None,
                "workload": name.workload if name else None,
                "platform": platform,
                "n_rows": None,
                "n_cols": None,
                "split": m.split,
                "format": MEMBER_SUFFIXES[suffix],
                "size_bytes": m.size,
                "in_meta": False,
            }
        )
    index = pl.DataFrame(rows, schema=INDEX_SCHEMA)
    index = _attach_meta(index, meta_tables)
    return Dataset(root, index, meta_tables, meta_files, warnings, skipped)


def _attach_meta(index: pl.DataFrame, meta_tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Fill phase, mode, n_rows, n_cols from the platform's meta table; derive the rest."""
    if meta_tables:
        meta = pl.concat(
            [
                t.select(
                    pl.lit(p).alias("platform"),
                    "run_id",
                    pl.col("phase").alias("m_phase"),
                    pl.col("mode").alias("m_mode"),
                    pl.col("n_rows").alias("m_rows"),
                    pl.col("n_cols").alias("m_cols"),
                    pl.lit(True).alias("m_in"),
                )
                for p, t in meta_tables.items()
            ]
        ).unique(subset=["platform", "run_id"], keep="first", maintain_order=True)
        index = index.join(meta, on=["platform", "run_id"], how="left", maintain_order="left")
    else:
        index = (
            index.with_columns(pl.lit(None, pl.String).alias(c) for c in ("m_phase", "m_mode"))
            .with_columns(pl.lit(None, pl.Int64).alias(c) for c in ("m_rows", "m_cols"))
            .with_columns(pl.lit(None, pl.Boolean).alias("m_in"))
        )
    derived_phase = pl.col("prefix").str.to_lowercase().replace_strict(PREFIX_PHASE, default=None)
    derived_phase = pl.coalesce(derived_phase, pl.col("split"))
    derived_mode = (
        pl.when(pl.col("model").is_null())
        .then(None)
        .when((pl.col("prefix") == "data") | pl.col("model").str.to_uppercase().is_in(list(LLM_MODELS)))
        .then(pl.lit("llm"))
        .otherwise(pl.lit("nonllm"))
    )
    return (
        index.with_columns(
            pl.coalesce("m_phase", derived_phase).alias("phase"),
            pl.coalesce("m_mode", derived_mode).alias("mode"),
            pl.col("m_rows").alias("n_rows"),
            pl.col("m_cols").alias("n_cols"),
            pl.col("m_in").fill_null(False).alias("in_meta"),
        )
        .select(list(INDEX_SCHEMA))
        .cast(INDEX_SCHEMA)
    )  # type: ignore[arg-type]
