"""``reveal-lab dataset export-tsv``: write runs in the public dataset's TSV layout."""

from __future__ import annotations

import argparse


def register(verbs) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = verbs.add_parser(
        "export-tsv",
        help="write runs (collector folders, .parquet, .txt) in the public dataset's TSV layout",
        description="Write each RUN as public-layout .txt files (one per host) into --out: tab separated, "
        "empty first header, 'YYYY-mm-dd HH:MM:SS.fff' timestamps, the public file-name grammar. "
        "With --merge, several single-host collector runs are first aligned by time (merge_hosts).",
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="collector run folder, .parquet or .txt file")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--prefix", default="train", help="file-name prefix (train, infer, data; default train)")
    p.add_argument(
        "--model", default=None, help="MODEL part of the file name (default: run metadata or COLLECTOR)"
    )
    p.add_argument(
        "--task", default=None, help="Task part of the file name (default: run metadata or Telemetry)"
    )
    p.add_argument(
        "--dataset", default=None, help="dataset part of the file name (default: run metadata or none)"
    )
    p.add_argument(
        "--view", choices=("dataset", "raw"), default="dataset", help="collector view (default dataset)"
    )
    p.add_argument(
        "--local-time",
        action="store_true",
        help="shift collector timestamps (UTC) to the collecting host's local time",
    )
    p.add_argument("--merge", action="store_true", help="merge the runs by time before writing")
    p.add_argument(
        "--skew-ms",
        action="append",
        default=[],
        metavar="HOST=MS",
        help="known clock offset of a host for --merge (repeatable)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace existing files")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from reveal_lab.io import is_collector_run, merge_hosts
    from reveal_lab.io import export_tsv
    from reveal_lab.io import load_run

    runs = []
    for r in args.runs:
        runs.append(load_run(r, view=args.view) if is_collector_run(r) else load_run(r))
    if args.merge:
        skew = {}
        for item in args.skew_ms:
            host, sep, ms = item.partition("=")
            if not sep:
                raise ValueError(f"--skew-ms expects HOST=MS, got {item!r}")
            skew[host] = float(ms)
        runs = [merge_hosts(runs, skew_ms=skew)]
    written = []
    for run in runs:
        offset = 0.0
        if args.local_time:
            offset = float(((run.meta.extra or {}).get("clock") or {}).get("utc_offset_s", 0.0))
        written += export_tsv(
            run,
            Path(args.out),
            prefix=args.prefix,
            model=args.model,
            task=args.task,
            dataset=args.dataset,
            utc_offset_s=offset,
            overwrite=args.overwrite,
        )
    for w in written:
        print(w)
    return 0
