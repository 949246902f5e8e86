"""The anomaly report: ``anomalies.csv``, ``summary.json``, ``report.md``, ``report.html``."""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from reveal_lab.attribution import EVIDENCE_SCHEMA
from reveal_lab.jsonsafe import write_json
from reveal_lab.io import JobPace
from reveal_lab.pipeline import ANOMALIES_COLUMNS, Detection
from reveal_lab.render import markdown_table, render, table_cells

__all__ = ["write_report", "ANOMALIES_COLUMNS", "REPORT_FILES"]

REPORT_FILES: tuple[str, ...] = ("anomalies.csv", "summary.json", "report.md", "report.html")


def _table4(det: Detection, max_rows: int) -> pl.DataFrame:
    """One row per anomalous window (best evidence first): Table-4 style."""
    ev = det.evidence
    if ev.height == 0:
        return pl.DataFrame()
    top = ev.filter(pl.col("rank") == 1).sort(["agreement", "combined"], descending=True).head(max_rows)
    w = det.windows.select("window_id", "host", "subsystems")
    return top.join(w, on=["window_id", "host"], how="left").select(
        "window_id",
        "start",
        "end",
        "host",
        "methods",
        "agreement",
        "subsystems",
        "metric",
        "feature",
        "claim",
    )


def _md_table(df: pl.DataFrame) -> str:
    return markdown_table(df, digits=3) if df.height else ""


def _table4_html(t: pl.DataFrame) -> pl.DataFrame:
    """The anomalous-window table compacted for a page: time of day, metric · feature."""
    if t.height == 0:
        return t
    return t.select(
        pl.col("window_id").alias("window"),
        pl.col("start").dt.strftime("%H:%M:%S%.3f").alias("start"),
        "host",
        pl.col("methods").cast(pl.String).str.replace_all(",", "+").alias("detectors"),
        "agreement",
        "subsystems",
        pl.format("{} · {}", "metric", "feature").alias("metric · feature"),
        "claim",
    )


def _subsystem_table(s: dict[str, Any]) -> pl.DataFrame:
    rows = [
        {"subsystem": k, "windows": v["windows"], "share of windows": v["share"], "top-ranked in": v["top"]}
        for k, v in sorted(s["per_subsystem"].items(), key=lambda kv: -kv[1]["windows"])
    ]
    return pl.DataFrame(rows) if rows else pl.DataFrame()


def _detector_table(s: dict[str, Any], thresholds: dict[str, dict[str, float]]) -> pl.DataFrame:
    rows = []
    for m, v in s["per_detector"].items():
        thr = {h: t[m] for h, t in thresholds.items() if m in t}
        rows.append(
            {
                "detector": m,
                "flagged windows": v["flagged"],
                "share": v["share"],
                **(
                    {"threshold": next(iter(thr.values()))}
                    if len(thr) == 1
                    else {"threshold per host": ", ".join(f"{h} {x:.3g}" for h, x in thr.items())}
                ),
            }
        )
    return pl.DataFrame(rows)


def _sections(
    det: Detection, max_rows: int, episodes: tuple[str, str, pl.DataFrame | None] | None = None
) -> list[tuple[str, str, pl.DataFrame | None]]:
    """(heading, paragraph, table) per section of one run; ``episodes``: its episodes section
    (:func:`_episode_section`), after the results."""
    s = det.summary
    out: list[tuple[str, str, pl.DataFrame | None]] = [(f"Run {det.run_id}", _intro(det), None)]
    out += _result_sections(det, max_rows)
    if episodes is not None:
        out.append(episodes)
    out.append(("Detectors", "", _detector_table(s, det.thresholds)))
    out += _policy_section(det) + _per_host_section(s) + _sentinel_section(det, max_rows)
    if det.warnings:
        out.append(("Notes", "\n".join(f"- {w}" for w in det.warnings[:50]), None))
    return out


def _intro(det: Detection) -> str:
    """The run's first paragraph: what was scored and left out, the fit, the decision rule and
    the metric space."""
    s = det.summary
    hosts = ", ".join(s["hosts"])
    q = det.config.get("policy", {}).get("quantile")
    top = f"{100 * (1 - q):g} %" if q is not None else "a share"
    fit = {
        "self": f"fit on the run itself (each detector flags about the top {top} of its windows)",
        "baseline": f"fit on baseline runs (each detector's threshold the top {top} of their scores)",
        "robust": "fit on the run itself, thresholds at median + k·MAD of the run's own scores "
        f"(false-alarm budget {det.config.get('false_alarm_rate')})",
        "calibrated": "fit on baseline runs, thresholds from their out-of-sample scores "
        f"(false-alarm budget {det.config.get('false_alarm_rate')}"
        + (
            f"; each standardized feature counts at most {det.config['z_clip']:g} units"
            if det.config.get("z_clip") is not None
            else "; unclipped z"
        )
        + ")",
    }[det.fit_mode]
    trim = det.config.get("trim", {}).get("run")
    prune = det.config.get("pruning", {})
    intro = (
        (f"**{trim['left_out']}** " if trim and trim.get("left_out") else "")
        + f"{s['windows']} windows of {det.config['window_s']:g} s every {det.config['stride_s']:g} s "
        f"on {hosts}; detectors {', '.join(det.methods)}, {fit}. "
        f"A window counts as anomalous when at least {det.min_agreement} detector(s) flag it"
        + (
            f", or when a counter that is 0 in every sample of the baseline runs is non-zero in "
            f"{det.config['sentinel_samples']} or more of its samples (the sentinel rule: "
            f"{s.get('sentinel_windows', 0)} window(s))."
            if det.config.get("sentinel_samples")
            else (
                ", or when a counter that is 0 in at least half of the run's samples moves in 90 % or "
                f"more of its samples, in {det.config.get('sentinel_min_run')} or more windows in a row "
                f"(the sentinel rule for a run alone: {s.get('sentinel_windows', 0)} window(s))."
            )
            if det.config.get("sentinel_rule") == "lone"
            else "."
        )
        + (
            f" A detector flags a window only inside {det.config['min_run_windows']} or more consecutive "
            "windows over its threshold (shorter runs, such as one sample's spike, are dropped: "
            f"{s.get('short_runs_dropped', 0)} window(s) here; `--min-run 1` counts every window)."
            if det.config.get("min_run_windows", 1) > 1
            else ""
        )
        + (
            f" Metric space: {prune['n_selected']} pruned metrics ({prune.get('source', '')})."
            if prune.get("applied")
            else " Metric space: every metric."
        )
    )
    return intro


def _result_sections(det: Detection, max_rows: int) -> list[tuple[str, str, pl.DataFrame | None]]:
    """The verdict; with anomalies, the Table-4-style windows and the per-subsystem breakdown."""
    s = det.summary
    out: list[tuple[str, str, pl.DataFrame | None]] = []
    if s["no_anomaly"]:
        out.append(
            (
                "Result",
                f"**No anomaly found**: no window reaches the agreement threshold ({det.min_agreement}).",
                None,
            )
        )
    else:
        out.append(
            (
                "Result",
                f"**{s['anomalous']} anomalous window(s)** ({100 * s['anomalous_share']:.1f} % of windows).",
                None,
            )
        )
        out.append(
            (
                "Anomalous windows (strongest evidence first)",
                "One row per window: its detectors, agreement, (joint) subsystems and the strongest "
                "metric–feature evidence. All evidence rows are in `anomalies.csv`.",
                _table4(det, max_rows),
            )
        )
        out.append(
            (
                "Per-subsystem breakdown",
                "Windows naming each subsystem (joint attribution counts a window once per subsystem named).",
                _subsystem_table(s),
            )
        )
    return out


def _policy_section(det: Detection) -> list[tuple[str, str, pl.DataFrame | None]]:
    """The resolved detection policy, when the detection recorded one."""
    out: list[tuple[str, str, pl.DataFrame | None]] = []
    policy = det.config.get("policy")
    if policy:
        out.append(
            (
                "Detection policy",
                f"The decisions in force (policy `{policy['name']}`, resolved for "
                f"{policy['baseline_runs']} baseline run(s) of a {policy['source']} run; `--policy` and "
                "the decision flags change them).",
                _policy_table(policy),
            )
        )
        deps = _departures_table(policy)
        if deps is not None:
            out.append(("Departures from the paper", "Where this run's decision is not the paper's method as written, and why.", deps))
    return out


def _per_host_section(s: Mapping[str, Any]) -> list[tuple[str, str, pl.DataFrame | None]]:
    """Windows, anomalies and top subsystems per host, for runs of several hosts."""
    out: list[tuple[str, str, pl.DataFrame | None]] = []
    if s.get("per_host"):
        rows = [
            {
                "host": h,
                "windows": v["windows"],
                "anomalous": v["anomalous"],
                "top subsystems": ", ".join(
                    k for k, _ in sorted(v["per_subsystem"].items(), key=lambda kv: -kv[1]["windows"])[:3]
                ),
            }
            for h, v in s["per_host"].items()
        ]
        out.append(("Per host", "", pl.DataFrame(rows)))
    return out


def _sentinel_section(det: Detection, max_rows: int) -> list[tuple[str, str, pl.DataFrame | None]]:
    """The counters the sentinel rule watched that moved (a run alone: its quiet counters;
    with baseline runs: counters silent in every baseline sample)."""
    out: list[tuple[str, str, pl.DataFrame | None]] = []
    sent = det.sentinels
    if sent is not None and sent.height:
        if det.config.get("sentinel_rule") == "lone":
            head = "Quiet counters that fired the sentinel rule"
            text = (
                f"{sent.height} counter(s) that are 0 in at least half of this run's samples moved in "
                f"90 % or more of the samples of {det.config.get('sentinel_min_run')} or more windows in a "
                "row (a run alone has no baseline to say which counters are silent; the detectors, "
                "fitted on the run, take such a burst for part of its normal spread when it covers much "
                "of the run). "
            )
        else:
            head = "Counters silent in the baseline that moved here"
            text = (
                f"{sent.height} counter(s) were 0 in every sample of every baseline run and are non-zero "
                "in this run (on the lab recording, packet loss shows only in such counters). The "
                "detectors hardly see them: the pruned space leaves out metrics constant in every "
                "baseline run, and a counter that never moved gives PCA and the isolation forest no "
                "spread to use. "
                + (
                    f"A window where one is non-zero in {det.config['sentinel_samples']} or more "
                    "of its samples is anomalous (the sentinel rule); fewer are evidence to check. "
                    if det.config.get("sentinel_samples")
                    else "They decide nothing here (`--sentinel-samples none`): evidence to check. "
                )
            )
        out.append(
            (
                head,
                text + "All rows are in `sentinels.csv`.",
                sent.head(max_rows).with_columns(
                    pl.col("share").round(4),
                    pl.col("first").dt.strftime("%H:%M:%S%.3f"),
                    pl.col("last").dt.strftime("%H:%M:%S%.3f"),
                ),
            )
        )
    return out


def _policy_table(policy: Mapping[str, Any]) -> pl.DataFrame:
    """One row per decision of a resolved policy (``Detection.config["policy"]``): its value and,
    where ``auto`` chose it or it does not apply, why."""
    reasons = policy.get("reasons", {})
    rows = [
        {"decision": k, "value": "none" if v is None else str(v), "why": reasons.get(k, "")}
        for k, v in policy.items()
        if k not in ("name", "reasons", "baseline_runs", "source", "departures")
    ]
    return pl.DataFrame(rows, schema={"decision": pl.String, "value": pl.String, "why": pl.String})


def _departures_table(policy: Mapping[str, Any]) -> pl.DataFrame | None:
    """Where the resolved ``paper`` policy departs from the paper (its ``departures``): the
    paper's sentence with its section, what is done here and why; ``None`` when there is none."""
    deps = policy.get("departures") or []
    if not deps:
        return None
    return pl.DataFrame(
        [{"paper": f"{d['section']}: \"{d['quote']}\"", "here": d["here"], "why": d["why"]} for d in deps],
        schema={"paper": pl.String, "here": pl.String, "why": pl.String},
    )


def _png(fig: Any) -> str:  # noqa: ANN401 - a matplotlib Figure
    """A figure as a base64 PNG ``data:`` URI, so the page carries its images."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _figures(
    det: Detection, frame: pl.DataFrame | None, episodes: pl.DataFrame | None, max_metrics: int
) -> list[dict[str, str]]:
    """Per host of ``det``: the score timeline of each detector (threshold, flagged
    windows, labelled episodes) and, when the run's frame is given, the raw traces of the
    top evidence metrics with the anomalous windows naming them shaded."""
    from reveal_lab.plots import plot_evidence_traces, plot_score_timeline

    out = []
    for host in det.windows["host"].unique(maintain_order=True).to_list():
        w = det.windows.filter(pl.col("host") == host)
        ep = None
        if episodes is not None and episodes.height:
            ep = episodes.filter((pl.col("run") == det.run_id) & (pl.col("host") == host))
        span = _recording_span(det)
        fig = plot_score_timeline(
            w, det.thresholds.get(host, {}), ep, methods=det.methods, title=f"{det.run_id} · {host}", recording=span
        )
        n_ep = 0 if ep is None else ep.height
        out.append(
            {
                "src": _png(fig),
                "alt": f"detector scores along run {det.run_id} on {host}",
                "caption": f"{host}: each detector's score per window (line), its threshold (dashed) and the "
                "windows it flags (dots)"
                + (
                    " along the whole recording, the scored span shaded green"
                    f" ({det.config['trim']['run']['left_out']})"
                    if span is not None
                    else ""
                )
                + (f"; {n_ep} labelled fault episode(s) shaded" if n_ep else "; no labelled episode known"),
            }
        )
        ev = det.evidence.filter(pl.col("host") == host) if det.evidence.height else det.evidence
        if frame is None or ev.height == 0:
            continue
        ranked = ev.group_by("metric").agg(pl.col("score").sum()).sort(["score", "metric"], descending=[True, False])
        metrics = [m for m in ranked["metric"].to_list() if m in frame.columns][:max_metrics]
        if not metrics:
            continue
        fig = plot_evidence_traces(
            frame.select("timestamp", *metrics),
            ev.filter(pl.col("metric").is_in(metrics)).select("metric", "start", "end").unique(),
            max_metrics=max_metrics,
        )
        out.append(
            {
                "src": _png(fig),
                "alt": f"raw traces of the top evidence metrics of {det.run_id} on {host}",
                "caption": f"{host}: raw traces of the metrics with the most evidence ({', '.join(metrics)}), "
                "the anomalous windows that name each metric shaded",
            }
        )
    return out


def _recording_span(det: Detection) -> tuple[Any, Any] | None:
    """The whole recording's first and last timestamps, from what trimming recorded."""
    import datetime as dt

    tr = det.config.get("trim", {}).get("run") or {}
    a, b = tr.get("recording_start"), tr.get("recording_end")
    if not a or not b:
        return None
    return dt.datetime.fromisoformat(a), dt.datetime.fromisoformat(b)


def _frame_of(runs: Mapping[str, Any] | None, run_id: str) -> pl.DataFrame | None:
    if not runs or run_id not in runs:
        return None
    r = runs[run_id]
    return r if isinstance(r, pl.DataFrame) else getattr(r, "frame", None)


def write_report(
    detections: Detection | Sequence[Detection],
    out_dir: str | Path,
    *,
    max_rows: int = 50,
    crosshost: pl.DataFrame | None = None,
    runs: Mapping[str, Any] | None = None,
    episodes: pl.DataFrame | None = None,
    figures: bool = True,
    max_metrics: int = 4,
    pace: Mapping[str, JobPace] | None = None,
) -> dict[str, Path]:
    """Write the report of one or several detections into ``out_dir``.

    Files: ``anomalies.csv`` (exactly :data:`ANOMALIES_COLUMNS`, one row per window ×
    metric–feature evidence; a header only when nothing is anomalous), ``summary.json``
    (per run: windows, anomalous share per detector, per subsystem and per host),
    ``report.md`` and ``report.html`` (Table-4-style table, per-subsystem breakdown).

    ``report.html`` also shows, per run and host, each detector's score along the run with
    its threshold and flagged windows (``episodes``: labelled fault episodes, columns
    ``run, host, start, end``, shaded when given), and the raw traces of the top evidence
    metrics with their anomalous windows shaded (when ``runs`` maps each run id to its
    :class:`~reveal_lab.telemetry.Run` or frame); images are embedded as PNG.
    ``figures=False`` leaves them out.

    With baseline runs, the counters that were 0 in every baseline sample and move in the run
    (:func:`reveal_lab.pipeline.sentinel_counters`; those that fire the sentinel rule make
    windows anomalous, see :func:`reveal_lab.pipeline.detect_run`) go to
    ``sentinels.csv`` and a section of the report, when there are any.

    Cross-host deviation (a detection's own, for runs with three or more hosts, or
    ``crosshost`` computed over several runs, see :func:`reveal_lab.crosshost.deviation`)
    goes to ``crosshost.csv`` and a section listing the persistent deviations.

    Every run's anomalous episodes (a host's anomalous windows less than 10 s apart,
    :func:`~reveal_lab.pipeline.episodes_of`) go to ``episodes.csv`` and a section, each with
    what moved most in its subsystem (:func:`~reveal_lab.pipeline.what_moved`, when ``runs``
    holds the run's frame). With ``pace`` (run id → the job's
    :class:`~reveal_lab.io.JobPace`), each episode gets the job's step time inside it against
    outside every episode, with a bootstrap interval, ranked by it, and the stretches where
    the job ran slow outside every episode are named; without it the report says the job's
    slowdown is unknown.

    Returns the paths written, by file name.
    """
    dets = [detections] if isinstance(detections, Detection) else list(detections)
    if not dets:
        raise ValueError("write_report needs at least one detection")
    if episodes is not None:
        missing = {"run", "host", "start", "end"} - set(episodes.columns)
        if missing:
            raise ValueError(f"episodes: missing columns {sorted(missing)} (expected run, host, start, end)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in REPORT_FILES}
    csv = _write_anomalies(dets, paths["anomalies.csv"])
    summary = _summary(dets, csv)
    total_w, total_a = summary["windows"], summary["anomalous"]
    title = "reveal-lab anomaly report"
    headline = (
        "No anomaly found in any run."
        if total_a == 0
        else f"{total_a} anomalous window(s) out of {total_w} in {len(dets)} run(s)."
    )
    left = [(d.run_id, (d.config.get("trim", {}).get("run") or {}).get("left_out")) for d in dets]
    md = [f"# {title}", "", *[f"- {rid}: {text}" for rid, text in left if text], "", headline, ""]
    page_runs = []
    episode_tables = []
    for d in dets:
        ep = _episode_table(d, _frame_of(runs, d.run_id), (pace or {}).get(d.run_id))
        episode_tables.append(ep.with_columns(run=pl.lit(d.run_id)))
        sections = _run_sections(d, max_rows, md, _episode_section(d, ep, (pace or {}).get(d.run_id)))
        figs = _figures(d, _frame_of(runs, d.run_id), episodes, max_metrics) if figures else []
        page_runs.append({"sections": sections, "figures": figs})
    md += [
        "",
        "Columns of `anomalies.csv`: " + ", ".join(f"`{c}`" for c in ANOMALIES_COLUMNS) + ". `score` is "
        "the pair's share of the window's attribution, averaged over the detectors that flag the window.",
        "",
    ]
    _write_sentinels(dets, out, paths, summary)
    eps = pl.concat(episode_tables, how="diagonal_relaxed")
    if eps.height:
        paths["episodes.csv"] = out / "episodes.csv"
        eps.select("run", *[c for c in eps.columns if c != "run"]).write_csv(paths["episodes.csv"])
    cross = _crosshost_section(dets, crosshost, out, paths, summary, md, max_rows)
    write_json(paths["summary.json"], summary, indent=2)
    paths["report.md"].write_text("\n".join(md))
    paths["report.html"].write_text(
        render(
            "report.html.j2",
            title=title,
            headline=headline,
            scored=[(rid, text) for rid, text in left if text],
            none=total_a == 0,
            runs=page_runs,
            crosshost=cross,
            columns=list(ANOMALIES_COLUMNS),
        )
    )
    return paths


def _episode_table(det: Detection, frame: pl.DataFrame | None, pace: JobPace | None) -> pl.DataFrame:
    """The run's episodes with what moved in each (from ``frame``, its raw values) and, with
    ``pace``, the job's step time beside each (within the scored span)."""
    from reveal_lab.pipeline import EPISODE_SCHEMA, episode_pace, what_moved
    from reveal_lab.telemetry import split_hosts

    eps = det.episodes if det.episodes is not None else pl.DataFrame(schema=EPISODE_SCHEMA)
    parts = split_hosts(frame) if frame is not None else {}
    rows = eps.to_dicts()
    moved = [what_moved(parts[r["host"]], r, rows, r["subsystem"]) if r["host"] in parts else "" for r in rows]
    eps = eps.with_columns(what_moved=pl.Series(moved, dtype=pl.String))
    if pace is not None:
        eps = episode_pace(eps, pace, within=_scored_epochs(det))
    return eps


def _scored_epochs(det: Detection) -> tuple[float, float] | None:
    """The scored span of the run in epoch seconds (its first window's start, last one's end)."""
    import datetime as dt

    w = det.windows
    if w.is_empty():
        return None
    return (
        w["start"].min().replace(tzinfo=dt.UTC).timestamp(),
        w["end"].max().replace(tzinfo=dt.UTC).timestamp(),
    )


def _episode_section(
    det: Detection, eps: pl.DataFrame, pace: JobPace | None
) -> tuple[str, str, pl.DataFrame | None]:
    """The episodes section: a paragraph on the job's pace and the episodes table."""
    import datetime as dt

    from reveal_lab.pipeline import unexplained_slowdowns

    if eps.is_empty():
        para = "No anomalous episode."
    else:
        para = (
            f"{eps.height} episode(s): anomalous windows less than 10 s apart merged; "
            "`what_moved`: the metrics of the episode's subsystem farthest from the rest of the run."
        )
    if pace is None:
        para += "\n\nThe job's pace was not given: how much each episode slowed the job is unknown (`--job-pace FILE`)."
    else:
        slow = unexplained_slowdowns(pace, eps, within=_scored_epochs(det))
        t0 = det.windows["start"].min() if det.windows.height else None
        def at(s: float) -> str:
            return f"{(dt.datetime.fromtimestamp(s, dt.UTC).replace(tzinfo=None) - t0).total_seconds():.0f} s" if t0 else f"{s:.0f}"
        if eps.height:
            top = eps.sort("rank").row(0, named=True)
            para += (
                f"\n\nRanked by the job's slowdown: episode {top['episode']} ({top['subsystem']}) "
                f"step time x{top['slowdown']:.2f} [{top['slowdown_low']:.2f}, {top['slowdown_high']:.2f}]."
            )
        para += (
            "\n\nNo slowdown of the job outside the episodes."
            if not slow
            else "\n\nNo episode explains the job's slowdown at "
            + "; ".join(f"{at(a)}-{at(b)} (step x{r:.2f})" for a, b, r in slow)
            + " (from the scored span's start)."
        )
    if eps.is_empty():
        return ("Episodes", para, None)
    t0 = det.windows["start"].min()
    show = eps.sort("rank" if "rank" in eps.columns else "start").with_columns(
        start_s=((pl.col("start") - t0).dt.total_milliseconds() / 1000).round(1),
        seconds=((pl.col("end") - pl.col("start")).dt.total_milliseconds() / 1000).round(1),
    )
    cols = ["episode", "host", "start_s", "seconds", "windows", "subsystem", "what_moved"]
    cols += [c for c in ("slowdown", "slowdown_low", "slowdown_high", "rank") if c in show.columns]
    return ("Episodes", para, show.select(cols))


def _write_anomalies(dets: list[Detection], path: Path) -> pl.DataFrame:
    """Every detection's evidence rows as ``anomalies.csv`` (exactly :data:`ANOMALIES_COLUMNS`)."""
    frames = [d.anomalies() for d in dets]
    csv = (
        pl.concat(frames, how="vertical")
        if frames
        else pl.DataFrame(schema={c: EVIDENCE_SCHEMA[c] for c in ANOMALIES_COLUMNS})
    )
    csv = csv.select(ANOMALIES_COLUMNS)
    csv.write_csv(path, datetime_format="%Y-%m-%d %H:%M:%S%.3f", float_precision=6)
    return csv


def _summary(dets: list[Detection], csv: pl.DataFrame) -> dict[str, Any]:
    """``summary.json``: each run's summary with its scored span, and the totals."""
    summaries = [
        {**(d.summary or d.make_summary()), "scored_span": d.config.get("trim", {}).get("run")} for d in dets
    ]
    total_w = sum(s["windows"] for s in summaries)
    total_a = sum(s["anomalous"] for s in summaries)
    return {
        "runs": summaries,
        "n_runs": len(dets),
        "windows": total_w,
        "anomalous": total_a,
        "anomalous_share": total_a / total_w if total_w else 0.0,
        "no_anomaly": total_a == 0,
        "sentinel_windows": sum(s.get("sentinel_windows", 0) for s in summaries),
        "evidence_rows": csv.height,
        "files": list(REPORT_FILES),
    }


def _run_sections(
    d: Detection, max_rows: int, md: list[str], episodes: tuple[str, str, pl.DataFrame | None] | None = None
) -> list[dict[str, Any]]:
    """One run's sections for the page; their Markdown is appended to ``md``."""
    sections = []
    for i, (head, para, table) in enumerate(_sections(d, max_rows, episodes)):
        md += [f"{'##' if i == 0 else '###'} {head}", ""]
        if para:
            md += [para, ""]
        if table is not None and table.height:
            md += [_md_table(table), ""]
        shown = _table4_html(table) if table is not None and "claim" in table.columns else table
        sections.append(
            {
                "level": 2 if i == 0 else 3,
                "heading": head,
                "lines": [ln.removeprefix("- ") for ln in para.replace("**", "").splitlines()] if para else [],
                "bullets": para.startswith("- "),
                "none": "No anomaly" in para,
                "table": table_cells(shown, 3) if shown is not None and shown.height else None,
            }
        )
    return sections


def _write_sentinels(
    dets: list[Detection], out: Path, paths: dict[str, Path], summary: dict[str, Any]
) -> None:
    """``sentinels.csv`` (only when a counter is listed) and the count in ``summary``."""
    sents = [d.sentinels.with_columns(run=pl.lit(d.run_id)) for d in dets if d.sentinels is not None]
    if not sents:
        return
    allsent = pl.concat(sents, how="vertical")
    summary["sentinel_counters"] = allsent.height
    if allsent.height:  # like crosshost.csv: only when there is something to list
        paths["sentinels.csv"] = out / "sentinels.csv"
        allsent.select("run", *[c for c in allsent.columns if c != "run"]).write_csv(
            paths["sentinels.csv"], datetime_format="%Y-%m-%d %H:%M:%S%.3f", float_precision=6
        )


def _crosshost_section(dets, crosshost, out, paths, summary, md, max_rows):  # noqa: ANN001, ANN202
    """``crosshost.csv`` and the section listing the persistent deviations (appended to
    ``md``, its count to ``summary``); the page's section, or ``None`` without deviations."""
    xh = [d.crosshost for d in dets if d.crosshost is not None]
    if crosshost is not None:
        xh.append(crosshost)
    if not xh:
        return None
    allx = pl.concat(xh, how="diagonal_relaxed")
    paths["crosshost.csv"] = out / "crosshost.csv"
    allx.write_csv(paths["crosshost.csv"], float_precision=6)
    # against the job's fault-free runs too (crosshost.baseline_deviation): excess and its bar
    vs_base = "excess" in allx.columns and allx["excess"].is_not_null().any()
    cols = ["host", "subsystem", "kind", "key", "z", *(["excess", "threshold"] if vs_base else [])]
    flagged = allx.filter(pl.col("persistent")).select(*cols, "deviating_share", "claim")
    where = (
        "from the cluster median and from the host's own fault-free runs (|excess| over the "
        "threshold those runs set)"
        if vs_base
        else "from the cluster median"
    )
    head = "Cross-host deviation"
    para = (
        f"{flagged.height} persistent deviation(s) of a host {where} "
        "(static metrics compared as values). All comparisons are in `crosshost.csv`."
        if flagged.height
        else f"No host deviates persistently {where}."
    )
    md += [f"## {head}", "", para, ""]
    if flagged.height:
        md += [_md_table(flagged.head(max_rows)), ""]
    summary["crosshost_persistent"] = flagged.height
    table = table_cells(flagged.head(max_rows), 3) if flagged.height else None
    return {"heading": head, "text": para, "table": table}
