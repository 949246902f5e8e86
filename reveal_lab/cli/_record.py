"""``reveal-lab record``: record the lab dataset (root): workloads on namespace hosts under faults.

``reveal-lab record --plan v2 --raw /var/tmp/reveal_lab/raw --out data/lab`` runs
every slot of the plan (one collector per host), then builds the dataset folder
(Parquet in the public grammar, ``meta_lab.csv``, ``labels.csv``). ``--dry-run`` lists
the slots, what the plan holds and how long it takes to record; ``--build-only``
rebuilds ``--out`` from an existing ``--raw`` folder. Before each slot the load gate
waits while the machine is busy (``--load-gate``, ``--gate-wait``) and refuses with exit
status 75 when it stays busy; before the first slot it also waits until the page cache has
stopped moving (``--settle``).
"""

from __future__ import annotations

import argparse
import sys

from reveal_lab.cli._ranges import as_text, duration_in, float_in, int_in
from reveal_lab.cli._types import or_none

#: one run of a plan lasts at most a day
MAX_RUN_S = 86400.0


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = sub.add_parser(
        "record",
        help="record the lab dataset: ML workloads on namespace hosts under injected faults (root)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--plan",
        default="default",
        help="recording plan: v2 (the default: 90 s runs, 5 repeats, graded faults, 3 hosts, case "
        "studies), v1 (the first data/lab) or smoke (one 8 s run)",
    )
    p.add_argument(
        "--duration",
        type=duration_in(1.0, MAX_RUN_S),
        default=None,
        help="run length per workload, e.g. 40s (default: the plan's)",
    )
    p.add_argument(
        "--repeats", type=int_in(1, 1000), default=None, help="baseline repeats per workload (v2: 5, v1: 3)"
    )
    p.add_argument(
        "--raw", default="/var/tmp/reveal_lab/raw", help="where collector directories and run manifests go"
    )
    p.add_argument("--out", default=None, help="dataset folder to build (default: the bundled data/lab)")
    p.add_argument(
        "--interval",
        type=as_text(duration_in(0.001, 60.0)),
        default="100ms",
        help="collector sampling interval",
    )
    p.add_argument("--probes", default=None, help="collector probes (default: all that work)")
    p.add_argument("--slots", default=None, help="only these slots of the plan, e.g. 0-3,7")
    p.add_argument("--dry-run", action="store_true", help="list the plan's slots and exit")
    p.add_argument("--build-only", action="store_true", help="only (re)build --out from --raw")
    p.add_argument("--no-build", action="store_true", help="record into --raw only")
    p.add_argument(
        "--keep-nan-columns", action="store_true", help="keep channels that are missing for a whole run"
    )
    p.add_argument(
        "--load-gate",
        type=_gate_value,
        default=0.5,
        help="before each slot, wait while the 1-minute load average less the lab's own share is above "
        "this (default 0.5; 'off': measure and log only)",
    )
    p.add_argument(
        "--gate-wait",
        type=duration_in(0.001),
        default="10min",
        help="longest wait for the machine to calm down before a slot; then refuse with exit status "
        "75 (EX_TEMPFAIL; default 10min)",
    )
    p.add_argument(
        "--warmup",
        type=_duration_or_off,
        default="0s",
        help="before each workload's first slot, a discarded fault-free run of this length on the same "
        "hosts (kept in RAW/warmup/, out of the dataset), so that first repeats meet the machine in the "
        "state later ones do; e.g. 20s (default 0s: none)",
    )
    p.add_argument(
        "--settle",
        type=_duration_or_off,
        default="30s",
        help="before the session's first slot, wait until the page cache (Cached of /proc/meminfo) has "
        "drifted by at most --settle-rate over this long (the kernel's reclaim after boot flagged the "
        "v3 recording's first slot); 0 / off: do not wait (default 30s)",
    )
    p.add_argument(
        "--settle-rate",
        type=_rate_value,
        default=2.0,
        help="page-cache drift allowed by --settle, in MB/s (default 2)",
    )
    p.add_argument(
        "--note", default=None, help="why this session is recorded (kept in recording.json and the README)"
    )
    p.add_argument(
        "--gate-poll",
        type=duration_in(0.1, 3600.0),
        default="10s",
        help="how often to re-check a busy machine (default 10s)",
    )
    p.set_defaults(func=_run)


_load = float_in(0, 10_000, what="a load")


#: ``--load-gate``: a load average from 0 to 10,000, or ``off``
_gate_value = or_none(_load, "a load from 0 to 10,000", words=("off", "none"))


_gate_value.range_text = "0–10,000, or off"  # type: ignore[attr-defined]
_run_length = duration_in(0.001, MAX_RUN_S)


#: ``--warmup``, ``--settle``: a duration up to a day, or 0 / ``off`` for none
_duration_or_off = or_none(_run_length, "a duration up to a day", value=0.0, words=("off", "none", "0", "0s"))


_duration_or_off.range_text = f"{_run_length.range_text}, or 0 / off"  # type: ignore[attr-defined]
_rate_value = float_in(0, 1e6, low_open=True, what="MB/s")


def _slots(spec: str, n: int) -> list[int]:
    """Slot numbers from ``0-3,7``; each range forwards and inside the plan's ``0..n-1``."""
    out: list[int] = []
    for part in spec.split(","):
        a, sep, b = part.strip().partition("-")
        try:
            lo, hi = (int(a), int(b)) if sep else (int(a), int(a))
        except ValueError:
            raise ValueError(f"--slots {spec!r}: {part!r} is not a slot number or a range like 0-3") from None
        if lo > hi:
            raise ValueError(f"--slots {spec!r}: {part!r} runs backwards; give FIRST-LAST with FIRST <= LAST")
        if lo < 0 or hi >= n:
            raise ValueError(f"--slots {spec!r}: {part!r} is outside the plan's slots 0-{n - 1}")
        out.extend(range(lo, hi + 1))
    return out


def _mag(m: float | None) -> str:
    return "-" if m is None else f"{m:g}"


def _magnitude_key(kv: tuple) -> tuple:
    return (kv[0] is None, kv[0] or 0)


def _summary_text(s: dict, n_full: int) -> str:
    """The dry run's footer: counts the issue asks for, and the time estimate."""
    base = ", ".join(f"{k} {v}" for k, v in sorted(s["fault_free_repeats"].items()))
    eps = "; ".join(
        f"{ft} " + ", ".join(f"{_mag(m)}: {n}" for m, n in sorted(mags.items(), key=_magnitude_key))
        for ft, mags in sorted(s["episodes"].items())
    )
    cases = ", ".join(f"{k} {v}" for k, v in sorted(s["case_runs"].items()))
    return "\n".join(
        [
            f"{s['slots']} of {n_full} slots, {s['runs']} runs on hosts {'+'.join(s['hosts'])}; "
            f"shortest run {s['min_duration_s']:g} s",
            f"fault-free runs per workload: {base or 'none'}",
            f"fault episodes (or runs) per magnitude: {eps or 'none'}",
            f"case-study runs: {cases or 'none'}",
            f"estimated recording time: {s['minutes']:.1f} min on a quiet machine "
            f"(workload + 5 s calm + {s['overhead_s']:g} s start/stop + 2 s gate sample per slot"
            + (
                f"; {s['warmup_runs']} warm-up runs of {s['warmup_s']:g} s"
                if s.get("warmup_runs")
                else ""
            )
            + "; waiting at the load gate comes on top)",
        ]
    )


def _run(args: argparse.Namespace) -> int:
    from reveal_lab.config import data_dir
    from reveal_lab.lab import (
        GateRefused,
        LoadGate,
        build_dataset,
        describe_plan,
        get_plan,
        plan_hosts,
        plan_summary,
        record_plans,
        require_root,
    )

    kw = {} if args.duration is None else {"duration_s": args.duration}
    if args.repeats is not None:
        if args.plan not in ("default", "v1", "v2"):
            raise ValueError(f"--repeats applies to the v1 and v2 plans only, not to {args.plan!r}")
        kw["repeats"] = args.repeats
    full = get_plan(args.plan, **kw)
    hosts = plan_hosts(full)  # the whole plan's hosts, also when recording a part of it
    slots, numbers = full, list(range(len(full)))
    if args.slots:
        numbers = _slots(args.slots, len(full))
        slots = [full[i] for i in numbers]
    if args.dry_run:
        print("\n".join(describe_plan(slots, numbers)))
        print(_summary_text(plan_summary(slots, warmup_s=args.warmup), len(full)))
        return 0
    out = args.out or str(data_dir())
    if not args.build_only:
        require_root(("ip", "nsenter", "iptables"))
        gate = LoadGate(
            gate=args.load_gate,
            max_wait_s=args.gate_wait,
            poll_s=args.gate_poll,
            settle_s=args.settle,
            settle_mb_s=args.settle_rate,
        )
        try:
            record_plans(
                slots,
                args.raw,
                host_names=hosts,
                interval=args.interval,
                probes=args.probes,
                gate=gate,
                numbers=numbers,
                warmup_s=args.warmup,
                note=args.note,
            )
        except GateRefused as exc:
            print(f"reveal-lab record: refused: {exc}", file=sys.stderr)
            return exc.exit_code
    if not args.no_build:
        meta, labels = build_dataset(args.raw, out, drop_all_nan=not args.keep_nan_columns)
        print(f"wrote {len(meta)} host runs and {len(labels)} labels to {out}")
    return 0
