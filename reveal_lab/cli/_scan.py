"""``reveal-lab scan DATA``: per-run detection over a whole dataset, plus cross-run studies, on Dask."""

from __future__ import annotations

import argparse

from reveal_lab.cli._policy import add_policy_arguments, policy_from_args
from reveal_lab.cli._ranges import int_in

#: the largest local cluster and submission window scan starts
MAX_WORKERS = 1024


def _memory_limit(text: str) -> str:
    """A worker memory limit such as ``4GB``, at least :data:`reveal_lab.scale.MIN_MEMORY_LIMIT`."""
    from dask.utils import parse_bytes

    from reveal_lab.scale import MIN_MEMORY_LIMIT

    try:
        n = parse_bytes(text)
    except (ValueError, TypeError):
        raise argparse.ArgumentTypeError(f"expected a size such as 512MB or 4GB, got {text!r}") from None
    if not MIN_MEMORY_LIMIT <= n <= 2**50:
        raise argparse.ArgumentTypeError(
            f"expected a size from {MIN_MEMORY_LIMIT // 1_000_000}MB (what a worker needs for its "
            f"interpreter and one run; below it Dask restarts the worker over and over) to 1PB, got {text!r}"
        )
    return text


_memory_limit.range_text = "512MB–1PB"  # type: ignore[attr-defined]

FILTERS = ("platform", "phase", "mode", "model", "task", "dataset", "workload", "host")
STUDIES = ("pruning", "dtw", "granularity")


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = sub.add_parser(
        "scan",
        help="detect anomalies in every run of a dataset on a Dask cluster (+ cross-run studies)",
        description=(
            "Run per-run detection (load, features, detectors, attribution) over every run of a "
            "dataset as Dask tasks, each worker streaming its run out of the zip archive, then "
            "optionally the cross-run studies. Default: a LocalCluster sized to this machine."
        ),
    )
    p.add_argument("data", help="dataset root (public layout: Reveal_GPU.zip / Reveal_CPU.zip / meta_*.csv)")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help="a running Dask scheduler (workers need reveal-lab and the data at the same path)",
    )
    where.add_argument(
        "--workers",
        type=int_in(1, MAX_WORKERS),
        metavar="N",
        help="local cluster size (default: one per core)",
    )
    where.add_argument(
        "--inprocess", action="store_true", help="no Dask: the same per-run code serially here"
    )
    p.add_argument(
        "--memory-limit",
        type=_memory_limit,
        metavar="BYTES",
        help="per local worker, e.g. 4GB (default: 80%% RAM / N)",
    )
    p.add_argument(
        "--max-in-flight",
        type=int_in(1, 100 * MAX_WORKERS),
        metavar="K",
        help="runs submitted at once (default 2 per worker)",
    )
    p.add_argument("--preset", default="paper", help="window and detector settings (paper, smoke)")
    # each run detected alone: the decisions of a run alone
    add_policy_arguments(
        p,
        ("thresholds", "false_alarm_rate", "min_agreement", "min_run", "trim", "prune", "sentinel_samples",
         "outlier_fence"),
    )
    p.add_argument(
        "--out", metavar="DIR", help="write anomalies.csv, runs.csv, failures.json, scan.json here"
    )
    p.add_argument("--run-id", action="append", metavar="ID", help="only this run (repeatable)")
    p.add_argument(
        "--limit", type=int_in(1, 10**9), metavar="N", help="only the first N runs (after filters)"
    )
    p.add_argument(
        "--studies",
        default="",
        metavar="LIST",
        help=f"comma-separated cross-run studies to run on the cluster: {','.join(STUDIES)}",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    for f in FILTERS:
        p.add_argument(f"--{f}", metavar="VALUE", help=f"only runs whose {f} is VALUE")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import logging

    from reveal_lab.scale import INPROCESS, run_refs, scan

    if not args.verbose and not args.inprocess:
        # the local scheduler's and nannies' INFO lines would bury the progress bar
        import distributed  # noqa: F401 - sets up its loggers, whose levels we lower

        for name in list(logging.root.manager.loggerDict):
            if name == "distributed" or name.startswith("distributed."):
                logging.getLogger(name).setLevel(logging.WARNING)

    studies = [s.strip() for s in args.studies.split(",") if s.strip()]
    unknown = sorted(set(studies) - set(STUDIES))
    if unknown:
        raise ValueError(f"unknown studies {unknown}; expected some of {list(STUDIES)}")
    policy = policy_from_args(args)
    if isinstance(policy.prune, str):
        from reveal_lab.pipeline import load_pruning

        policy = policy.with_(prune=load_pruning(policy.prune))  # read once, pickled to the workers
    filters = {f: getattr(args, f) for f in FILTERS if getattr(args, f)}
    refs = run_refs(args.data, filters, args.run_id)
    if args.limit is not None:
        refs = refs[: args.limit]
    if not refs:
        raise ValueError(f"no runs in {args.data} match {filters or 'the dataset'}")
    res = scan(
        args.data,
        refs=refs,
        task_kwargs={"preset": args.preset, "policy": policy},
        scheduler=INPROCESS if args.inprocess else args.scheduler,
        n_workers=args.workers,
        memory_limit=args.memory_limit,
        max_in_flight=args.max_in_flight,
        progress=not args.no_progress,
        studies=studies,
        studies_kwargs={"preset": args.preset},
        echo=print,
    )
    an = res.anomalies
    print(
        f"{len(res.outcomes)} run(s) in {res.seconds:.1f} s on {res.n_workers} worker(s) "
        f"({res.runs_per_minute:.1f} runs/min, {res.backend}); "
        f"{an.get_column('window_id').len() if an.height else 0} evidence row(s), "
        f"{len(res.failures)} failed"
    )
    for o in res.failures:
        print(f"FAILED {o.run_id} ({o.archive}:{o.member}): {o.error}")
    if args.out:
        out = res.write(args.out)
        from reveal_lab.reliability import scan_lemon_hosts

        scan_lemon_hosts(res.anomalies, res.runs).write_csv(out / "lemon_hosts.csv")
        print(f"wrote {out}/anomalies.csv, runs.csv, failures.json, scan.json, lemon_hosts.csv")
    return 1 if res.failures and not res.succeeded else 0
