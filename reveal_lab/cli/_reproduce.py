"""``reveal-lab reproduce``: run every study notebook and build the report folder."""

from __future__ import annotations

import argparse

from reveal_lab.cli._ranges import int_in

MAX_JOBS = 64
#: Dask worker processes --workers may start (the notebooks' ``workers`` has the same bound)
MAX_WORKERS = 512


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = sub.add_parser(
        "reproduce",
        help="run the paper's studies (notebooks) and write figures, tables and index.html",
        description="Execute the study notebooks of notebooks/manifest.yml with papermill, in order, and "
        "write OUT/notebooks (executed), OUT/figures (PNG, PDF), OUT/tables (CSV, Markdown) and "
        "OUT/index.html. Stops at the first failing cell and shows it.",
    )
    p.add_argument(
        "--preset",
        choices=("smoke", "full"),
        default="full",
        help="smoke: every figure on a tiny subset (a minute or two); full: on the whole dataset (default)",
    )
    p.add_argument(
        "--data",
        default=None,
        help="dataset folder (the bundled data/lab by default; a public-dataset copy works too; "
        "'synth' for seeded synthetic runs, unless a folder of that name exists: a path that exists is "
        "always read as your data)",
    )
    p.add_argument("--out", default="out/reproduce", help="output folder (default: out/reproduce)")
    p.add_argument(
        "--only",
        action="append",
        metavar="NOTEBOOK",
        help="run only this notebook (name or stem, e.g. 05-dtw-reproducibility); repeatable",
    )
    p.add_argument("--manifest", default=None, help="manifest file (default: notebooks/manifest.yml)")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a notebook parameter, given to every notebook whose parameters cell declares NAME "
        "(e.g. max_runs_per_workload=4); a name no notebook declares is an error that lists them; repeatable",
    )
    p.add_argument(
        "--platform",
        choices=("each", "gpu", "cpu", "all"),
        default=None,
        help="the runs the studies use (the notebooks' parameter 'platform'): each: every platform of the "
        "data studied apart, its rows under a 'platform' column and its figures as NAME--PLATFORM, the "
        "outputs of 'all' when the data has one platform (default); gpu, cpu: one platform's hosts; "
        "all: every run together",
    )
    p.add_argument(
        "--workers",
        type=int_in(1, MAX_WORKERS),
        default=None,
        metavar="N",
        help="run the studies' per-run work on a local Dask cluster of N worker processes "
        "(the notebooks' parameter 'workers'; default: in the notebook's own process)",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="tcp://HOST:PORT",
        help="run the studies' per-run work on this Dask scheduler (the notebooks' parameter 'scheduler')",
    )
    p.add_argument(
        "--jobs",
        type=int_in(1, MAX_JOBS),
        default=1,
        metavar="N",
        help="run up to N notebooks at once, each in its own kernel (one marked 'alone' in the manifest, "
        "which times things, runs with nothing beside it; each starts after the notebooks its 'after' "
        "names); default 1: one after the other",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep the notebooks an earlier reproduction into --out completed from the same inputs (the "
        "data by content, preset, parameters, code and the notebooks each starts after; every output "
        "present) and run from the first one that is not",
    )
    cache = p.add_mutually_exclusive_group()
    cache.add_argument(
        "--cache",
        default=None,
        metavar="DIR",
        help="the per-run cache the notebooks share (derived frames, window features, scores; "
        "default: OUT/cache); entries are keyed by file contents, settings and code",
    )
    cache.add_argument("--no-cache", action="store_true", help="compute everything, keep nothing")
    p.add_argument("--list", action="store_true", help="list the notebooks, figures and tables, then exit")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import sys

    from reveal_lab.cli._checks import check_writable_folder

    if not args.list:  # a folder that cannot be written is said before the notebooks' imports
        check_writable_folder(args.out, make=False)
    from reveal_lab.notebooks import (
        ClaimsFailed,
        NotebookFailed,
        load_manifest,
        notebook_overrides,
        parse_param,
        run_manifest,
    )

    m = load_manifest(args.manifest)
    if args.list:
        for e in m.notebooks:
            figs, tabs = ", ".join(e.figures) or "-", ", ".join(e.tables) or "-"
            print(f"{e.notebook:36s} figures: {figs}; tables: {tabs}")
        return 0
    flags = {name: f"--{name}" for name in ("platform", "workers", "scheduler") if getattr(args, name) is not None}
    try:  # the notebooks and their parameters are checked before anything is made
        params = dict(parse_param(p) for p in args.param)
        params.update({name: getattr(args, name) for name in flags})
        notebook_overrides(m, m.select(args.only), params, flags)
    except ValueError as exc:
        print(f"reveal-lab reproduce: {exc}", file=sys.stderr)
        return 2
    cache = False if args.no_cache else (args.cache or True)
    check_writable_folder(args.out)  # before the first notebook, not after it
    try:
        results = run_manifest(
            preset=args.preset, data=args.data, out=args.out, only=args.only, manifest=m,
            params=params, resume=args.resume, cache=cache, jobs=args.jobs, flags=flags,
        )
    except ValueError as exc:
        print(f"reveal-lab reproduce: {exc}", file=sys.stderr)
        return 2
    except NotebookFailed as exc:
        print(f"reveal-lab reproduce: stopped at the first failure\n{exc}", file=sys.stderr)
        return 1
    except ClaimsFailed as exc:
        print(f"reveal-lab reproduce: {exc}", file=sys.stderr)
        return 1
    n_fig = sum(len(r.figures) for r in results)
    n_tab = sum(len(r.tables) for r in results)
    print(f"reproduced {len(results)} notebooks, {n_fig} figures, {n_tab} tables: {args.out}/index.html")
    return 0
