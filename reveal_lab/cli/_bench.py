"""``reveal-lab bench ...``: detection and attribution benchmarks on labelled data.

* ``bench labelled --data DIR --out OUT [--servers a,b]``: fit on each server's training
  half, score its test half, write ``OUT/NAME.scores.csv``, ``OUT/NAME.attribution.jsonl``
  (and the same per detector under ``OUT/detectors/<name>/``), score them with the
  separate scorer, write ``OUT/summary.json`` and print the table.
* ``bench score --data DIR --out OUT``: the separate scorer alone, on any output folder
  in that format.

``--data`` defaults to ``$REVEAL_LABELLED_DIR``.
"""

from __future__ import annotations

import os

from reveal_lab.cli._ranges import int_in


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = sub.add_parser("bench", help="detection/attribution benchmarks on labelled server telemetry")
    verbs = p.add_subparsers(dest="bench_command", metavar="VERB")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    env = os.environ.get("REVEAL_LABELLED_DIR")

    lab = verbs.add_parser(
        "labelled", help="run the pipeline on labelled servers (SMD/ASD layout) and score it"
    )
    lab.add_argument(
        "--data",
        default=env,
        required=env is None,
        help="folder in the labelled-servers layout (default $REVEAL_LABELLED_DIR)",
    )
    lab.add_argument("--out", required=True, help="output folder")
    lab.add_argument("--servers", default=None, help="comma-separated server names (default: all)")
    lab.add_argument(
        "--window-rows",
        type=int_in(2, 100_000),
        default=None,
        help="rows per window (stride 1 row), the same for every server (default 10)",
    )
    lab.add_argument(
        "--features",
        default=None,
        help="comma-separated window features (default: all for windows of >= 30 rows, "
        "else mean,std,min,max,slope)",
    )
    lab.add_argument(
        "--estimators", type=int_in(1, 100_000), default=None, help="Isolation Forest trees (default 200)"
    )
    lab.add_argument(
        "--backend",
        default=None,
        choices=("numba", "numpy", "tsfresh"),
        help="window-feature backend (default numba)",
    )
    lab.add_argument(
        "--threshold",
        default=None,
        choices=("pot", "quantile"),
        help="decisions: peaks-over-threshold on a held-out calibration split of the training "
        "windows (default) or the 0.99 quantile of the in-sample training scores",
    )
    lab.add_argument(
        "--attribution",
        default=None,
        choices=("window_z", "deviation", "windows", "sum"),
        help="metric ranking of each flagged run (default window_z, the rule of reveal-lab detect)",
    )
    lab.add_argument("--json", default=None, help="also copy summary.json here")
    lab.set_defaults(func=_labelled)

    sc = verbs.add_parser("score", help="score an output folder (NAME.scores.csv + NAME.attribution.jsonl)")
    sc.add_argument("--data", default=env, required=env is None, help="labelled-servers folder (labels)")
    sc.add_argument("--out", required=True, help="folder with the files to score")
    sc.add_argument("--servers", default=None, help="comma-separated names (default: all in --out)")
    sc.add_argument("--json", default=None, help="write the scores here")
    sc.set_defaults(func=_score)


def _servers(text: str | None) -> list[str] | None:
    if not text:
        return None
    names = [s.strip() for s in text.split(",") if s.strip()]
    return names or None


def _labelled(args) -> int:  # noqa: ANN001
    import json
    from dataclasses import replace
    from pathlib import Path

    from reveal_lab.bench import LabelledConfig, run_labelled
    from reveal_lab.bench import format_server_table, format_table

    cfg = LabelledConfig()
    if args.window_rows is not None:
        if args.window_rows < 2:
            raise ValueError(f"--window-rows must be at least 2, got {args.window_rows}")
        cfg = replace(cfg, window_rows=args.window_rows)
    if args.features:
        cfg = replace(cfg, features=tuple(f.strip() for f in args.features.split(",") if f.strip()))
    if args.estimators is not None:
        cfg = replace(cfg, iforest_estimators=args.estimators)
    if args.backend is not None:
        cfg = replace(cfg, backend=args.backend)
    if args.threshold is not None:
        cfg = replace(cfg, threshold=args.threshold)
    if args.attribution is not None:
        cfg = replace(cfg, attribution=args.attribution)
    summary = run_labelled(args.data, args.out, servers=_servers(args.servers), config=cfg)
    print(format_table(summary["results"]))
    print()
    print(format_server_table(summary["results"], ["combined"]))
    print(f"\nwrote {Path(args.out) / 'summary.json'}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text((Path(args.out) / "summary.json").read_text())
        json.loads(Path(args.json).read_text())  # it must stay valid JSON
    return 0


def _score(args) -> int:  # noqa: ANN001
    import json
    from pathlib import Path

    from reveal_lab.bench import format_table, score_folder
    from reveal_lab.jsonsafe import dumps

    res = score_folder(args.out, args.data, _servers(args.servers))
    print(format_table({Path(args.out).name or "out": res}))
    if args.json:
        Path(args.json).write_text(dumps(res, indent=2))
    return 0
