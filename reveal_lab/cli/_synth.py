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
    q.add_argument("out", help="output folder: made, or empty (see --overwrite); written whole or not at all")
    q.add_argument("--overwrite", action="store_true", help="replace a non-empty OUT whole (its files are lost)")
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
    import sys
    from pathlib import Path

    from reveal_lab.synth import proxy_size, write_public_proxy

    out = Path(args.out)
    size = proxy_size(args.scale, args.runs_per_workload, args.seconds, bad_inputs=not args.no_bad_inputs)
    _check_room(out, size)
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    s = write_public_proxy(
        out,
        args.scale,
        runs_per_workload=args.runs_per_workload,
        seconds=args.seconds,
        seed=args.seed,
        bad_inputs=not args.no_bad_inputs,
        overwrite=args.overwrite,
        progress=say,
    )
    print(
        f"{out}: {s['runs']} runs ({s['two_host_files']} two-host files, {s['planted']} with a planted "
        f"anomaly, truth.csv), {int(s['bytes']) / 1e6:.0f} MB of zips"
    )
    for line in s["bad"]:  # type: ignore[union-attr]
        print(f"  bad input on purpose: {line}")
    return 0


def _gb(n: float) -> str:
    """``n`` bytes in MB or GB.

    >>> _gb(2.5e6), _gb(3.2e9)
    ('2.5 MB', '3.2 GB')
    """
    return f"{n / 1e9:,.1f} GB" if n >= 1e9 else f"{n / 1e6:,.1f} MB"


def _check_room(out, size: dict[str, float]) -> None:  # noqa: ANN001 - a Path
    """Refuse (``ValueError``) one run larger than the memory this process may use (the
    machine's, or its address-space limit) and a dataset larger than the free space where
    it goes, before anything is made."""
    import resource
    import shutil

    memory, why = _memory_bound()
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and (memory is None or soft < memory):
        memory, why = float(soft), "its address-space limit"
    if memory is not None and size["run_memory_bytes"] > memory:
        raise ValueError(
            f"one run of this length needs about {_gb(size['run_memory_bytes'])} of memory while it is made, "
            f"more than this process may use ({_gb(memory)}, {why}); give a smaller --seconds"
        )
    where = out.absolute()
    while not where.exists():
        where = where.parent
    free = shutil.disk_usage(where).free
    if size["zip_bytes"] > free:
        raise ValueError(
            f"{out}: {size['runs']:,} runs need about {_gb(size['zip_bytes'])}, and {where} has "
            f"{_gb(free)} free; give a smaller --scale, --runs-per-workload or --seconds"
        )


def _memory_bound() -> tuple[float | None, str]:
    """This machine's memory in bytes (``None`` where it cannot be read) and its name."""
    import os

    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")), "this machine's memory"
    except (ValueError, OSError):
        return None, ""
