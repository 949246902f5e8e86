"""``reveal-lab synth public OUT``: a dataset in the public Reveal layout, with its quirks."""

from __future__ import annotations

import argparse

from reveal_lab.cli._ranges import float_in, int_in


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = sub.add_parser("synth", help="write seeded synthetic datasets (a public-layout proxy)")
    verbs = p.add_subparsers(dest="synth_command", metavar="VERB")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    q = verbs.add_parser(
        "public",
        help="a dataset in the public Reveal layout with its quirks, for trying studies at scale",
        description="Write Reveal_GPU.zip and Reveal_CPU.zip (train_separated/, infer_separated/ and a "
        "misspelt infer_seperated/, a .DS_Store, tab-separated text, ~765 channels per GPU host and ~790 "
        "per CPU host, one two-host file per platform, all-missing and all-zero columns), meta_gpu.csv "
        "that disagrees with its files, meta_cpu.csv that matches, and truth.csv (the planted anomalies: "
        "every fourth run). --scale K writes 2K workloads per platform.",
    )
    q.add_argument("out", help="output folder (created)")
    q.add_argument("--scale", type=int_in(1, 1000), default=1, metavar="K", help="workloads: 2K per platform")
    q.add_argument(
        "--runs-per-workload", type=int_in(1, 10_000), default=10, metavar="N", help="runs per workload (10)"
    )
    q.add_argument(
        "--seconds", type=float_in(1, 86_400), default=240.0, help="length of each run, 100 ms samples (240)"
    )
    q.add_argument("--seed", type=int_in(0, 2**31 - 1), default=0, help="random seed (0)")
    q.add_argument(
        "--no-bad-inputs",
        action="store_true",
        help="leave out the damaged zip member, the header without timestamp column and the meta row "
        "naming a missing file",
    )
    q.set_defaults(func=_public)


def _public(args: argparse.Namespace) -> int:
    from pathlib import Path

    from reveal_lab.synth import write_public_proxy

    out = Path(args.out)
    s = write_public_proxy(
        out,
        args.scale,
        runs_per_workload=args.runs_per_workload,
        seconds=args.seconds,
        seed=args.seed,
        bad_inputs=not args.no_bad_inputs,
    )
    print(
        f"{out}: {s['runs']} runs ({s['two_host_files']} two-host files, {s['planted']} with a planted "
        f"anomaly, truth.csv), {int(s['bytes']) / 1e6:.0f} MB of zips"
    )
    for line in s["bad"]:  # type: ignore[union-attr]
        print(f"  bad input on purpose: {line}")
    return 0
