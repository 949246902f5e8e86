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

import datetime as dt
import io
import re
import warnings as _warnings
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import polars as pl

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

#: ``train_separated`` / ``infer_separated`` (and the misspelt ``*_seperated``)
SPLIT_DIR_RE = re.compile(r"^(?P<split>[A-Za-z]+)_sep[ae]rated$")
MEMBER_SUFFIXES: dict[str, str] = {".txt": "tsv", ".tsv": "tsv", ".parquet": "parquet"}
_PLATFORM_RE = re.compile(r"(?i)(?:^|[^a-z])(gpu|cpu|lab)(?:[^a-z]|$)")
#: models the paper runs as LLM fine-tuning (``mode="llm"`` when no meta row says otherwise)
LLM_MODELS: frozenset[str] = frozenset({"DEEPSEEK", "LLAMA", "MISTRAL"})
#: ``prefix`` of the file name → phase, when no meta row says otherwise
PREFIX_PHASE: dict[str, str] = {
    "data": "fine-tuning",
    "train": "train",
    "infer": "infer",
    "inference": "infer",
    "test": "infer",
}

_NAME_RE = re.compile(
    r"^(?P<prefix>[A-Za-z][A-Za-z0-9]*)_(?P<model>[A-Za-z0-9.\-]+?)for(?P<task>[A-Z][A-Za-z0-9]*)_"
    r"(?P<dataset>.+?)_(?P<start>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})_(?P<host>.+?)"
    r"(?P<suffix>\.[A-Za-z0-9]+)?$"
)

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


@dataclass(frozen=True, slots=True)
class RunFileName:
    """The parts of a run file name ``{prefix}_{MODEL}for{Task}_{dataset}_{start}_{host}.txt``."""

    prefix: str
    model: str
    task: str
    dataset: str
    start: dt.datetime
    host: str
    suffix: str = ""

    @property
    def run_id(self) -> str:
        when = f"{self.start:%Y-%m-%dT%H-%M-%S}"
        return f"{self.prefix}_{self.model}for{self.task}_{self.dataset}_{when}_{self.host}"

    @property
    def workload(self) -> str:
        return f"{self.model}__{self.task}__{self.dataset}"

    def format(self) -> str:
        return self.run_id + self.suffix


def parse_run_filename(name: str) -> RunFileName | None:
    """Parse a run file name (a path is fine: only its last part counts).

    The dataset part may contain ``_`` and the host ``-``: the timestamp anchors both.
    Returns ``None`` when the name does not follow the grammar (never raises).

    Examples
    --------
    >>> r = parse_run_filename("train_separated/infer_ViTB16forImageSemanticSegmentation_scene_parse_150_"
    ...                        "2025-05-13T08-15-30_htc-g004.txt")
    >>> r.prefix, r.model, r.task, r.dataset, r.host, r.start.isoformat()
    ('infer', 'ViTB16', 'ImageSemanticSegmentation', 'scene_parse_150', 'htc-g004', '2025-05-13T08:15:30')
    >>> r.format()
    'infer_ViTB16forImageSemanticSegmentation_scene_parse_150_2025-05-13T08-15-30_htc-g004.txt'
    >>> parse_run_filename("notes.txt") is None
    True
    """
    base = PurePosixPath(str(name).replace("\\", "/")).name
    m = _NAME_RE.match(base)
    if m is None:
        return None
    try:
        start = dt.datetime.strptime(m.group("start"), "%Y-%m-%dT%H-%M-%S")
    except ValueError:
        return None
    return RunFileName(
        m.group("prefix"),
        m.group("model"),
        m.group("task"),
        m.group("dataset"),
        start,
        m.group("host"),
        m.group("suffix") or "",
    )


def _derive_phase(prefix: str | None, split: str | None) -> str | None:
    if prefix and prefix.lower() in PREFIX_PHASE:
        return PREFIX_PHASE[prefix.lower()]
    return split


def _derive_mode(prefix: str | None, model: str | None) -> str | None:
    if model is None:
        return None
    return "llm" if (prefix == "data" or model.upper() in LLM_MODELS) else "nonllm"


def meta_from_name(name: str, platform: str | None = None) -> RunMeta:
    """:class:`RunMeta` from a run's file name alone (phase and mode derived from the prefix).

    >>> m = meta_from_name("data_LLAMAforTextClassification_imdb_2025-05-02T09-10-11_htc-g004.txt")
    >>> m.phase, m.mode, m.workload, m.hosts
    ('fine-tuning', 'llm', 'LLAMA__TextClassification__imdb', ('htc-g004',))
    """
    text = str(name)
    if "::" in text:  # an archive member: zips made on Windows separate folders with '\\'
        base = PurePosixPath(text.split("::")[-1].replace("\\", "/")).name
    else:  # a local path: on POSIX a backslash is part of the file name
        base = PurePosixPath(text).name
    r = parse_run_filename(base) if "\\" not in base else None
    stem = base.rsplit(".", 1)[0] if "." in base else base
    if r is None:
        return RunMeta(run_id=stem, platform=platform, source_path=str(name))
    return RunMeta(
        run_id=r.run_id,
        hosts=(r.host,),
        workload=r.workload,
        model=r.model,
        task=r.task,
        dataset=r.dataset,
        phase=_derive_phase(r.prefix, None),
        mode=_derive_mode(r.prefix, r.model),
        platform=platform,
        source_path=str(name),
        start_time=r.start.isoformat(),
        extra={"prefix": r.prefix},
    )


def _platform_of(name: str) -> str | None:
    m = _PLATFORM_RE.search(name)
    return m.group(1).lower() if m else None


# --------------------------------------------------------------------------------------------
# sources: where members live


@dataclass
class _Member:
    member: str  # path inside the archive, or the file's path
    archive: str | None
    split: str
    size: int
    container: str  # zip stem or folder holding the split folders


def _zip_members(path: Path, skipped: list[str]) -> list[_Member]:
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except zipfile.BadZipFile as exc:
        raise TelemetryError(
            f"not a readable zip archive ({exc}); re-download it (reveal-lab dataset pull) or check the copy",
            path=str(path),
        ) from None
    except OSError as exc:
        raise TelemetryError(f"cannot read the archive ({exc})", path=str(path)) from None
    out = []
    for info in infos:
        if info.is_dir():
            continue
        parts = PurePosixPath(info.filename).parts
        if any(p == "__MACOSX" for p in parts) or parts[-1].startswith("."):
            continue  # macOS metadata (.DS_Store, ._*): not data
        split = SPLIT_DIR_RE.match(parts[-2]) if len(parts) >= 2 else None
        if split is None or PurePosixPath(parts[-1]).suffix.lower() not in MEMBER_SUFFIXES:
            skipped.append(f"{path}::{info.filename}")
            continue
        out.append(_Member(info.filename, str(path), split.group("split").lower(), info.file_size, path.stem))
    return out


def _dir_members(split_dir: Path, skipped: list[str]) -> list[_Member]:
    split = SPLIT_DIR_RE.match(split_dir.name)
    assert split is not None
    out = []
    for p in sorted(split_dir.iterdir()):
        if p.name.startswith(".") or p.is_dir():
            if p.is_dir():
                skipped.append(str(p))
            continue
        if p.suffix.lower() not in MEMBER_SUFFIXES:
            skipped.append(str(p))
            continue
        out.append(
            _Member(str(p), None, split.group("split").lower(), p.stat().st_size, split_dir.parent.name)
        )
    return out


def _find_split_dirs(root: Path, depth: int = 2) -> list[Path]:
    found = []
    for d in sorted(root.iterdir()):
        if not d.is_dir() or d.name.startswith(".") or d.name == "__MACOSX":
            continue
        if SPLIT_DIR_RE.match(d.name):
            found.append(d)
        elif depth > 0:
            found += _find_split_dirs(d, depth - 1)
    return found


META_COLUMNS = (
    "source_file",
    "n_rows",
    "n_cols",
    "phase",
    "mode",
    "model",
    "task",
    "dataset",
    "model_task",
    "workload",
)


def _read_meta_csv(path: Path) -> pl.DataFrame:
    try:
        df = pl.read_csv(path, infer_schema=False)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as exc:
        raise TelemetryError(
            f"cannot read the metadata table ({str(exc).splitlines()[0]})", path=str(path)
        ) from None
    if "source_file" not in df.columns:
        raise TelemetryError(
            f"no 'source_file' column (found {df.columns[:6]}); expected the columns {list(META_COLUMNS)}",
            path=str(path),
            line=1,
        )
    casts = [  # "340" and "340.0" alike; anything else becomes null (unknown)
        pl.col(c).str.strip_chars().cast(pl.Float64, strict=False).cast(pl.Int64, strict=False)
        for c in ("n_rows", "n_cols")
        if c in df.columns
    ]
    df = df.with_columns(casts)
    for c in META_COLUMNS:
        if c not in df.columns:
            df = df.with_columns(pl.lit(None, pl.Int64 if c in ("n_rows", "n_cols") else pl.String).alias(c))
    base = pl.col("source_file").str.replace_all(r"\\", "/").str.split("/").list.last()
    return df.with_columns(
        base.str.replace(r"\.(txt|tsv|parquet)$", "").alias("run_id"),
        pl.col("source_file").str.extract(r"([A-Za-z]+)_sep[ae]rated", 1).str.to_lowercase().alias("split"),
        (pl.int_range(pl.len()) + 2).alias("meta_line"),
    )


# --------------------------------------------------------------------------------------------


@dataclass
class Reconciliation:
    """What ``meta_*.csv`` says against what the files are.

    ``missing_files``: meta rows without a file; ``extra_files``: files without a meta row;
    ``disagreements``: one row per (run, field) where meta and file differ (``field`` is
    one of model, task, dataset, workload, phase, n_cols, n_rows).
    """

    missing_files: pl.DataFrame
    extra_files: pl.DataFrame
    disagreements: pl.DataFrame
    per_platform: pl.DataFrame
    checked: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.missing_files.is_empty() and self.extra_files.is_empty() and self.disagreements.is_empty()

    def summary(self) -> str:
        lines = []
        for r in self.per_platform.iter_rows(named=True):
            state = (
                "matches its files" if r["missing"] == r["extra"] == r["disagreements"] == 0 else "MISMATCH"
            )
            lines.append(
                f"{r['platform']}: {r['meta_file'] or 'no meta file'}: {r['meta_rows']} rows, "
                f"{r['files']} files, {r['matched']} matched, {r['missing']} listed without a file, "
                f"{r['extra']} files not listed, "
                f"{r['disagreements']} disagreements — {state}"
            )
        return "\n".join(lines)


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
            from reveal_lab.io._load import read_parquet_run

            return read_parquet_run(data, name=self._label(row), meta=meta)
        from reveal_lab.io._tsv import read_public_tsv

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
        return pl.read_csv(p) if p.exists() else None

    # -- checks -----------------------------------------------------------------------------------
    def reconcile(self, *, check_cols: bool = False, check_rows: bool = False) -> Reconciliation:
        """Compare the ``meta_*.csv`` tables with the files.

        Names and workloads are always compared. ``check_cols`` reads each file's header to
        compare ``n_cols``; ``check_rows`` reads each whole file to compare ``n_rows``
        (slow on the full archives). ``n_cols`` may count the timestamp column or not, and
        ``n_rows`` the header line or not: either convention is accepted.
        """
        idx = self._index
        missing, extra, dis, per = [], [], [], []
        checked = ("names",) + (("n_cols",) if check_cols else ()) + (("n_rows",) if check_rows else ())
        platforms = sorted(set(idx.get_column("platform").drop_nulls().to_list()) | set(self.meta_tables))
        for plat in platforms:
            files = idx.filter(pl.col("platform") == plat)
            meta = self.meta_tables.get(plat)
            n_dis = 0
            if meta is None:
                per.append(
                    {
                        "platform": plat,
                        "meta_file": None,
                        "meta_rows": 0,
                        "files": files.height,
                        "matched": 0,
                        "missing": 0,
                        "extra": 0,
                        "disagreements": 0,
                    }
                )
                continue
            ids = set(files.get_column("run_id").to_list())
            meta_ids = set(meta.get_column("run_id").to_list())
            for r in meta.filter(~pl.col("run_id").is_in(list(ids))).iter_rows(named=True):
                missing.append(
                    {
                        "platform": plat,
                        "run_id": r["run_id"],
                        "source_file": r["source_file"],
                        "meta_line": r["meta_line"],
                    }
                )
            for r in files.filter(~pl.col("run_id").is_in(list(meta_ids))).iter_rows(named=True):
                extra.append({"platform": plat, "run_id": r["run_id"], "member": self._label(r)})
            joined = files.join(meta, on="run_id", how="inner", suffix="_meta")
            for r in joined.iter_rows(named=True):
                name = parse_run_filename(r["run_id"])
                file_vals: dict[str, Any] = {}
                if name is not None:
                    file_vals = {
                        "model": name.model,
                        "task": name.task,
                        "dataset": name.dataset,
                        "workload": name.workload,
                    }
                for f, v in file_vals.items():
                    mv = r.get(f"{f}_meta")
                    if mv is not None and str(mv) != str(v):
                        dis.append(
                            {
                                "platform": plat,
                                "run_id": r["run_id"],
                                "field": f,
                                "meta": str(mv),
                                "file": str(v),
                            }
                        )
                if r.get("split_meta") and r["split"] and r["split_meta"] != r["split"]:
                    dis.append(
                        {
                            "platform": plat,
                            "run_id": r["run_id"],
                            "field": "split",
                            "meta": r["split_meta"],
                            "file": r["split"],
                        }
                    )
                if check_cols and r.get("n_cols_meta") is not None:
                    try:
                        n = len(self.header(r["run_id"]))
                    except Exception:  # noqa: BLE001 - an unreadable header is listed by describe_dataset
                        continue
                    if r["n_cols_meta"] not in (n, n - 1):
                        dis.append(
                            {
                                "platform": plat,
                                "run_id": r["run_id"],
                                "field": "n_cols",
                                "meta": str(r["n_cols_meta"]),
                                "file": str(n),
                            }
                        )
                if check_rows and r.get("n_rows_meta") is not None:
                    try:
                        n = self._count_rows(r["run_id"])
                    except Exception:  # noqa: BLE001 - a broken file: describe_dataset lists why
                        continue
                    if r["n_rows_meta"] not in (n, n + 1):
                        dis.append(
                            {
                                "platform": plat,
                                "run_id": r["run_id"],
                                "field": "n_rows",
                                "meta": str(r["n_rows_meta"]),
                                "file": str(n),
                            }
                        )
            n_dis = len({d["run_id"] for d in dis if d["platform"] == plat})
            per.append(
                {
                    "platform": plat,
                    "meta_file": self.meta_files.get(plat),
                    "meta_rows": meta.height,
                    "files": files.height,
                    "matched": joined.height,
                    "missing": sum(1 for m in missing if m["platform"] == plat),
                    "extra": sum(1 for e in extra if e["platform"] == plat),
                    "disagreements": n_dis,
                }
            )
        return Reconciliation(
            pl.DataFrame(
                missing,
                schema={
                    "platform": pl.String,
                    "run_id": pl.String,
                    "source_file": pl.String,
                    "meta_line": pl.Int64,
                },
            ),
            pl.DataFrame(extra, schema={"platform": pl.String, "run_id": pl.String, "member": pl.String}),
            pl.DataFrame(
                dis,
                schema={
                    "platform": pl.String,
                    "run_id": pl.String,
                    "field": pl.String,
                    "meta": pl.String,
                    "file": pl.String,
                },
            ),
            pl.DataFrame(
                per,
                schema={
                    "platform": pl.String,
                    "meta_file": pl.String,
                    "meta_rows": pl.Int64,
                    "files": pl.Int64,
                    "matched": pl.Int64,
                    "missing": pl.Int64,
                    "extra": pl.Int64,
                    "disagreements": pl.Int64,
                },
            ),
            checked,
        )

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
