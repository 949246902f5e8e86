"""``reveal-lab compare A_RUNS... --vs B_RUNS...``: judge a fix by anomalous-window shares and throughput.

Runs are host files (Parquet, collector folders), run stems of ``--data``, or selectors over
its ``meta_lab.csv`` such as ``case=irq:after``, ``model=DDPCNN,fault=none`` or ``fault^=packet_loss``
(starts with). Writes
``compare.csv``, ``compare.md``, ``compare_runs.csv`` and ``figures/compare.{png,pdf}``.
"""

from __future__ import annotations

import argparse

from reveal_lab.cli._ranges import int_in
from reveal_lab.cli._policy import add_policy_arguments, policy_from_args

#: bootstrap resamples at most (memory: resamples x runs x compared quantities)
MAX_BOOTSTRAP = 20_000


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = sub.add_parser(
        "compare",
        help="before/after: anomalous-window shares per subsystem and metric, and throughput, "
        "with bootstrap intervals over runs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "a", nargs="+", metavar="A_RUNS", help="side A (e.g. before the fix, or the healthy setting)"
    )
    p.add_argument("--vs", nargs="+", required=True, metavar="B_RUNS", help="side B")
    p.add_argument("--data", default=None, help="dataset for run stems and selectors (default: data/lab)")
    p.add_argument("--out", default="results/compare", help="output folder")
    p.add_argument("--name", default="compare", help="file name stem of the outputs")
    p.add_argument(
        "--reference",
        default="a",
        choices=("a", "self"),
        help="a (default): fit the detectors on side A's runs (A's own runs leave-one-out); "
        "self: each run on itself (the paper's setting: compares the anomalies' composition)",
    )
    p.add_argument("--preset", default="paper", help="window/detector preset")
    p.add_argument(
        "--bootstrap", type=int_in(1, MAX_BOOTSTRAP), default=2000, help="bootstrap resamples (default 2000)"
    )
    p.add_argument("--seed", type=int_in(0, 2**32 - 1), default=0, help="bootstrap seed")
    add_policy_arguments(p, ("false_alarm_rate", "min_agreement", "min_run", "trim", "prune", "sentinel_samples"))
    p.add_argument("--a-label", default="A", help="name of side A in tables and figure")
    p.add_argument("--b-label", default="B", help="name of side B")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from reveal_lab.compare import compare_runs

    cmp = compare_runs(
        args.a,
        args.vs,
        data=args.data,
        reference=args.reference,
        preset=args.preset,
        policy=policy_from_args(args),
        n_boot=args.bootstrap,
        seed=args.seed,
        a_label=args.a_label,
        b_label=args.b_label,
    )
    paths = cmp.write(args.out, name=args.name)
    print(paths["md"].read_text())
    print(f"written to {args.out}: " + ", ".join(p.name for p in paths.values()))
    return 0
