"""``reveal-lab evaluate``: score detection and attribution against a labelled dataset's ground truth."""

from __future__ import annotations

import argparse

from reveal_lab.cli._policy import add_policy_arguments, policy_from_args
from reveal_lab.cli._ranges import as_text, duration_in
from reveal_lab.cli._types import positive_int as _positive_int


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = sub.add_parser(
        "evaluate",
        help="score detection + attribution against labelled fault episodes (default data: data/lab)",
        description="Run the detection pipeline on every run of a labelled dataset "
        "(meta_lab.csv + labels.csv) "
        "and report, per fault type and overall: episode recall, window precision, top-1/top-3 "
        "subsystem attribution accuracy and the false-alarm share of windows on baseline runs.",
    )
    p.add_argument(
        "--data", default=None, help="dataset folder (default: the bundled data/lab or $REVEAL_DATA_DIR)"
    )
    p.add_argument("--out", default="results/evaluate", help="where the CSV/Markdown tables go")
    p.add_argument(
        "--mode",
        default="calibrated",
        choices=("calibrated", "baseline", "self", "alone", "all"),
        help="calibrated (default): fit on the workload's other baseline runs, thresholds "
        "cross-fitted on them (each scored by detectors fitted on the rest) for --false-alarm-rate; "
        "baseline: fit on the other baseline runs, in-sample thresholds; self: fit on "
        "the run itself (the paper's setting); alone: each run by itself with `detect RUN`'s defaults "
        "(robust thresholds, its own pruned space, --min-run, the sentinel rule for a run alone); "
        "all: calibrated, baseline and self",
    )
    p.add_argument("--preset", default="paper", help="window/detector preset")
    p.add_argument(
        "--grace",
        type=as_text(duration_in(0.0, 3600.0)),
        default="0s",
        help="count flagged windows up to this long after an episode as hits",
    )
    add_policy_arguments(
        p,
        ("calibration", "false_alarm_rate", "min_agreement", "min_run", "trim", "prune", "z_clip", "sentinel_samples"),
    )
    p.add_argument(
        "--persist",
        type=_positive_int,
        default=1,
        help="a window counts as flagged only inside K consecutive flagged windows (default 1)",
    )
    p.add_argument("--runs", default=None, help="comma-separated run stems to evaluate (default: all)")
    p.add_argument(
        "--json",
        default=None,
        metavar="FILE",
        help="also write a JSON object: overall, per fault type and per magnitude (episodes, "
        "episode_recall, window_precision, false_alarm_share, top1/top3_accuracy, score_auc) and the "
        "settings; with --mode all, one file per mode (FILE's stem + _<mode>); the every-metric "
        "evaluation beside the pruned one goes to FILE's stem + _all",
    )
    p.add_argument(
        "--no-evidence",
        action="store_true",
        help="skip episode_evidence.csv (default: for each episode label and each host of its run, the "
        "metrics whose mean over the episode lies beyond every equally long span of the workload's "
        "fault-free runs on that host, and not beyond it in the run's own calm span: whether the "
        "telemetry showed a fault the detectors missed, and where)",
    )
    p.set_defaults(func=_run)


def _evidence(args: argparse.Namespace, runs: list[str] | None, episodes) -> None:  # noqa: ANN001
    import json
    from pathlib import Path

    from reveal_lab.evaluation import episode_evidence, evidence_summary

    ev = episode_evidence(args.data, runs=runs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ev.write_csv(out / "episode_evidence.csv")
    summ = evidence_summary(ev, episodes)
    (out / "episode_evidence.json").write_text(json.dumps(summ, indent=1, default=str))
    print(
        f"[evidence] {summ['visible']} of {summ['episodes']} episode labels left their fault-free range "
        f"in some metric ({summ['visible_at_host']} on their own host, {summ['visible_only_on_peers']} only "
        f"on a peer); missed by the detectors although visible: {len(summ.get('missed_visible', []))}"
    )
    for m in summ.get("missed_visible", [])[:12]:
        print(
            f"  {m['fault_type']}@{m['magnitude']:g} {m['run']} {m['host']}: {m['metric']} "
            f"on {m['evidence_host']} {m['episode_mean']:.3g} (fault-free at most {m['faultfree_max']:.3g})"
        )
    print(f"[evidence] {out / 'episode_evidence.csv'}, {out / 'episode_evidence.json'}")


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from reveal_lab.config import get_preset, parse_duration
    from reveal_lab.evaluation import evaluate_dataset, write_comparison, write_evaluation_json

    preset = get_preset(args.preset)
    policy = policy_from_args(args)
    modes = ("calibrated", "baseline", "self") if args.mode == "all" else (args.mode,)
    runs = [r for r in args.runs.split(",") if r] if args.runs else None
    if isinstance(policy.prune, str) and not Path(policy.prune).is_file():
        print(f"reveal-lab evaluate: --pruning {policy.prune}: no such file (expected a pruning.json)")
        return 2
    # the pruned space (fitted, or --pruning FILE) and every metric beside it; --no-prune: every metric
    both = {"pruned": policy.prune, "all": False}
    first_episodes = None
    for mode in modes:
        evs = {}
        # a run alone is not pruned unless asked (DetectionPolicy.pruned_space)
        alone_unpruned = mode == "alone" and policy.prune is None
        spaces = {"all": False} if policy.prune is False or alone_unpruned else both
        for space, prune in spaces.items():
            ev = evaluate_dataset(
                args.data,
                mode=mode,
                preset=preset,
                policy=policy.with_(prune=prune),
                grace_s=parse_duration(args.grace),
                runs=runs,
                persist=args.persist,
            )
            if space == "pruned" and ev.pruning is not None:
                spaces["pruned"] = ev.pruning  # fitted once, reused by the next modes
            if space == "all" and len(spaces) > 1:
                ev.mode = f"{mode}_all"  # evaluation_<mode>_all.csv beside the pruned tables
            paths = ev.write(Path(args.out))
            ev.mode = mode
            if args.json:
                j = Path(args.json)
                tag = (f"_{mode}" if len(modes) > 1 else "") + ("_all" if space == "all" and len(spaces) > 1 else "")
                if tag:
                    j = j.with_name(f"{j.stem}{tag}{j.suffix or '.json'}")
                paths["json"] = write_evaluation_json(ev, j)
            evs[space] = ev
            if first_episodes is None:
                first_episodes = ev.episodes
            print(paths["table_md"].read_text())
            names = ", ".join(p.name for p in paths.values())
            print(f"[{mode}, {space} metrics] tables in {args.out}: {names}")
        if len(evs) > 1:
            out = Path(args.out) / (mode if len(modes) > 1 else "")
            cmp = write_comparison(evs, out)
            print(f"[{mode}] pruned vs all: " + ", ".join(str(p) for p in cmp.values()))
    if not args.no_evidence:
        _evidence(args, runs, first_episodes)
    return 0
