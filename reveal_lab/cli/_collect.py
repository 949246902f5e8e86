"""``reveal-lab collect``: record host telemetry into a crash-safe run directory."""

from __future__ import annotations

import argparse
import sys

from reveal_lab.cli._ranges import duration_in, int_in

#: exit status when the output disk is (or becomes) full; see FORMAT.md
EXIT_DISK_FULL = 3


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    from reveal_lab.collect import GROUPS

    p = sub.add_parser(
        "collect",
        help="record host telemetry (procfs, perf, turbostat, GPUs, cgroups) every --interval",
        description="Record host telemetry into OUT (meta.json, channels.json, journal, Parquet segments; "
        "see reveal_lab/collect/FORMAT.md). Stops after --duration or on SIGINT/SIGTERM. "
        "Read it back with reveal_lab.io.read_collector_run(OUT).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="probe groups: " + "; ".join(f"{k}: {v}" for k, v in GROUPS.items()),
    )
    p.add_argument(
        "--interval",
        type=duration_in(0.001, 3600.0),
        default="100ms",
        help="sampling interval, e.g. 100ms, 0.5s (default 100ms)",
    )
    p.add_argument(
        "--duration",
        type=duration_in(0.001),
        default=None,
        help="stop after this long, e.g. 10s, 5m (default: until signalled)",
    )
    p.add_argument("--out", help="run directory to create (must not hold a run already)")
    p.add_argument(
        "--probes",
        default="all",
        help="probes or groups, comma separated; '-name' removes (e.g. 'procfs,perf,-gpu', '-perf'; "
        "default all); 'name@PERIOD' samples a procfs/cgroup probe less often (e.g. 'interrupts@1s': "
        "null on skipped ticks); `reveal-lab collect --list-probes` shows them",
    )
    p.add_argument("--host", default=None, help="host name used in column names (default: this machine's)")
    p.add_argument(
        "--cgroup-root",
        default=None,
        help="cgroup subtree to discover containers under, in the v2 tree or any v1 controller's (default: all)",
    )
    p.add_argument(
        "--max-cgroups",
        type=int_in(0, 4096),
        default=16,
        help="follow at most this many cgroups (default 16)",
    )
    p.add_argument("--perf-events", default=None, help="comma-separated perf events (default: hw + sw set)")
    p.add_argument("--gpu-backend", choices=("auto", "nvml", "nvidia-smi"), default="auto")
    p.add_argument(
        "--flush",
        type=duration_in(0.01, 3600.0),
        default="1s",
        help="journal write+fsync period (default 1s)",
    )
    p.add_argument(
        "--segment",
        type=duration_in(1.0, 86400.0),
        default="300s",
        help="Parquet segment length, at least 1s: each segment roll closes and opens a file (default 300s)",
    )
    p.add_argument("--list-probes", action="store_true", help="list probes and exit")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from reveal_lab.collect import PROBES, collect
    from reveal_lab.config import parse_duration

    if args.list_probes:
        import reveal_lab.collect.probes  # noqa: F401

        for name, cls in PROBES.items():
            print(f"{name:12s} {cls.group:10s} {cls.description}")
        return 0
    if not args.out:
        raise ValueError("--out DIR is required")
    from reveal_lab.collect import DiskFull

    try:
        res = _collect(args, collect, parse_duration)
    except DiskFull as exc:
        print(f"reveal-lab collect: error: {exc}; nothing was recorded", file=sys.stderr)
        return EXIT_DISK_FULL
    print(
        f"{res.out}: {res.samples} samples, {res.missed_ticks} missed ticks, status {res.status}; "
        f"probes used: {', '.join(res.probes_used)}"
        + (f"; skipped: {', '.join(res.probes_skipped)}" if res.probes_skipped else "")
    )
    return 0 if res.status in ("complete", "interrupted") else EXIT_DISK_FULL


def _collect(args: argparse.Namespace, collect, parse_duration):  # noqa: ANN001, ANN202
    if args.segment < args.interval or args.flush < args.interval:
        raise ValueError(
            f"--segment {args.segment:g}s and --flush {args.flush:g}s must be at least --interval "
            f"{args.interval:g}s (a segment or flush holds at least one sample)"
        )
    return collect(
        args.out,
        interval_s=args.interval,
        duration_s=args.duration,
        probes=args.probes,
        host=args.host,
        cgroup_root=args.cgroup_root,
        max_cgroups=args.max_cgroups,
        perf_events=tuple(e for e in args.perf_events.split(",") if e) if args.perf_events else None,
        gpu_backend=args.gpu_backend,
        flush_s=args.flush,
        segment_s=args.segment,
    )
