"""What ``meta_*.csv`` says against what the files are (:meth:`Dataset.reconcile`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from reveal_lab.io._names import parse_run_filename

__all__ = ["Reconciliation", "reconcile"]


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


def reconcile(ds: Any, *, check_cols: bool = False, check_rows: bool = False) -> Reconciliation:
    """Compare the ``meta_*.csv`` tables of ``ds`` (a :class:`~reveal_lab.io.Dataset`) with the files.

    Names and workloads are always compared. ``check_cols`` reads each file's header to
    compare ``n_cols``; ``check_rows`` reads each whole file to compare ``n_rows``
    (slow on the full archives). ``n_cols`` may count the timestamp column or not, and
    ``n_rows`` the header line or not: either convention is accepted.
    """
    idx = ds._index
    missing, extra, dis, per = [], [], [], []
    checked = ("names",) + (("n_cols",) if check_cols else ()) + (("n_rows",) if check_rows else ())
    platforms = sorted(set(idx.get_column("platform").drop_nulls().to_list()) | set(ds.meta_tables))
    for plat in platforms:
        files = idx.filter(pl.col("platform") == plat)
        meta = ds.meta_tables.get(plat)
        row = {"platform": plat, "meta_file": None, "meta_rows": 0, "files": files.height}
        if meta is None:
            per.append({**row, "matched": 0, "missing": 0, "extra": 0, "disagreements": 0})
            continue
        ids = set(files.get_column("run_id").to_list())
        meta_ids = set(meta.get_column("run_id").to_list())
        for r in meta.filter(~pl.col("run_id").is_in(list(ids))).iter_rows(named=True):
            missing.append({"platform": plat, **{k: r[k] for k in ("run_id", "source_file", "meta_line")}})
        for r in files.filter(~pl.col("run_id").is_in(list(meta_ids))).iter_rows(named=True):
            extra.append({"platform": plat, "run_id": r["run_id"], "member": ds._label(r)})
        joined = files.join(meta, on="run_id", how="inner", suffix="_meta")
        for r in joined.iter_rows(named=True):
            dis += [
                {"platform": plat, "run_id": r["run_id"], "field": f, "meta": m, "file": v}
                for f, m, v in _disagreements(ds, r, check_cols, check_rows)
            ]
        per.append(
            {
                **row,
                "meta_file": ds.meta_files.get(plat),
                "meta_rows": meta.height,
                "matched": joined.height,
                "missing": sum(1 for m in missing if m["platform"] == plat),
                "extra": sum(1 for e in extra if e["platform"] == plat),
                "disagreements": len({d["run_id"] for d in dis if d["platform"] == plat}),
            }
        )
    return Reconciliation(
        pl.DataFrame(missing, schema=_MISSING_SCHEMA),
        pl.DataFrame(extra, schema={"platform": pl.String, "run_id": pl.String, "member": pl.String}),
        pl.DataFrame(dis, schema=_DISAGREEMENT_SCHEMA),
        pl.DataFrame(per, schema=_PER_PLATFORM_SCHEMA),
        checked,
    )


_MISSING_SCHEMA = {
    "platform": pl.String,
    "run_id": pl.String,
    "source_file": pl.String,
    "meta_line": pl.Int64,
}
_DISAGREEMENT_SCHEMA = {
    "platform": pl.String,
    "run_id": pl.String,
    "field": pl.String,
    "meta": pl.String,
    "file": pl.String,
}
_PER_PLATFORM_SCHEMA = {
    "platform": pl.String,
    "meta_file": pl.String,
    "meta_rows": pl.Int64,
    "files": pl.Int64,
    "matched": pl.Int64,
    "missing": pl.Int64,
    "extra": pl.Int64,
    "disagreements": pl.Int64,
}


def _disagreements(
    ds: Any, r: dict[str, Any], check_cols: bool, check_rows: bool
) -> list[tuple[str, str, str]]:
    """``(field, meta's value, the file's value)`` where a meta row ``r`` (joined with its
    file, meta columns suffixed ``_meta``) disagrees with the file: the name's model, task,
    dataset and workload, the split, and (when asked) ``n_cols`` and ``n_rows``."""
    out: list[tuple[str, str, str]] = []
    name = parse_run_filename(r["run_id"])
    if name is not None:
        for f in ("model", "task", "dataset", "workload"):
            v = getattr(name, f)
            mv = r.get(f"{f}_meta")
            if mv is not None and str(mv) != str(v):
                out.append((f, str(mv), str(v)))
    if r.get("split_meta") and r["split"] and r["split_meta"] != r["split"]:
        out.append(("split", r["split_meta"], r["split"]))
    if check_cols and r.get("n_cols_meta") is not None:
        try:
            n = len(ds.header(r["run_id"]))
        except Exception:  # noqa: BLE001 - an unreadable header is listed by describe_dataset
            return out
        if r["n_cols_meta"] not in (n, n - 1):
            out.append(("n_cols", str(r["n_cols_meta"]), str(n)))
    if check_rows and r.get("n_rows_meta") is not None:
        try:
            n = ds._count_rows(r["run_id"])
        except Exception:  # noqa: BLE001 - a broken file: describe_dataset lists why
            return out
        if r["n_rows_meta"] not in (n, n + 1):
            out.append(("n_rows", str(r["n_rows_meta"]), str(n)))
    return out
