"""``reveal-lab watch DIR``: live detection on a running collector's output directory."""

from __future__ import annotations

import argparse

from reveal_lab.cli._policy import add_policy_arguments, policy_from_args
from reveal_lab.cli._ranges import as_text, duration_in, int_in


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = sub.add_parser(
        "watch",
        help="score each window of a running collector as it completes; print anomalies as they happen",
        description=(
            "Follow a collector output directory (reveal-lab collect --out DIR): read only the new "
            "journal bytes, build each 3 s window as it completes, compute its features, score it "
            "with detectors fitted on a warm-up period or a baseline run, and print each anomaly "
            "with its attribution (subsystem, metric, feature, claim)."
        ),
    )
    p.add_argument("dir", help="the collector's --out directory (may not exist yet: see --wait)")
    ref = p.add_mutually_exclusive_group()
    ref.add_argument(
        "--baseline",
        metavar="RUN",
        help="fit on this reference run (collector directory, .txt or .parquet run file)",
    )
    ref.add_argument(
        "--warmup",
        type=as_text(duration_in(0.001)),
        default="30s",
        metavar="DURATION",
        help="fit on the first DURATION of the stream (default 30s)",
    )
    p.add_argument("--jsonl", metavar="FILE", help="append one JSON object per scored window to FILE")
    p.add_argument("--preset", default="paper", help="window and detector settings (paper, smoke)")
    window_length = as_text(duration_in(0.001, 3600.0))
    p.add_argument(
        "--window",
        type=window_length,
        metavar="DURATION",
        help="window length (default: the preset's, 3s)",
    )
    p.add_argument(
        "--stride",
        type=window_length,
        metavar="DURATION",
        help="window stride (default: the preset's, 1s)",
    )
    p.add_argument(
        "--interval",
        type=window_length,
        metavar="DURATION",
        help="sampling interval (default: the preset's, 100ms)",
    )
    add_policy_arguments(p, ("min_agreement", "prune", "outlier_fence", "sentinel_samples", "force_baseline"))
    p.add_argument("--all", action="store_true", help="print every window's verdict, not only anomalies")
    p.add_argument("--tail", action="store_true", help="start at the end of what DIR holds now (tail -f)")
    p.add_argument(
        "--duration",
        type=as_text(duration_in(0.001)),
        metavar="DURATION",
        help="stop after this long",
    )
    p.add_argument("--max-windows", type=int_in(1, 10**12), metavar="N", help="stop after N scored windows")
    p.add_argument(
        "--idle-exit",
        type=as_text(duration_in(0.001)),
        metavar="DURATION",
        help="stop after this long without new data (counted from the start before the first data)",
    )
    p.add_argument(
        "--wait",
        type=as_text(duration_in(0.0)),
        default="30s",
        metavar="DURATION",
        help="how long DIR may take to appear and hold a run (default 30s), and how much longer the "
        "warm-up goes on while it holds too few complete windows (a collector that starts late or "
        "misses ticks); a file or a folder "
        "holding something else is an error at once. The watch stops by itself when the collector "
        "has finished; it exits 1 when it scored no window, saying why",
    )
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import dataclasses
    import json
    import sys

    from reveal_lab.cli._checks import check_stride, check_warmup
    from reveal_lab.config import get_preset, parse_duration

    p = get_preset(args.preset)
    w = p.window
    over = {
        k: parse_duration(v)
        for k, v in (("window_s", args.window), ("stride_s", args.stride), ("interval_s", args.interval))
        if v
    }
    if over:
        w = dataclasses.replace(w, **over)
    check_stride(w)  # what detect refuses, watch refuses
    if not args.baseline:
        check_warmup(parse_duration(args.warmup), w)
    from reveal_lab.live import watch  # after the flags are checked: a refusal comes at once

    try:
        summary = watch(
            args.dir,
            baseline=args.baseline,
            warmup_s=parse_duration(args.warmup),
            window=w,
            preset=p,
            policy=policy_from_args(args),
            jsonl=args.jsonl,
            duration_s=parse_duration(args.duration) if args.duration else None,
            max_windows=args.max_windows,
            idle_exit_s=parse_duration(args.idle_exit) if args.idle_exit else None,
            from_start=not args.tail,
            wait_s=parse_duration(args.wait),
            show="all" if args.all else "anomalies",
            echo=lambda s: print(s, flush=True),
        )
    except KeyboardInterrupt:
        return 130
    print("summary: " + json.dumps(summary.as_dict()), file=sys.stderr, flush=True)
    return 0 if summary.scored else 1
