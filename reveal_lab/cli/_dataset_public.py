"""``reveal-lab dataset ls | info | pull``: list, describe and fetch the public Reveal dataset.

The public dataset lives by default in ``data/public`` (``$REVEAL_PUBLIC_DIR`` overrides):
``Reveal_GPU.zip``, ``Reveal_CPU.zip``, ``meta_gpu.csv``, ``meta_cpu.csv``, side by side;
the zips are read as they are (never unzipped).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

from reveal_lab.cli._ranges import float_in, int_in

__all__ = ["register", "public_dir", "pull", "hub_unreachable", "manual_instructions", "REPO_ID"]

REPO_ID = "subsetchen/RevealTelemetryDatasetforMLInfraProfilingAnomalyDetection"
#: what the repository root holds (sizes as published)
PUBLIC_FILES: tuple[tuple[str, str], ...] = (
    ("Reveal_GPU.zip", "≈4.5 GB; ≈24 GB if unzipped"),
    ("Reveal_CPU.zip", "≈17 GB; ≈74 GB if unzipped"),
    ("meta_gpu.csv", "run table for the GPU archive"),
    ("meta_cpu.csv", "run table for the CPU archive"),
    ("MetricsDescription.md", "optional: what each metric means"),
)
FILTERS = ("platform", "phase", "mode", "model", "task", "dataset", "host", "workload", "split", "prefix")


def public_dir() -> Path:
    """Where the public dataset is looked for: ``$REVEAL_PUBLIC_DIR`` or ``data/public``."""
    from reveal_lab.config import PROJECT_ROOT

    env = os.environ.get("REVEAL_PUBLIC_DIR")
    return Path(env) if env else PROJECT_ROOT / "data" / "public"


# ------------------------------------------------------------------------------------------- pull


def hub_unreachable(endpoint: str, timeout: float) -> str | None:
    """Why the hub cannot be reached within ``timeout`` seconds, or ``None`` when it can.

    Name resolution and the TCP connection run in a daemon thread joined with the
    timeout, so a resolver that hangs cannot hold the command either.
    """
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    from urllib.request import getproxies, proxy_bypass

    u = urlparse(endpoint)
    proxy = getproxies().get(u.scheme) or getproxies().get("all")
    if proxy and not proxy_bypass(u.hostname or ""):
        u = urlparse(proxy if "://" in proxy else f"http://{proxy}")  # reach the proxy, not the hub
    host = u.hostname or ""
    port = u.port or (443 if u.scheme == "https" else 80)
    result: list[str | None] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(None)
        except OSError as exc:
            result.append(f"{type(exc).__name__}: {exc}")

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout)
    if not result:
        return f"no answer from {host}:{port} within {timeout:g} s"
    return result[0]


def manual_instructions(dest: Path, reason: str, endpoint: str = "https://huggingface.co") -> str:
    files = "\n".join(f"       {name:<24} {what}" for name, what in PUBLIC_FILES)
    return (
        f"cannot download from {endpoint} ({reason}).\n"
        "Place the files by hand instead:\n"
        f"  1. On a machine with network, download them from\n"
        f"       https://huggingface.co/datasets/{REPO_ID}/tree/main\n"
        "     (also on Zenodo, DOI 10.5281/zenodo.17470313):\n"
        f"{files}\n"
        "     Take only what you need, e.g. Reveal_GPU.zip + meta_gpu.csv.\n"
        f"  2. Copy them as they are into {dest}/ (all side by side in that one folder).\n"
        "     The zips need NOT be unzipped: reveal-lab streams runs straight from them.\n"
        f"     (Unzipped copies work too: {dest}/Reveal_GPU/train_separated/*.txt, ...)\n"
        f"  3. Check the copy: reveal-lab dataset info {dest}\n"
        "     (another folder works too: pass it as ROOT, or set REVEAL_PUBLIC_DIR)."
    )


def pull(
    dest: Path,
    patterns: list[str] | None = None,
    *,
    repo_id: str = REPO_ID,
    timeout: float = 10.0,
    revision: str | None = None,
) -> Path:
    """Download the dataset (or the files matching ``patterns``) into ``dest`` with
    ``huggingface_hub.snapshot_download`` (with progress bars). Fails within about
    ``timeout`` seconds, with instructions for placing the files by hand, when the hub
    cannot be reached."""
    from huggingface_hub import constants, snapshot_download

    from reveal_lab.lab import hub_request_timeouts

    endpoint = constants.ENDPOINT
    reason = hub_unreachable(endpoint, timeout)
    if reason is not None:
        raise RuntimeError(manual_instructions(dest, reason, endpoint))
    made = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with hub_request_timeouts(timeout):  # every request, not only the first connect
            snapshot_download(
                repo_id=repo_id,
                repo_type="dataset",
                allow_patterns=patterns or None,
                local_dir=str(dest),
                revision=revision,
            )
    except Exception as exc:  # noqa: BLE001 - network/HTTP errors of many types end the same way
        if made:
            shutil.rmtree(dest / ".cache", ignore_errors=True)  # the hub client's bookkeeping
            with contextlib.suppress(OSError):
                dest.rmdir()  # a failed pull leaves no empty folder behind
        raise RuntimeError(manual_instructions(dest, f"{type(exc).__name__}: {exc}", endpoint)) from exc
    return dest


def _cmd_pull(args: argparse.Namespace) -> int:
    dest = Path(args.dest) if args.dest else public_dir()
    print(
        f"fetching {args.repo_id} ({', '.join(args.pattern) if args.pattern else 'all files'}) into {dest}",
        file=sys.stderr,
    )
    pull(dest, args.pattern, repo_id=args.repo_id, timeout=args.timeout, revision=args.revision)
    got = sorted(p.name for p in dest.iterdir() if not p.name.startswith("."))
    if not got:
        print(f"nothing matched {args.pattern} in {args.repo_id}", file=sys.stderr)
        return 1
    print(f"{dest}: {', '.join(got)}\nnext: reveal-lab dataset info {dest}")
    return 0


# ------------------------------------------------------------------------------------------- ls


def _open(root: str | None):  # noqa: ANN202
    from reveal_lab.io import open_dataset

    path = Path(root) if root else public_dir()
    if path.exists() and not path.is_dir() and not (path.is_file() and path.suffix.lower() == ".zip"):
        raise ValueError(
            f"ROOT {path} is neither a folder nor a .zip archive; give a dataset folder (zips, "
            "train_separated/..., meta_*.csv) or one of its zip archives"
        )
    return open_dataset(path)


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    return {k: getattr(args, k) for k in FILTERS if getattr(args, k, None)}


LS_COLUMNS = ("platform", "phase", "model", "task", "dataset", "host", "start", "n_rows", "run_id")


def _cmd_ls(args: argparse.Namespace) -> int:
    import polars as pl

    ds = _open(args.root).filter(**_filters(args))
    idx = ds.index.sort("platform", "start")
    if args.limit:
        idx = idx.head(args.limit)
    if args.format == "csv":
        sys.stdout.write(idx.write_csv())
    elif args.format == "json":
        sys.stdout.write(idx.write_ndjson())
    else:
        view = idx.select(LS_COLUMNS).with_columns(pl.col("start").dt.strftime("%Y-%m-%d %H:%M:%S"))
        _print_table(view.columns, view.rows())
        print(f"{idx.height} of {len(ds)} runs" if args.limit and args.limit < len(ds) else f"{len(ds)} runs")
    return 0


def _print_table(header: list[str] | tuple[str, ...], rows: list[tuple]) -> None:
    cells = [[("" if v is None else str(v)) for v in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


# ------------------------------------------------------------------------------------------- info


def _cmd_info(args: argparse.Namespace) -> int:
    from reveal_lab.io import describe_dataset

    ds = _open(args.root).filter(**_filters(args))
    d = describe_dataset(ds, headers=not args.no_headers, check_rows=args.check_rows)
    if args.json:
        print(json.dumps(d, indent=1, default=str))
        return 0
    per = ", ".join(f"{p} {n}" for p, n in d["per_platform"].items())
    print(f"{d['root']}: {d['runs']} runs ({per})")
    for s in d["sources"]:
        print(f"  {s['source']}: {s['runs']} {s['platform']} runs")
    for title, key, cols in (
        ("runs per platform / phase / mode", "platform_phase", ("platform", "phase", "mode", "runs")),
        ("runs per model", "model", ("platform", "model", "runs")),
        ("runs per task", "task", ("platform", "task", "runs")),
        ("runs per host", "host", ("platform", "host", "runs")),
    ):
        print(f"\n{title}:")
        _print_table(cols, [tuple(r[c] for c in cols) for r in d[key]])
    if d["columns"]:
        print("\ncolumns per platform (from the file headers):")
        for plat, c in d["columns"].items():
            counts = ", ".join(f"{n} columns × {k} files" for n, k in c["n_cols_counts"].items())
            print(
                f"  {plat}: {counts}; {c['metrics']} distinct metrics (host-free), "
                f"{c['distinct_metric_sets']} distinct metric set(s)"
            )
            print(
                "    per subsystem: "
                + ", ".join(f"{k} {v}" for k, v in c["metrics_per_subsystem"].items())
                + "; per kind: "
                + ", ".join(f"{k} {v}" for k, v in c["metrics_per_kind"].items())
            )
            multi = c["multi_host_files"]
            if multi:
                print(f"    multi-host files: {len(multi)}: {', '.join(multi[:5])}")
            if c["unparsed_columns"]:
                print(f"    columns outside the grammar: {c['unparsed_columns'][:5]}")
    if "checked_runs" in d:
        c = d["checked_runs"]
        print(
            f"\nevery run loaded as `load` does: {c['loaded']} readable, {c['broken']} broken "
            "(listed below)"
        )
    rec = d["reconcile"]
    print(f"\nmeta tables vs files (checked: {', '.join(rec['checked'])}):")
    print("  " + rec["summary"].replace("\n", "\n  "))
    for title, key, fields in (
        ("listed in meta without a file", "missing_files", ("platform", "meta_line", "run_id")),
        ("files not listed in meta", "extra_files", ("platform", "run_id")),
        ("disagreements", "disagreements", ("platform", "run_id", "field", "meta", "file")),
    ):
        rows = rec[key]
        if rows:
            print(f"  {title} ({len(rows)}):")
            for r in rows[: args.show]:
                print("    " + "  ".join(str(r[f]) for f in fields))
            if len(rows) > args.show:
                print(f"    … {len(rows) - args.show} more (--show N, or --json)")
    for title, key in (
        ("unreadable", "unreadable"),
        ("skipped (not runs)", "skipped"),
        ("notes", "warnings"),
    ):
        if d[key]:
            print(f"\n{title} ({len(d[key])}):")
            for s in d[key][: args.show]:
                print(f"  {s}")
    return 0


# ------------------------------------------------------------------------------------------- wiring


def _add_filters(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("filters (repeat a flag for any of several values)")
    for k in FILTERS:
        g.add_argument(f"--{k}", action="append", metavar=k.upper())


def register(verbs) -> None:  # noqa: ANN001 - argparse's private subparsers type
    root_help = "dataset folder (or one zip); default: $REVEAL_PUBLIC_DIR or data/public"
    p = verbs.add_parser(
        "ls",
        help="list the runs of a local dataset copy (zipped or not)",
        description="One line per run file, from archive directories and file names only.",
    )
    p.add_argument("root", nargs="?", help=root_help)
    _add_filters(p)
    p.add_argument(
        "--format",
        choices=("table", "csv", "json"),
        default="table",
        help="table (default), csv (the whole index) or json (one object per line)",
    )
    p.add_argument("--limit", type=int_in(0, 10**9), default=0, help="show at most N runs (0: all)")
    p.set_defaults(func=_cmd_ls)

    p = verbs.add_parser(
        "info",
        help="describe a local dataset copy: counts, columns, meta mismatches",
        description="Counts per platform/phase/model/task/host, columns per platform "
        "(from headers only) and how meta_*.csv agrees with the files.",
    )
    p.add_argument("root", nargs="?", help=root_help)
    _add_filters(p)
    p.add_argument("--no-headers", action="store_true", help="do not read file headers (index only, fastest)")
    p.add_argument(
        "--check-rows",
        action="store_true",
        help="also count every file's rows against meta n_rows (reads every file whole: slow)",
    )
    p.add_argument(
        "--show", type=int_in(0, 10**6), default=10, help="list at most N entries per section (default 10)"
    )
    p.add_argument("--json", action="store_true", help="print everything as JSON")
    p.set_defaults(func=_cmd_info)

    p = verbs.add_parser(
        "pull",
        help="download the public Reveal dataset (or part of it) from the Hugging Face hub",
        description=f"Fetch {REPO_ID} with huggingface_hub (progress bars on stderr). Without network it "
        "fails fast and says how to place the files by hand.",
        epilog="examples: reveal-lab dataset pull --pattern 'meta_*.csv' --pattern Reveal_GPU.zip",
    )
    p.add_argument(
        "--pattern",
        action="append",
        metavar="GLOB",
        help="only files matching GLOB (repeatable), e.g. 'meta_*.csv' or Reveal_GPU.zip",
    )
    p.add_argument("--dest", help="target folder (default: $REVEAL_PUBLIC_DIR or data/public)")
    p.add_argument("--repo-id", default=REPO_ID, help=argparse.SUPPRESS)
    p.add_argument("--revision", help="a branch, tag or commit of the dataset repository")
    p.add_argument(
        "--timeout",
        type=float_in(0, 3600, low_open=True, what="seconds"),
        default=10.0,
        help="seconds any hub request may go without an answer (connect, each read and write; "
        "default 10); a hub that never answers ends the pull after a few retries",
    )
    p.set_defaults(func=_cmd_pull)
