"""Record and compare what two source trees decide on the bundled lab runs.

``record TREE OUT`` runs ``reveal-lab`` from the source tree ``TREE`` (``PYTHONPATH=TREE``,
data read from ``TREE/data/lab``) and keeps under ``OUT``:

* ``detect`` on a fault-free run alone, on a faulty run alone, and on the faulty run with
  three fault-free ``--baseline`` runs of its workload (``OUT/<case>/anomalies.csv``);
* ``evaluate --json`` on the runs of two workloads of ``data/lab`` (:data:`EVALUATE_RUNS`:
  12 runs, a storage and a CPU fault among them; ``OUT/evaluate.json``, the pruned space,
  and ``OUT/evaluate_all.json``, every metric). The whole dataset takes about 45 s a run
  and space on a shared 2-core machine; ``--all-runs`` asks for it.

``compare A B`` says, file by file, whether the two recordings decide the same windows:
the ``anomalies.csv`` frames equal row for row, and every value of ``A``'s evaluate JSON
outside ``settings`` equal in ``B`` (``B`` may add keys: they are listed, not counted as a
difference). ``settings`` (how the evaluation ran: the data folder, its seconds, how a
setting is written) are listed where they differ, not counted. Exit status 0 when all are
equal, 1 otherwise.

Usage (two trees: ``git worktree add /work/wt-before <commit>`` gives the older one)::

    python scripts/compare_outputs.py record /work/wt-before /tmp/outputs-before
    python scripts/compare_outputs.py record . /tmp/outputs-after
    python scripts/compare_outputs.py compare /tmp/outputs-before /tmp/outputs-after
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl

LAB = Path("data/lab")
INFER = LAB / "infer_separated"
FAULT_FREE = INFER / "infer_CNNforImageClassification_synthetic_2026-11-26T07-58-55_labA.parquet"
FAULTY = INFER / "infer_CNNforImageClassification_synthetic_2026-11-26T08-29-21_labA.parquet"
BASELINE = [
    INFER / f"infer_CNNforImageClassification_synthetic_2026-11-26T{t}_labA.parquet"
    for t in ("08-19-13", "08-37-59", "08-56-54")
]
#: the workloads whose runs ``evaluate`` scores (every fault-free run of a workload is a
#: baseline run of the others)
EVALUATE_WORKLOADS = ("CNN__ImageClassification__synthetic",)
#: case name -> ``detect`` arguments (paths relative to the tree)
DETECT_CASES: dict[str, list[str]] = {
    "fault_free_alone": [str(FAULT_FREE)],
    "faulty_alone": [str(FAULTY)],
    "faulty_baseline": [str(FAULTY), "--baseline", *map(str, BASELINE)],
}


def _cli(tree: Path, args: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    env.pop("REVEAL_DATA_DIR", None)
    code = "import sys; from reveal_lab.cli import main; sys.exit(main(sys.argv[1:]))"
    print("+ reveal-lab " + " ".join(args), flush=True)
    subprocess.run([sys.executable, "-c", code, *args], cwd=tree, env=env, check=True)


def evaluate_runs(tree: Path) -> list[str]:
    """The runs (``meta_lab.csv``'s ``run``) of :data:`EVALUATE_WORKLOADS` in ``tree``'s ``data/lab``."""
    meta = pl.read_csv(tree / LAB / "meta_lab.csv", infer_schema_length=0)
    rows = meta.filter(pl.col("workload").is_in(EVALUATE_WORKLOADS))
    return rows["run"].unique(maintain_order=True).to_list()


def record(tree: Path, out: Path, *, all_runs: bool = False) -> None:
    """Run the cases of the module doc from ``tree`` into ``out``."""
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for case, args in DETECT_CASES.items():
        _cli(tree, ["detect", *args, "--out", str(out / case)])
    runs = [] if all_runs else ["--runs", ",".join(evaluate_runs(tree))]
    _cli(
        tree,
        ["evaluate", "--out", str(out / "evaluate"), "--json", str(out / "evaluate.json"), "--no-evidence", *runs],
    )


def _json_diff(a: object, b: object, where: str, diffs: list[str], added: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                diffs.append(f"{where}.{k}: missing in B")
            else:
                _json_diff(a[k], b[k], f"{where}.{k}", diffs, added)
        added.extend(f"{where}.{k}" for k in b if k not in a)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _json_diff(x, y, f"{where}[{i}]", diffs, added)
    elif a != b:
        diffs.append(f"{where}: {a!r} != {b!r}")


def compare(a: Path, b: Path) -> int:
    """Print one line per compared file; 0 when every one is equal."""
    bad = 0
    for case in DETECT_CASES:
        fa, fb = a / case / "anomalies.csv", b / case / "anomalies.csv"
        x, y = pl.read_csv(fa), pl.read_csv(fb)
        same = x.columns == y.columns and x.equals(y)
        bad += not same
        print(f"{case}/anomalies.csv: {'equal' if same else 'DIFFERENT'} ({x.height} vs {y.height} rows)")
    for name in sorted(p.name for p in a.glob("evaluate*.json")):
        diffs: list[str] = []
        added: list[str] = []
        ja, jb = json.loads((a / name).read_text()), json.loads((b / name).read_text())
        sa, sb = ja.pop("settings", {}), jb.pop("settings", {})
        _json_diff(ja, jb, "", diffs, added)
        bad += bool(diffs)
        print(f"{name}: {'equal' if not diffs else 'DIFFERENT'} ({len(diffs)} values differ)")
        for d in diffs[:20]:
            print(f"  {d}")
        if added:
            print(f"  keys only in B: {', '.join(added)}")
        notes: list[str] = []
        _json_diff(sa, sb, "settings", notes, [])
        for n in notes:
            print(f"  (not counted) {n}")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="run the cases from a source tree")
    r.add_argument("tree", type=Path)
    r.add_argument("out", type=Path)
    r.add_argument("--all-runs", action="store_true", help="evaluate every run of data/lab")
    c = sub.add_parser("compare", help="compare two recordings")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "record":
        record(args.tree, args.out, all_runs=args.all_runs)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
