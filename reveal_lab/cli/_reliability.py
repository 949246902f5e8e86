"""``reveal-lab reliability mttf|ettr``: what failures cost a training job at cluster scale
(Kokolis et al., arXiv 2410.21680)."""

from __future__ import annotations

import argparse
import json

from reveal_lab.cli._ranges import duration_in, int_in

#: the largest job the model is asked about: 10 million GPUs (the largest clusters have ~10^5)
MAX_GPUS = 10_000_000
#: simulated jobs at most (memory grows with them: ~100 bytes a job)
MAX_JOBS = 10_000_000
#: failure rates at most, per 1,000 node-days (the paper's clusters: 2.34 and 6.50)
MAX_FAILURE_RATE = 1e6
_gpus = int_in(1, MAX_GPUS, what="a whole number of GPUs")
#: the closed form is first-order in N·r_f·(u₀ + Δ/2): past this it is noted as out of range
CLOSED_FORM_RANGE = 0.2


def _rate(text: str) -> float:
    from reveal_lab.reliability import resolve_failure_rate

    if text.strip().startswith("-"):
        raise argparse.ArgumentTypeError(
            f"expected failures per 1,000 node-days > 0 (e.g. 6.5), got {text!r}"
        )
    try:
        v = resolve_failure_rate(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if v > MAX_FAILURE_RATE:
        raise argparse.ArgumentTypeError(
            f"expected failures per 1,000 node-days up to {MAX_FAILURE_RATE:g}, got {text!r}"
        )
    return v


_rate.range_text = f"(0, {MAX_FAILURE_RATE:g}], or rsc1 / rsc2"  # type: ignore[attr-defined]


def _duration(allow_zero: bool):  # noqa: ANN202 - an argparse type
    """Hours, from a duration from 0 (``allow_zero``) or 1 ms up to a year."""
    seconds = duration_in(0.0 if allow_zero else 0.001)

    def parse(text: str) -> float:
        return seconds(text) / 3600.0

    parse.__name__, parse.range_text = "duration", seconds.range_text  # type: ignore[attr-defined]
    return parse


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpus", type=_gpus, required=True, metavar="N", help="GPUs in the job")
    p.add_argument(
        "--failure-rate",
        type=_rate,
        default=6.50,
        metavar="R",
        help="node failures per 1,000 node-days, or rsc1 (6.50, the default) / rsc2 (2.34)",
    )
    p.add_argument("--gpus-per-node", type=int_in(1, 1024), default=8, metavar="K", help="default 8")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = sub.add_parser(
        "reliability",
        help="MTTF and expected ETTR of a training job at cluster scale (Kokolis et al. 2024)",
        description=(
            "Project a job's mean time to failure, 1/(N·r_f), and its effective training time ratio "
            "(useful training over wall-clock time) under checkpointing, in closed form "
            "(1 − N·r_f·(u₀ + Δ/2)) / (1 + w/Δ) or by Monte-Carlo simulation."
        ),
    )
    rsub = p.add_subparsers(dest="reliability_command", metavar="{mttf,ettr}", required=True)
    m = rsub.add_parser("mttf", help="mean time to failure of a job, hours")
    _common(m)
    m.set_defaults(func=_mttf)
    e = rsub.add_parser("ettr", help="expected effective training time ratio of a job")
    _common(e)
    e.add_argument(
        "--checkpoint-interval", type=_duration(False), required=True, metavar="DUR",
        help="useful work between checkpoints, e.g. 30m",
    )
    e.add_argument("--restart", type=_duration(True), required=True, metavar="DUR",
                   help="restart overhead per failure, e.g. 5m")
    e.add_argument("--checkpoint-write", type=_duration(True), default=0.0, metavar="DUR",
                   help="time to write one checkpoint (default 0)")
    e.add_argument("--simulate", action="store_true", help="also simulate jobs (Monte-Carlo) with a 95%% CI")
    e.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=100_000, metavar="N",
                   help="simulated jobs (default 100000)")
    budget = e.add_mutually_exclusive_group()
    budget.add_argument("--work", type=_duration(False), default=24.0, metavar="DUR",
                        help="useful training per simulated job (default 24h)")
    budget.add_argument("--wall", type=_duration(False), metavar="DUR",
                        help="simulate jobs of a fixed wall-clock budget instead (e.g. 48h)")
    e.add_argument("--seed", type=int_in(0, 2**32 - 1), default=0, help="simulation seed (default 0)")
    e.set_defaults(func=_ettr)


def _mttf(args: argparse.Namespace) -> int:
    from reveal_lab.reliability import mttf_hours

    h = mttf_hours(args.gpus, args.failure_rate, args.gpus_per_node)
    nodes = -(-args.gpus // args.gpus_per_node)
    if args.json:
        print(json.dumps({"mttf_hours": h, "mttf_days": h / 24, "gpus": args.gpus, "nodes": nodes,
                          "gpus_per_node": args.gpus_per_node,
                          "failure_rate_per_1000_node_days": args.failure_rate}))
        return 0
    print(f"{h:.4g}")
    print(f"MTTF {h:.4g} h ({h / 24:.3g} days) for {args.gpus} GPUs = {nodes} nodes of {args.gpus_per_node} "
          f"at {args.failure_rate:g} failures per 1,000 node-days")
    return 0


def _ettr(args: argparse.Namespace) -> int:
    from reveal_lab.reliability import (
        expected_ettr,
        mttf_hours,
        optimal_interval,
        renewal_ettr,
        simulate_ettr,
    )

    a = (args.gpus, args.checkpoint_interval, args.restart, args.checkpoint_write, args.failure_rate,
         args.gpus_per_node)
    e = expected_ettr(*a)
    mttf = mttf_hours(args.gpus, args.failure_rate, args.gpus_per_node)
    best = optimal_interval(args.gpus, args.checkpoint_write, args.failure_rate, args.gpus_per_node)
    out = {
        "ettr": e, "gpus": args.gpus, "checkpoint_interval_h": args.checkpoint_interval,
        "restart_h": args.restart, "checkpoint_write_h": args.checkpoint_write,
        "failure_rate_per_1000_node_days": args.failure_rate, "gpus_per_node": args.gpus_per_node,
        "mttf_hours": mttf, "optimal_interval_h": best,
    }
    x = (args.restart + args.checkpoint_interval / 2) / mttf  # N·r_f·(u₀ + Δ/2)
    if x > CLOSED_FORM_RANGE:
        exact = renewal_ettr(*a)
        out["note"] = (
            f"outside the closed form's range: it is first-order in N·r_f·(u₀ + Δ/2), here {x:.3g} "
            f"(accurate while ≪ 1, say ≤ {CLOSED_FORM_RANGE:g}), so {e:.4f} understates the ETTR; the "
            f"model's exact long-run value (renewal) is {exact:.4f}"
            + ("" if args.simulate else "; or --simulate")
        )
        out["ettr_renewal"] = exact
    if args.simulate:
        try:
            sim = simulate_ettr(*a[:5], work_h=args.work, n_jobs=args.jobs, seed=args.seed,
                                gpus_per_node=args.gpus_per_node, wall_h=args.wall)
        except ValueError as exc:
            raise ValueError(f"--simulate: {exc}") from None
        out |= {"ettr_simulated": sim.mean, "ci95": list(sim.ci95), "quantiles": sim.quantiles(),
                "jobs": args.jobs, "seed": args.seed}
        out |= {"wall_h": args.wall} if args.wall else {"work_h": args.work}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{e:.4f}")
    if "note" in out:
        print(f"note: {out['note']}")
    print(f"expected ETTR (closed form) for {args.gpus} GPUs at {args.failure_rate:g} failures per 1,000 "
          f"node-days (MTTF {mttf:.3g} h): checkpoint every {args.checkpoint_interval * 60:g} min, "
          f"restart {args.restart * 60:g} min, checkpoint write {args.checkpoint_write * 3600:g} s")
    if args.checkpoint_write > 0:
        print(f"optimal interval √(2w/(N·r_f)) = {best * 60:.3g} min")
    else:
        print("optimal interval: with free checkpoint writes (w = 0), checkpoint as often as you can")
    if args.simulate:
        lo, hi = out["ci95"]
        size = f"{args.wall:g} h wall-clock" if args.wall else f"{args.work:g} h useful work"
        print(f"simulated {out['ettr_simulated']:.4f} (95% CI {lo:.4f}–{hi:.4f}; {args.jobs} jobs of "
              f"{size}, seed {args.seed})")
    return 0
