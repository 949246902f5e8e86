"""Describe a local dataset copy (what ``reveal-lab dataset info`` prints)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import polars as pl

from reveal_lab.io._public import Dataset
from reveal_lab.telemetry import TelemetryError, catalogue, parse_metric_name

__all__ = ["describe_dataset"]


def _counts(index: pl.DataFrame, *by: str) -> list[dict[str, Any]]:
    return index.group_by(list(by)).len("runs").sort(list(by), nulls_last=True).to_dicts()


def describe_dataset(ds: Dataset, *, headers: bool = True, check_rows: bool = False) -> dict[str, Any]:
    """Counts per platform/phase/model/task/host, columns per platform, meta mismatches.

    ``headers`` reads each run's header line (streamed; no data rows) to count columns,
    hosts per file and metrics per subsystem; ``check_rows`` also loads every file and
    member whole with the validation :meth:`Dataset.load` does (ragged rows, non-numeric
    values, duplicate columns, timestamps going backwards, corrupt members or Parquet
    pages), lists every broken one with its reason under ``unreadable`` and goes on, and
    compares ``n_rows`` with the meta tables (slow on the full archives).

    >>> from reveal_lab.io import open_dataset
    >>> from reveal_lab.io._sample import sample_dir
    >>> d = describe_dataset(open_dataset(sample_dir()))
    >>> d["runs"], d["columns"]["gpu"]["n_cols"], d["columns"]["cpu"]["multi_host_files"]
    (11, [85], ['train_BERTLARGEforTextClassification_imdb_2025-06-05T14-20-31_nserver07'])
    """
    idx = ds.index
    out: dict[str, Any] = {
        "root": str(ds.root),
        "runs": idx.height,
        "per_platform": {r["platform"]: r["runs"] for r in _counts(idx, "platform")},
        "sources": _counts(
            idx.with_columns(pl.coalesce("archive", pl.lit("(unzipped)")).alias("source")),
            "source",
            "platform",
        ),
        "platform_phase": _counts(idx, "platform", "phase", "mode"),
        "model": _counts(idx, "platform", "model"),
        "task": _counts(idx, "platform", "task"),
        "host": _counts(idx, "platform", "host"),
        "columns": {},
        "unreadable": [],
        "skipped": list(ds.skipped),
        "warnings": list(ds.warnings),
    }
    if headers:
        for plat in sorted(set(idx.get_column("platform").drop_nulls().to_list())):
            ids = idx.filter(pl.col("platform") == plat).get_column("run_id").to_list()
            n_cols: Counter[int] = Counter()
            column_sets: set[tuple[str, ...]] = set()
            keys: dict[str, None] = {}
            multi, unparsed = [], set()
            for run_id in ids:
                try:
                    header = ds.header(run_id)
                except TelemetryError as exc:
                    out["unreadable"].append(str(exc))
                    continue
                except Exception as exc:  # noqa: BLE001 - e.g. a corrupt Parquet footer: name the file
                    out["unreadable"].append(f"{ds._label(ds.row(run_id))}: {type(exc).__name__}: {exc}")
                    continue
                metrics = [c for c in header[1:] if c != "timestamp"]
                n_cols[len(header)] += 1
                hosts = set()
                key_set = []
                for c in metrics:
                    m = parse_metric_name(c)
                    if m is None:
                        unparsed.add(c)
                        key_set.append(c)
                        continue
                    hosts.add(m.host)
                    keys.setdefault(m.key(), None)
                    key_set.append(m.key())
                column_sets.add(tuple(sorted(set(key_set))))
                if len(hosts) > 1:
                    multi.append(run_id)
            # one representative column name per host-free key, to classify it
            cat = catalogue([f"{k}.h[x]" for k in keys]) if keys else None
            out["columns"][plat] = {
                "files": len(ids),
                "n_cols": sorted(n_cols),
                "n_cols_counts": {str(k): v for k, v in sorted(n_cols.items())},
                "distinct_metric_sets": len(column_sets),
                "metrics": len(keys),
                "metrics_per_subsystem": dict(cat.group_by("subsystem").len().sort("subsystem").rows())
                if cat is not None
                else {},
                "metrics_per_kind": dict(cat.group_by("kind").len().sort("kind").rows())
                if cat is not None
                else {},
                "multi_host_files": multi,
                "unparsed_columns": sorted(unparsed),
            }
    if check_rows:
        out["checked_runs"] = _check_every_run(ds, out["unreadable"])
        # one line per file: the full load's reason replaces the header's
        last = {m.split(": ", 1)[0]: m for m in out["unreadable"]}
        out["unreadable"] = list(last.values())
    rec = ds.reconcile(check_cols=headers, check_rows=check_rows)
    out["reconcile"] = {
        "checked": list(rec.checked),
        "ok": rec.ok,
        "summary": rec.summary(),
        "per_platform": rec.per_platform.to_dicts(),
        "missing_files": rec.missing_files.to_dicts(),
        "extra_files": rec.extra_files.to_dicts(),
        "disagreements": rec.disagreements.to_dicts(),
    }
    return out


def _check_every_run(ds: Dataset, unreadable: list[str]) -> dict[str, int]:
    """Load every run as :meth:`Dataset.load` does; each failure becomes one line of
    ``unreadable`` naming the file or member and the reason. Returns the counts."""
    import warnings

    ok = bad = 0
    for run_id in ds.run_ids:
        label = ds._label(ds.row(run_id))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the load's notes are not failures
                ds.load(run_id)
        except TelemetryError as exc:
            unreadable.append(str(exc) if label in str(exc) else f"{label}: {exc}")
            bad += 1
        except Exception as exc:  # noqa: BLE001 - pyarrow/polars/zipfile raise many types: name the file
            unreadable.append(f"{label}: {type(exc).__name__}: {exc}")
            bad += 1
        else:
            ok += 1
    return {"loaded": ok, "broken": bad}
