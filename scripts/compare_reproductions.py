"""Compare two ``reveal-lab reproduce`` output folders: are the tables and claims the same?

Every ``tables/*.csv``, ``pruning*.json``, ``skipped_runs.csv``, ``paper_vs_reproduced.csv``
and ``reliability_vs_paper.csv`` of either folder is compared byte for byte with the other's;
a file only one of them holds is missing in the other (a difference). The
tables of notebooks marked ``alone`` in the manifest (they time things on the machine) are
listed as measured, not compared. For the claims files, the rows that differ are named by
their ``claim_id`` (columns ``data`` and ``machine`` left out: they name the folder and the
machine). Exit status 0 when every file is in both and equal, 1 otherwise (also when
neither folder holds a table), 2 when a folder is not a reproduce output.

Usage::

    python scripts/compare_reproductions.py out/reproduce-before out/reproduce
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from reveal_lab.notebooks import load_manifest

CLAIMS = ("paper_vs_reproduced.csv", "reliability_vs_paper.csv")
LEFT_OUT = ("data", "machine")


def measured_tables(manifest: Path | None = None) -> set[str]:
    """``tables/NAME.csv`` of the notebooks the manifest marks ``alone``."""
    m = load_manifest(manifest)
    return {f"tables/{t}.csv" for e in m.notebooks if e.alone for t in e.tables}


def outputs(folder: Path) -> list[str]:
    names = [p.relative_to(folder).as_posix() for p in sorted((folder / "tables").glob("*.csv"))]
    names += [p.name for p in sorted(folder.glob("pruning*.json"))]
    names += [n for n in ("skipped_runs.csv", *CLAIMS) if (folder / n).exists()]
    return names


def claim_rows(path: Path) -> dict[str, dict]:
    df = pl.read_csv(path, infer_schema_length=0)
    key = df.columns[0]
    return {r[key]: {k: v for k, v in r.items() if k not in LEFT_OUT} for r in df.iter_rows(named=True)}


def compare(a: Path, b: Path, measured: set[str]) -> tuple[list[str], list[str], list[str], list[str]]:
    """``(equal, differ, missing, measured)`` over the outputs of both folders: ``missing``
    names each file one side lacks (``NAME (not in B)``); a differing claims file is
    followed by ``file: claim_id`` entries naming its rows."""
    equal, differ, missing, skipped = [], [], [], []
    in_a, in_b = set(outputs(a)), set(outputs(b))
    for name in sorted(in_a | in_b):
        if name in measured:
            skipped.append(name)
            continue
        if name not in in_a or name not in in_b:
            missing.append(f"{name} (not in {b if name in in_a else a})")
            continue
        if (a / name).read_bytes() == (b / name).read_bytes():
            equal.append(name)
        elif name in CLAIMS:
            ra, rb = claim_rows(a / name), claim_rows(b / name)
            rows = sorted(k for k in ra.keys() | rb.keys() if ra.get(k) != rb.get(k))
            (differ if rows else equal).append(name)
            differ.extend(f"{name}: {k}" for k in rows)
        else:
            differ.append(name)
    return equal, differ, missing, skipped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path, help="one reproduction's output folder")
    ap.add_argument("b", type=Path, help="the other's")
    ap.add_argument("--manifest", type=Path, default=None, help="the manifest (default: notebooks/manifest.yml)")
    args = ap.parse_args(argv)
    for folder in (args.a, args.b):
        if not (folder / "tables").is_dir():
            print(f"compare_reproductions: {folder} has no tables/ folder (not a reproduce output)", file=sys.stderr)
            return 2
    equal, differ, missing, measured = compare(args.a, args.b, measured_tables(args.manifest))
    print(f"{len(equal)} equal, {len(differ)} differ, {len(missing)} in one folder only, "
          f"{len(measured)} measured on the machine (not compared)")
    for label, names in (("differ", differ), ("missing", missing), ("measured", measured)):
        for n in names:
            print(f"  {label}: {n}")
    if not (equal or differ or missing):
        print(f"  neither {args.a} nor {args.b} holds a table: nothing was compared")
        return 1
    return 0 if not differ and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
