"""``reveal-lab evaluate``: score detection and attribution against a labelled dataset's ground truth."""

from __future__ import annotations

import argparse


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return v


def _rate(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text!r}") from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1 (exclusive), got {text!r}")
    return v


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
        choices=("calibrated", "baseline", "self", "all"),
        help="calibrated (default): fit on the workload's other baseline runs, thresholds "
        "cross-fitted on them (each scored by detectors fitted on the rest) for --false-alarm-rate; "
        "baseline: fit on the other baseline runs, in-sample thresholds; self: fit on "
        "the run itself (the paper's setting); all: the three",
    )
    p.add_argument("--preset", default="paper", help="window/detector preset")
    p.add_argument("--min-agreement", type=int, default=1, help="detectors that must flag a window (1-3)")
    p.add_argument(
        "--grace", default="0s", help="count flagged windows up to this long after an episode as hits"
    )
    p.add_argument(
        "--no-trim",
        action="store_true",
        help="score whole recordings (default: only each workload's active span)",
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
        "settings; with --mode all, one file per mode (FILE's stem + _<mode>)",
    )
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from reveal_lab.config import parse_duration
    from reveal_lab.evaluation import evaluate_dataset, write_evaluation_json

    modes = ("calibrated", "baseline", "self") if args.mode == "all" else (args.mode,)
    runs = [r for r in args.runs.split(",") if r] if args.runs else None
    for mode in modes:
        ev = evaluate_dataset(
            args.data,
            mode=mode,
            preset=args.preset,
            min_agreement=args.min_agreement,
            grace_s=parse_duration(args.grace),
            runs=runs,
            trim=not args.no_trim,
            false_alarm_rate=args.false_alarm_rate,
            persist=args.persist,
        )
        paths = ev.write(Path(args.out))
        if args.json:
            j = Path(args.json)
            if len(modes) > 1:
                j = j.with_name(f"{j.stem}_{mode}{j.suffix or '.json'}")
            paths["json"] = write_evaluation_json(ev, j)
        print(paths["table_md"].read_text())
        print(f"[{mode}] tables in {args.out}: " + ", ".join(p.name for p in paths.values()))
    return 0
