"""``reveal-lab detect RUN... [--baseline RUN...]``: find, explain and report anomalous windows."""

from __future__ import annotations

import argparse
import sys

from reveal_lab.cli._checks import (
    REPORT_OUTPUTS,
    check_enough_samples,
    check_pruning_overlap,
    check_stride,
    few_windows_warning,
    keep_inputs_in_report,
    without_own_run,
    workload_warning,
)
from reveal_lab.cli._help import DETECT_ADVANCED, DETECT_HELP, DETECT_METAVARS, group_advanced
from reveal_lab.cli._policy import add_policy_arguments, policy_from_args
from reveal_lab.cli._ranges import as_text, duration_in


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = sub.add_parser(
        "detect",
        help="detect and explain anomalous windows in runs; write the anomaly report",
        description=(
            "Detect, attribute and report anomalous windows of runs (.txt, ZIP::member, .parquet, folder)."
        ),
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="runs to examine")
    p.add_argument(
        "--baseline",
        nargs="+",
        metavar="RUN",
        default=None,
        help="reference runs to fit the detectors on (default: each run itself)",
    )
    length = as_text(duration_in(0.001, 3600.0))
    p.add_argument("--window", type=length, default=None, metavar="DUR", help="window length (default 3s)")
    p.add_argument("--stride", type=length, default=None, metavar="DUR", help="window stride (default 1s)")
    p.add_argument(
        "--interval", type=length, default=None, metavar="DUR", help="nominal sampling interval (default 100ms)"
    )
    p.add_argument("--preset", default="paper", help="window and detector settings: paper, smoke (default paper)")
    p.add_argument(
        "--select",
        metavar="FILE",
        default=None,
        help="a text file of metric keys (one per line): the diagnostic space to score",
    )
    add_policy_arguments(p)
    p.add_argument(
        "--view",
        choices=("dataset", "raw"),
        default=None,
        help="collector folders: 'dataset' (public-dataset _diff columns, default) or 'raw'",
    )
    p.add_argument(
        "--cross-host",
        action="store_true",
        help="also compare the hosts of all RUNs with each other (cross-host deviation, static "
        "metrics included; runs with 3+ hosts get it anyway); with 2+ --baseline runs of the same "
        "hosts, each host is also judged against itself in them",
    )
    p.add_argument(
        "--out", metavar="DIR", default="reveal-report", help="report folder (default ./reveal-report)"
    )
    p.add_argument(
        "--job-pace",
        metavar="FILE",
        action="append",
        default=None,
        help="the training job's step times (CSV with t, a step's start in epoch seconds, and step_s, "
        "its duration): each episode gets the job's slowdown with an interval, and a run with no "
        "recorded span is scored over the job's steady span; once for every RUN, or once per RUN",
    )
    group_advanced(p, DETECT_ADVANCED, DETECT_HELP, metavars=DETECT_METAVARS,
                   usage="reveal-lab detect [-h] [--baseline RUN [RUN ...]] [--out DIR] [options] RUN [RUN ...]")
    p.set_defaults(func=_run)


def _jobs(runs: list) -> list[dict]:
    """Baseline runs as jobs, ``{host: frame}`` each: host files of one recorded job (the lab's
    ``run_group``) together, any other run by itself; a host's first file in a job is used."""
    jobs: dict[str, dict] = {}
    for r in runs:
        key = str(r.meta.extra.get("run_group") or r.run_id)
        for h, part in r.split_hosts().items():
            jobs.setdefault(key, {}).setdefault(h, part.frame)
    return list(jobs.values())


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    preset = _preset_from_args(args)  # the window flags and --out checked before the slow imports
    out_dir = Path(args.out)
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"--out {out_dir} is a file; give a folder for the report (made if missing)")

    from reveal_lab.io import StagedFolder, load_run
    from reveal_lab.pipeline import detect_run, fit_pruning, load_pruning, save_pruning
    from reveal_lab.report import write_report

    policy = policy_from_args(args)
    selected = _selected_keys(args.select)

    def load(path: str):  # noqa: ANN202
        opts = {"view": args.view} if args.view and Path(path).is_dir() else {}
        return load_run(path, **opts)

    baseline = [load(b) for b in args.baseline] if args.baseline else None
    paces = _job_paces(args.job_pace, len(args.runs))
    stage = StagedFolder(args.out, ours=REPORT_OUTPUTS)  # moved into place once complete
    out = stage.path
    pruning = None
    saved = policy.prune if not isinstance(policy.prune, bool | None) else None  # --pruning FILE
    given = {"RUN": args.runs, "--baseline": args.baseline or [], "--pruning": [saved], "--select": [args.select]}
    for note in keep_inputs_in_report(args.out, out, given):
        print(f"note: {note}", file=sys.stderr)
    if selected is None and policy.pruned_space(len(baseline) if baseline else 0) is not False:
        if saved is not None:
            pruning = load_pruning(saved)
        elif baseline:  # fitted once on the baseline runs, saved beside the report
            pruning = fit_pruning(baseline, preset.prune.threshold, method=policy.prune_method, trim=policy.trim)
            save_pruning(pruning, out / "pruning.json")
    dets = []
    frames_by_run: dict[str, object] = {}  # for the report's raw traces
    episodes = []
    frames_by_host: dict[str, object] = {}
    repeated: set[str] = set()
    pace_of: dict = {}
    for i, path in enumerate(args.runs):
        run = load(path)
        if paces:
            run = _with_job_span(run, *paces[min(i, len(paces) - 1)])
            pace_of[run.run_id] = paces[min(i, len(paces) - 1)][1]
        check_enough_samples(run, preset.window)
        if args.cross_host:
            for h, part in run.split_hosts().items():
                (repeated.add(h) if h in frames_by_host else frames_by_host.__setitem__(h, part.frame))
        mismatch = interval_mismatch(run, preset.window.interval_s, given=args.interval is not None)
        run_baseline, own = without_own_run(path, args.baseline, baseline)
        notes = [own, workload_warning(run, run_baseline)]
        if saved is not None and pruning is not None:
            notes.append(check_pruning_overlap(pruning, run, saved, force=policy.force_baseline))
        run_pruning = pruning
        alone_space = policy.pruned_space(len(run_baseline) if run_baseline else 0)
        if selected is None and alone_space is not False and run_pruning is None:  # the run alone: its own space
            run_pruning = fit_pruning([run], preset.prune.threshold, method=policy.prune_method, trim=policy.trim)
            name = "pruning.json" if len(args.runs) == 1 else f"pruning_{run.run_id}.json"
            save_pruning(run_pruning, out / name)
        det = detect_run(
            run,
            baseline=run_baseline,
            preset=preset,
            selected=selected,
            policy=policy.with_(prune=run_pruning if run_pruning is not None else False),
        )
        rate = policy.false_alarm_rate
        notes += [mismatch, few_windows_warning(run.run_id, det.summary["windows"], det.fit_mode, rate)]
        for note in filter(None, notes):
            print(f"warning: {note}", file=sys.stderr)
            det.warnings.append(note)
            det.summary["warnings"] = list(det.warnings)
        if det.config["trim"].get("run"):
            print(f"{run.run_id}: {det.config['trim']['run']['left_out']}")
        print(_run_line(run.run_id, det))
        dets.append(det)
        frames_by_run[run.run_id] = run.frame
        episodes.append(_episodes_near(path, run.run_id))
    crosshost = _cross_host(frames_by_host, repeated, baseline) if args.cross_host else None
    import polars as pl

    known = [e for e in episodes if e is not None and e.height]
    paths = write_report(
        dets,
        out,
        crosshost=crosshost,
        runs=frames_by_run,
        episodes=pl.concat(known, how="vertical") if known else None,
        pace=pace_of or None,
    )
    print(f"report: {stage.commit()} ({', '.join(paths)})")
    return 0


def _job_paces(files: list[str] | None, n_runs: int) -> list:
    """``(file, JobPace)`` per ``--job-pace`` given: once (for every run) or once per run."""
    if not files:
        return []
    if len(files) not in (1, n_runs):
        raise ValueError(f"--job-pace: give it once (every RUN) or once per RUN ({n_runs}), got {len(files)}")
    from reveal_lab.io import read_job_pace

    return [(f, read_job_pace(f)) for f in files]


def _with_job_span(run, file: str, pace):  # noqa: ANN001, ANN202 - a Run
    """``run`` with the job's steady span as its workload span (when it has none recorded),
    refused when no step of the pace ``file`` falls inside the recording."""
    import dataclasses
    import datetime as dt

    from reveal_lab.io import steady_span
    from reveal_lab.pipeline import recorded_span

    ts = run.frame["timestamp"]
    lo, hi = (t.replace(tzinfo=dt.UTC).timestamp() for t in (ts.min(), ts.max()))
    if not ((pace.t >= lo) & (pace.t <= hi)).any():
        raise ValueError(
            f"--job-pace {file}: no step starts within {run.run_id}'s recording "
            f"({ts.min()} to {ts.max()} UTC); t must be epoch seconds on the same clock"
        )
    if recorded_span(run) is not None:
        return run
    a, b = steady_span(pace)
    stamp = [dt.datetime.fromtimestamp(x, dt.UTC).replace(tzinfo=None).isoformat(sep=" ") for x in (a, b)]
    extra = {**(run.meta.extra or {}), "workload_start": stamp[0], "workload_end": stamp[1]}
    note = f"{run.run_id}: scored over the job's steady span from --job-pace {file} ({stamp[0]} to {stamp[1]})"
    return type(run)(dataclasses.replace(run.meta, extra=extra), run.frame, [*run.warnings, note])


def _preset_from_args(args: argparse.Namespace):  # noqa: ANN202 - a Preset
    """``--preset`` with ``--window``/``--stride``/``--interval`` applied; a stride longer than
    the window is refused."""
    import dataclasses

    from reveal_lab.config import get_preset, parse_duration

    preset = get_preset(args.preset)
    win = preset.window
    changes = {}
    for arg, fieldname in (("window", "window_s"), ("stride", "stride_s"), ("interval", "interval_s")):
        v = getattr(args, arg)
        if v is not None:
            d = parse_duration(v)
            if d <= 0:
                raise ValueError(f"--{arg} must be positive, got {v!r}")
            changes[fieldname] = d
    if changes:  # the preset's window hyper-parameters (WindowConfig), not a detection decision
        preset = dataclasses.replace(preset, window=dataclasses.replace(win, **changes))
    check_stride(preset.window)
    return preset


def _selected_keys(select: str | None) -> list[str] | None:
    """The metric keys of ``--select FILE`` (one a line, ``#`` comments), or ``None``."""
    from pathlib import Path

    if not select:
        return None
    lines = Path(select).read_text().splitlines()
    selected = [s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#")]
    if not selected:
        raise ValueError(f"{select}: no metric keys in the file")
    return selected


def _run_line(run_id: str, det) -> str:  # noqa: ANN001 - a Detection
    """One line per run: windows, thresholds, metric space, and the anomalous share by subsystem."""
    s = det.summary
    per = sorted(s["per_subsystem"].items(), key=lambda kv: -kv[1]["windows"])
    subs = ", ".join(f"{k} {v['windows']}" for k, v in per)
    pruned = det.config["pruning"]
    space = f"{pruned['n_selected']} pruned metrics), " if pruned["applied"] else "all metrics), "
    share = f"{s['anomalous']} anomalous ({100 * s['anomalous_share']:.1f} %): {subs}"
    verdict = "no anomaly" if s["no_anomaly"] else share
    return f"{run_id}: {s['windows']} windows ({det.fit_mode} thresholds, " + space + verdict


def _cross_host(frames_by_host: dict, repeated: set[str], baseline: list | None):  # noqa: ANN202
    """Cross-host deviation of the runs' hosts (3 or more): against baseline runs of the same
    hosts when there are 2+, else the cluster median; ``None`` with fewer hosts."""
    from reveal_lab.crosshost import baseline_deviation, deviation

    if repeated:
        print(f"cross-host: hosts {sorted(repeated)} appear in several runs; each host's first run is used")
    if len(frames_by_host) < 3:
        print(f"cross-host: {len(frames_by_host)} host(s); at least 3 are needed to tell which one deviates")
        return None
    # baseline runs of the same hosts (one job: a run_group, or one file): each host is
    # also judged against itself in them, so a host's usual role is not flagged
    jobs = [j for j in _jobs(baseline or []) if set(j) == set(frames_by_host)]
    if len(jobs) >= 2:
        crosshost = baseline_deviation(frames_by_host, jobs, align="elapsed")
        against = f" against {len(jobs)} baseline runs of the same hosts"
    else:
        crosshost = deviation(frames_by_host, align="elapsed")
        against = " (the cluster median only: give 2+ --baseline runs of the same hosts)"
    n = int(crosshost["persistent"].sum())
    print(f"cross-host: {len(frames_by_host)} hosts{against}, {n} persistent deviation(s)")
    return crosshost


def _episodes_near(path: str, run_id: str):  # noqa: ANN202 - a polars frame or None
    """Labelled fault episodes of ``run_id`` from a ``labels.csv`` beside the run file or in
    one of the two folders above it (the lab dataset's layout), else ``None``."""
    from pathlib import Path

    from reveal_lab.io import read_labels
    from reveal_lab.studies import labelled_episodes
    from reveal_lab.telemetry import TelemetryError

    p = Path(str(path).split("::", 1)[0]).resolve()
    for d in [p.parent, *list(p.parents)[1:3]]:
        f = d / "labels.csv"
        if f.is_file():
            try:
                return labelled_episodes(read_labels(f), [run_id])
            except TelemetryError as exc:  # an optional file: the report goes on without it
                print(f"warning: labelled episodes left out of the report: {exc}", file=sys.stderr)
                return None
    return None


#: the data's median sampling interval may differ from --interval by this factor
INTERVAL_TOLERANCE = 1.5


def interval_mismatch(run, interval_s: float, *, given: bool) -> str | None:  # noqa: ANN001 - a Run
    """A warning when the run's median sampling interval is not ``interval_s`` (within
    a factor :data:`INTERVAL_TOLERANCE`): windows are sized in samples from it."""
    ts = run.frame.get_column("timestamp")
    if ts.len() < 3:
        return None
    d = ts.diff().drop_nulls().dt.total_microseconds().median()
    if d is None or d <= 0:
        return None
    actual = float(d) / 1e6
    ratio = actual / interval_s
    if 1 / INTERVAL_TOLERANCE <= ratio <= INTERVAL_TOLERANCE:
        return None
    flag = f"--interval {interval_s:g}s" if given else f"the preset's interval {interval_s:g}s"
    return (
        f"{run.run_id}: {flag} does not match the data, sampled every {actual * 1000:.0f} ms (median); "
        "window sizes in samples and the minimum samples per window follow the interval: give "
        f"--interval {actual * 1000:.0f}ms"
    )
