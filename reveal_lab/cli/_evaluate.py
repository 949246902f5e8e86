"""``reveal-lab evaluate``: score detection and attribution against a labelled dataset's ground truth."""

from __future__ import annotations

import argparse

from reveal_lab.cli._types import CALIBRATIONS, add_rule_arguments, add_trim_argument, with_rule_arguments
from reveal_lab.cli._ranges import as_text, duration_in
from reveal_lab.cli._types import positive_int as _positive_int
from reveal_lab.cli._types import share as _rate


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
        "--min-agreement",
        type=int,
        default=None,
        choices=(1, 2, 3),
        help="detectors that must flag a window (default 2: agreement, as the paper, keeps one "
        "detector's false alarms out; 1 = any detector; --mode alone: 1, as detect RUN)",
    )
    p.add_argument(
        "--calibration",
        default="trimmed",
        choices=CALIBRATIONS,
        help="calibrated mode: how thresholds combine the left-out fault-free runs' scores: trimmed "
        "(default) pooled less the most extreme run; pooled: all (the worst run decides); median: "
        "the median of each run's quantile",
    )
    add_rule_arguments(p)
    p.add_argument(
        "--grace",
        type=as_text(duration_in(0.0, 3600.0)),
        default="0s",
        help="count flagged windows up to this long after an episode as hits",
    )
    add_trim_argument(p)
    p.add_argument(
        "--min-run",
        type=_positive_int,
        default=None,
        metavar="N",
        help="--mode alone: a detector's flag counts only inside N or more consecutive windows over "
        "its threshold (default: detect RUN's, 4)",
    )
    p.add_argument(
        "--false-alarm-rate",
        type=_rate,
        default=0.01,
        help="calibrated mode: target share of fault-free windows flagged by any detector (default 0.01)",
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
        "--no-prune",
        action="store_true",
        help="score every metric only (default: the pruned space, fitted on the dataset's fault-free "
        "runs, and every metric beside it; pruned_vs_all.csv/.json compare them)",
    )
    p.add_argument(
        "--pruning",
        default=None,
        metavar="FILE",
        help="a pruning.json to reuse (default: fit on the dataset's fault-free runs)",
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

    preset = with_rule_arguments(get_preset(args.preset), args)
    modes = ("calibrated", "baseline", "self") if args.mode == "all" else (args.mode,)
    runs = [r for r in args.runs.split(",") if r] if args.runs else None
    if args.pruning and not Path(args.pruning).is_file():
        print(f"reveal-lab evaluate: --pruning {args.pruning}: no such file (expected a pruning.json)")
        return 2
    spaces = {"all": False} if args.no_prune else {"pruned": args.pruning or True, "all": False}
    first_episodes = None
    for mode in modes:
        evs = {}
        for space, prune in spaces.items():
            ev = evaluate_dataset(
                args.data,
                mode=mode,
                preset=preset,
                min_agreement=args.min_agreement or (1 if mode == "alone" else 2),
                grace_s=parse_duration(args.grace),
                runs=runs,
                trim=args.trim,
                min_run=args.min_run,
                false_alarm_rate=args.false_alarm_rate,
                persist=args.persist,
                prune=prune,
                calibration=args.calibration,
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
