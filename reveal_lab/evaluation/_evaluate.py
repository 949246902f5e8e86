"""Run the detection pipeline over a labelled dataset and score it against its labels.

:func:`evaluate_dataset` reads ``meta_lab.csv`` and ``labels.csv`` of a dataset folder
(the bundled ``data/lab`` by default), runs :func:`reveal_lab.pipeline.detect_run` on every
host file, and scores the flagged windows with :mod:`reveal_lab.evaluation._score`.

Fit modes
---------
``calibrated`` (default)
    leave-one-out with cross-fitted thresholds: the detectors are fitted on all *other*
    fault-free runs of the same workload, phase and host; each detector's threshold comes
    from out-of-sample scores of those runs (each scored by detectors fitted on the rest,
    in the scored run's own feature space), at the ``1 - false_alarm_rate / 3`` quantile,
    so that any-detector flags on fault-free data stay near ``false_alarm_rate`` (union
    bound) instead of what in-sample thresholds give on a few short runs
    (:func:`reveal_lab.pipeline.detect_run`'s ``false_alarm_rate``); ``calibration``
    (default ``trimmed``) leaves the most extreme left-out run out of the pool when four or
    more are left out. Needs two other baseline runs. The run itself never enters its own
    fit or thresholds.
``baseline``
    leave-one-out with the pipeline's own thresholds: fitted on the other fault-free runs
    (the run itself is never in its own baseline); in-sample thresholds on a few short
    runs flag much more than 1 % of new fault-free windows.
``self``
    the paper's setting: fitted on the run itself, the top 1 % of windows per detector
    flagged. Whole-run (``scope="run"``) labels cannot be detected this way and are left
    out of that mode's table.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from reveal_lab.crosshost import own_core_view
from reveal_lab.evaluation._crosshost import crosshost_deviations, crosshost_episodes, crosshost_false_alarms
from reveal_lab.evaluation._score import (
    OVERALL_DETECTORS_ONLY,
    TABLE_COLUMNS,
    false_alarms,
    persistent,
    score_episodes,
    summarize,
)
from reveal_lab.io import check_labels, load_run, read_labels, read_meta
from reveal_lab.telemetry import SUBSYSTEMS, TelemetryError

if TYPE_CHECKING:
    from reveal_lab.config import Preset

__all__ = [
    "Evaluation",
    "evaluate_dataset",
    "detection_windows",
    "FIT_MODES",
    "table_markdown",
    "compare_spaces",
    "recall_at_false_alarms",
    "write_comparison",
    "COMPARISON_COLUMNS",
]

log = logging.getLogger(__name__)

#: ``alone``: each run detected by itself as ``reveal-lab detect RUN`` does (robust thresholds,
#: its own pruned space, ``min_run`` and the sentinel rule for a run alone, no baseline)
FIT_MODES = ("calibrated", "baseline", "self", "alone")


@dataclass
class Evaluation:
    """Scored windows and episodes of one fit mode, and the summary table."""

    mode: str
    windows: pl.DataFrame
    episodes: pl.DataFrame
    table: pl.DataFrame
    baseline_by_workload: pl.DataFrame
    config: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    #: the pruned space the runs were scored in (``None``: every metric)
    pruning: Any = None
    #: flagged share of fault-free windows per repeat of the workload (lab datasets with a
    #: ``repeat`` column): the first repeat, recorded first, is where v2's false alarms are
    false_alarms_by_repeat: pl.DataFrame | None = None
    #: hosts the cross-host rule flags where nothing was wrong
    #: (:func:`reveal_lab.evaluation.crosshost_false_alarms`; ``None`` when it did not run)
    crosshost_false_alarms: dict[str, Any] | None = None

    def write(self, out: str | Path) -> dict[str, Path]:
        """``evaluation_<mode>.csv/.md``, ``episodes_<mode>.csv``, ``false_alarms_<mode>.csv``
        (per workload), ``false_alarms_by_repeat_<mode>.csv`` (when runs have a repeat number)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "table_csv": out / f"evaluation_{self.mode}.csv",
            "table_md": out / f"evaluation_{self.mode}.md",
            "episodes": out / f"episodes_{self.mode}.csv",
            "false_alarms": out / f"false_alarms_{self.mode}.csv",
            "windows": out / f"windows_{self.mode}.parquet",
        }
        self.table.write_csv(paths["table_csv"])
        paths["table_md"].write_text(
            table_markdown(
                self.table,
                title=f"fit mode: {self.mode}",
                config=self.config,
                failures=self.failures,
                by_repeat=self.false_alarms_by_repeat,
            )
        )
        self.episodes.write_csv(paths["episodes"])
        self.baseline_by_workload.write_csv(paths["false_alarms"])
        if self.false_alarms_by_repeat is not None:
            paths["false_alarms_by_repeat"] = out / f"false_alarms_by_repeat_{self.mode}.csv"
            self.false_alarms_by_repeat.write_csv(paths["false_alarms_by_repeat"])
        self.windows.write_parquet(paths["windows"])  # scored windows: other operating points later
        return paths


def _parse(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f")


def fault_free_refs(meta: pl.DataFrame, row: Mapping[str, Any]) -> pl.DataFrame:
    """The rows of ``meta`` (``meta_lab.csv``) that are fault-free runs of ``row``'s workload,
    phase and host, ``row`` itself left out: the runs a host run is compared with."""
    return meta.filter(
        (pl.col("fault") == "none")
        & (pl.col("workload") == row["workload"])
        & (pl.col("phase") == row["phase"])
        & (pl.col("host") == row["host"])
        & (pl.col("source_file") != row["source_file"])
    )


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def table_markdown(
    table: pl.DataFrame,
    *,
    title: str = "",
    config: dict | None = None,
    failures: Sequence[str] = (),
    by_repeat: pl.DataFrame | None = None,
) -> str:
    """The evaluation table as a Markdown table (with the settings it was made with, and the
    false-alarm share per repeat of the workloads when ``by_repeat`` is given)."""
    cols = [c for c in TABLE_COLUMNS if c in table.columns]
    lines = [
        f"### {title}" if title else "",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "|".join("---" for _ in cols) + "|",
    ]
    for row in table.select(cols).iter_rows():
        lines.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    if by_repeat is not None and by_repeat.height:
        parts = [
            f"{r['repeat']}: {_fmt(r['false_alarm_share'])} ({r['flagged']}/{r['baseline_windows']})"
            for r in by_repeat.iter_rows(named=True)
        ]
        lines += ["", "False alarms by repeat of the workload: " + ", ".join(parts)]
    if config:
        lines += ["", "Settings: " + ", ".join(f"{k}={v}" for k, v in config.items())]
    if failures:
        lines += ["", f"Runs that could not be scored ({len(failures)}):"] + [f"- {f}" for f in failures]
    return "\n".join(lines).lstrip() + "\n"


def detection_windows(detection, run: str, host: str, *, baseline: bool) -> pl.DataFrame:  # noqa: ANN001
    """A :class:`~reveal_lab.pipeline.Detection`'s windows in the scorer's shape."""
    w = detection.windows
    shares = [f"share_{s}" for s in SUBSYSTEMS if f"share_{s}" in w.columns]
    scores = [f"score_{m}" for m in detection.methods if f"score_{m}" in w.columns]
    cols = ["window_id", "start", "end", "agreement", "combined", *scores, *shares]
    cols += [c for c in ("sentinel", "sentinel_metric", "anomalous") if c in w.columns]
    if "top_subsystem" in w.columns:
        cols.append("top_subsystem")
    w = w.filter(pl.col("host") == host) if "host" in w.columns else w
    return w.select(cols).with_columns(
        run=pl.lit(run),
        host=pl.lit(host),
        baseline=pl.lit(baseline),
        flagged=detection.decision,
    )


def evaluate_dataset(
    root: str | Path | None = None,
    *,
    mode: str = "baseline",
    preset: str | Preset = "paper",
    policy: Any = None,
    grace_s: float = 0.0,
    run_min_share: float = 0.5,
    runs: Sequence[str] | None = None,
    crosshost: bool = True,
    persist: int = 1,
) -> Evaluation:
    """Detect on every host file of a labelled dataset and score it (see the module doc).

    ``policy`` (:class:`~reveal_lab.pipeline.DetectionPolicy`, default
    ``POLICIES["default"]``, e.g. ``POLICIES["default"].with_(min_agreement=2)``) decides
    which windows are flagged; ``mode`` sets its thresholds.
    Its ``min_agreement``: a window counts as flagged when at least this many detectors flag
    it (auto: 2 in the calibrated mode, which keeps one detector's false alarms out, else 1;
    what each choice flags on the lab data: ``docs/RESULTS.md``). Its ``calibration``: how
    the calibrated mode's thresholds combine the left-out baseline runs.

    ``runs`` restricts the evaluation to these run stems (baselines still come from the
    whole dataset). The policy's ``trim`` (``auto``) keeps only the workload's span of each run
    (:func:`reveal_lab.pipeline.trim_run`: ``workload_start``..``workload_end`` of
    ``meta_lab.csv``, from the first step to the last progress line), for the run and its
    baseline runs alike; the collector's start, the calm seconds, the interpreter start-up
    and the teardown are left out. A run without a recorded span (a host recording) is
    scored whole.

    ``mode="alone"`` detects each run by itself with ``detect RUN``'s defaults (robust
    thresholds against the run's own calm majority, the space pruned on the run itself,
    the policy's ``min_run``, 4 windows in a row for a run alone by default, and the sentinel
    rule for a run alone); fault-free runs
    then measure the false alarms of a run detected alone.

    The policy's ``prune`` (``True``): detect in the pruned metric space (paper §4.1), fitted
    once (:func:`reveal_lab.pipeline.fit_pruning`) on all fault-free runs of the dataset,
    trimmed; a :class:`~reveal_lab.pipeline.Pruning` or a ``pruning.json`` path reuses a
    saved one; ``False`` scores every metric. ``config["pruning"]`` says which.

    Whole-run labels (``scope="run"``, a configuration difference) are also scored with
    cross-host deviation against the job's other fault-free runs when ``crosshost``
    (:func:`reveal_lab.evaluation.crosshost_deviations`; every multi-host run is judged, the
    fault-free ones too, so its false alarms are measured:
    :attr:`Evaluation.crosshost_false_alarms`); those rows have ``method="crosshost"``.

    The policy's ``false_alarm_rate`` is the calibrated mode's target share of fault-free
    windows flagged by any detector (split evenly over the detectors).

    In the baseline and calibrated modes a window is flagged also when a counter silent in
    every sample of the run's baseline runs is non-zero in the policy's ``sentinel_samples``
    of its samples (the sentinel rule, see :func:`reveal_lab.pipeline.detect_run`; ``None``:
    the detectors' agreement alone, the paper's rule). When it flags any window, the table
    gets a row :data:`OVERALL_DETECTORS_ONLY` scored from the same windows without it.

    ``persist`` (default 1: every flagged window counts, as the paper) keeps a window
    flagged only inside ``persist`` or more consecutive flagged windows
    (:func:`reveal_lab.evaluation.persistent`), on fault and fault-free runs alike.
    """
    from reveal_lab.config import Preset, data_dir, get_preset
    from reveal_lab.pipeline import POLICIES

    if mode not in FIT_MODES:
        raise ValueError(f"mode must be one of {FIT_MODES}, got {mode!r}")
    root = Path(root) if root is not None else data_dir()
    meta, labels, label_notes = _read_lab(root)
    pre = preset if isinstance(preset, Preset) else get_preset(preset)
    thr_mode = {"calibrated": "calibrated", "baseline": "baseline", "self": "self", "alone": "robust"}[mode]
    policy = (policy or POLICIES["default"]).with_(thresholds=thr_mode)
    n_base = {"calibrated": 2, "baseline": 1}.get(mode, 0)
    resolved = policy.resolve(baseline_runs=n_base, source="lab", preset=pre)
    loader = _RunLoader(root, meta, policy.trim)
    pruning, prune_info = _evaluation_space(policy.prune, mode, pre, loader, meta)
    t0 = time.perf_counter()
    todo = meta if runs is None else meta.filter(pl.col("run").is_in(list(runs)))
    parts, failures = _score_runs(todo, meta, mode, loader, pre, policy, pruning)
    failures = [*label_notes, *failures]
    if not parts:
        raise TelemetryError(f"no run of {root} could be scored: {failures[:3]}")
    windows = persistent(pl.concat(parts, how="diagonal_relaxed"), persist)
    labs, run_labs = _scored_labels(labels, windows, runs, mode)
    episodes = score_episodes(windows, labs, run_min_share=run_min_share).with_columns(
        method=pl.lit("windows")
    )
    crosshost_fa = None
    if crosshost and run_labs.height:
        episodes, crosshost_fa = _with_crosshost(episodes, meta, loader, run_labs, runs, mode, failures)
    table = summarize(episodes, windows, labs, grace_s=grace_s)
    if "sentinel" in windows.columns and bool(windows["sentinel"].fill_null(False).any()):
        # the same windows by the detectors' agreement alone (the paper's rule)
        w0 = persistent(windows.with_columns(flagged=pl.col("agreement") >= resolved.min_agreement), persist)
        ep0 = score_episodes(w0, labs, run_min_share=run_min_share)
        row = summarize(ep0, w0, labs, grace_s=grace_s).filter(pl.col("fault_type") == "overall")
        table = pl.concat([table, row.with_columns(fault_type=pl.lit(OVERALL_DETECTORS_ONLY))])
    config = _config(root, mode, pre, policy, resolved, windows, crosshost, crosshost_fa, loader, prune_info,
                     scoring={"grace_s": grace_s, "run_min_share": run_min_share, "persist": persist})
    config["seconds"] = round(time.perf_counter() - t0, 1)
    ev = Evaluation(mode, windows, episodes, table, false_alarms(windows, by="workload"), config, failures)
    if "repeat" in windows.columns and windows["repeat"].drop_nulls().len():
        ev.false_alarms_by_repeat = false_alarms(windows, by="repeat")
    ev.pruning = pruning
    ev.crosshost_false_alarms = crosshost_fa
    return ev


def _config(  # noqa: ANN202
    root, mode, pre, policy, resolved, windows, crosshost, crosshost_fa, loader, prune_info, *, scoring  # noqa: ANN001
):
    """The evaluation's ``config``: what was scored and how (``scoring``: grace, run share and
    persist; the caller adds the time taken)."""
    return {
        "data": str(root),
        "mode": mode,
        "preset": pre.name,
        "z_clip": resolved.z_clip,
        "min_agreement": resolved.min_agreement,
        "window_s": pre.window.window_s,
        "stride_s": pre.window.stride_s,
        **scoring,
        "trim": policy.trim,
        "min_run": resolved.min_run if mode == "alone" else None,
        "trimmed_s_per_run": loader.trimmed_s_per_run(),
        "pruned_metrics": prune_info.get("n_selected") if prune_info["applied"] else "all",
        "crosshost": crosshost,
        "crosshost_false_alarms": (
            f"{crosshost_fa['fault_free_flagged']}/{crosshost_fa['fault_free_hosts']} fault-free hosts"
            if crosshost_fa
            else None
        ),
        "sentinel_samples": policy.sentinel_samples if mode != "self" else None,
        "sentinel_windows": (
            int(windows["sentinel"].fill_null(False).sum()) if "sentinel" in windows.columns else 0
        ),
        **(
            {"false_alarm_rate": resolved.false_alarm_rate, "calibration": resolved.calibration}
            if mode == "calibrated"
            else {}
        ),
        "policy": resolved.to_dict(),
        "runs_scored": windows.select("run", "host").unique().height,
    }


def _read_lab(root: Path) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """``meta_lab.csv`` (checked for the lab columns, ``repeat`` as whole numbers) and the
    checked ``labels.csv`` of ``root``, with the labels' notes."""

    meta = read_meta(root / "meta_lab.csv")
    labels, label_notes = check_labels(read_labels(root / "labels.csv"), meta, path=root / "labels.csv")
    for note in label_notes:
        log.warning("%s", note)
    for col in ("run", "host", "fault", "workload"):
        if col not in meta.columns:
            raise TelemetryError(f"meta lacks the lab column {col!r}", path=str(root / "meta_lab.csv"))
    if "repeat" in meta.columns:  # a whole number per run, or null
        meta = meta.with_columns(pl.col("repeat").cast(pl.Int64, strict=False))
    return meta, labels, list(label_notes)


class _RunLoader:
    """Each host file of ``meta_lab.csv`` loaded once, trimmed by ``trim_mode`` on loading
    (:func:`reveal_lab.pipeline.trim_run`: a lab run's recorded workload span, the steady
    state without start-up or teardown), for the run and its baseline runs alike."""

    def __init__(self, root: Path, meta: pl.DataFrame, trim_mode: str) -> None:
        self.root, self.trim_mode = root, trim_mode
        self.trim = trim_mode != "none"
        self.spans: dict[str, tuple[datetime, datetime]] = {}
        if trim_mode in ("auto", "span") and {"workload_start", "workload_end"} <= set(meta.columns):
            for r in meta.iter_rows(named=True):
                if r["workload_start"] and r["workload_end"]:
                    self.spans[r["source_file"]] = (_parse(r["workload_start"]), _parse(r["workload_end"]))
        self.trimmed_s: list[float] = []
        self._runs: dict[str, Any] = {}

    def __call__(self, source_file: str):  # noqa: ANN204 - a Run
        from reveal_lab.pipeline import trim_run

        if source_file not in self._runs:
            path = self.root / source_file.removeprefix("./")
            if not path.exists():
                raise TelemetryError("run file listed in meta_lab.csv is missing", path=str(path))
            run = load_run(path)
            if self.trim:
                run, tr = trim_run(run, span=self.spans.get(source_file), mode=self.trim_mode)
                self.trimmed_s.append(tr.cut_start_s + tr.cut_end_s)
            self._runs[source_file] = run
        return self._runs[source_file]

    def trimmed_s_per_run(self) -> float:
        return round(sum(self.trimmed_s) / len(self.trimmed_s), 1) if self.trimmed_s else 0.0


def _evaluation_space(prune: Any, mode: str, pre: Preset, load: _RunLoader, meta: pl.DataFrame):  # noqa: ANN202
    """``(pruning, prune_info)``: the pruned metric space the evaluation detects in (a saved
    one, or fitted once on every fault-free run of the dataset, trimmed; a run alone: its own)."""
    from reveal_lab.pipeline import Pruning, fitted_space, load_pruning

    prune_info: dict[str, Any] = {"applied": False}
    pruning = None
    if isinstance(prune, Pruning):
        pruning = prune
    elif isinstance(prune, str | Path):
        pruning = load_pruning(prune)
    elif (prune or prune is None) and mode != "alone":  # alone: each run's own space, as detect RUN
        base_runs = [load(s) for s in meta.filter(pl.col("fault") == "none")["source_file"].to_list()]
        pruning = fitted_space(base_runs, pre.prune.threshold)  # kept in the run cache when it is on
        pruning.params["trim"] = load.trim  # the runs were trimmed on loading
    if pruning is not None:
        prune_info = {"applied": True, "n_selected": len(pruning.selected), **pruning.params}
        prune_info.pop("fitted_on", None)
    if mode == "alone":
        prune_info = {"applied": bool(prune), "source": "fitted on each run itself"} if prune is True else prune_info
    return pruning, prune_info


def _score_runs(todo, meta, mode, load, pre, policy, pruning):  # noqa: ANN001, ANN202
    """Detect on each host file of ``todo`` (its baseline: the workload's other fault-free
    runs in the baseline and calibrated modes); ``(window frames, failures)``."""
    from reveal_lab.pipeline import detect_run

    parts: list[pl.DataFrame] = []
    failures: list[str] = []
    prune = policy.prune
    for row in todo.iter_rows(named=True):
        baseline = None
        if mode in ("baseline", "calibrated"):
            refs = fault_free_refs(meta, row)["source_file"].to_list()
            need = 2 if mode == "calibrated" else 1
            if len(refs) < need:
                failures.append(
                    f"{row['source_file']}: {len(refs)} other baseline run(s) of "
                    f"{row['workload']}/{row['phase']} on {row['host']}; mode {mode!r} needs {need}"
                )
                continue
            baseline = [load(s) for s in refs]
        try:
            det = detect_run(
                load(row["source_file"]),
                baseline=baseline,
                preset=pre,
                policy=policy.with_(
                    prune=pruning if pruning is not None else (mode == "alone" and prune is True),
                    trim="none",  # trimmed once, on loading
                ),
            )
        except (TelemetryError, ValueError) as exc:
            failures.append(f"{row['source_file']}: {exc}")
            continue
        w = detection_windows(det, row["run"], row["host"], baseline=row["fault"] == "none").with_columns(
            workload=pl.lit(row["workload"]),
            fault=pl.lit(row["fault"]),
            repeat=pl.lit(row.get("repeat"), dtype=pl.Int64),
        )
        parts.append(w)
        log.info("%s %s: %d/%d windows flagged", row["run"], row["host"], int(w["flagged"].sum()), w.height)
    return parts, failures


def _scored_labels(labels, windows, runs, mode):  # noqa: ANN001, ANN202
    """``(labels of the scored run-hosts, whole-run labels)``; the paper's self fit cannot see
    a whole-run difference, so those are left out of its labels."""
    labs = labels if runs is None else labels.filter(pl.col("run").is_in(list(runs)))
    run_labs = labs.filter(pl.col("scope") == "run")
    if mode == "self":
        labs = labs.filter(pl.col("scope") != "run")
    scored = set(zip(windows["run"].to_list(), windows["host"].to_list(), strict=True))
    labs = labs.filter(
        pl.struct("run", "host").map_elements(
            lambda r: (r["run"], r["host"]) in scored, return_dtype=pl.Boolean
        )
    )
    return labs, run_labs


def _with_crosshost(episodes, meta, load, run_labs, runs, mode, failures):  # noqa: ANN001, ANN202
    """The whole-run labels scored by cross-host deviation against the job's other
    fault-free runs, added to ``episodes``; ``(episodes, cross-host false alarms or None)``.
    Problems are appended to ``failures``."""

    def frame_of(r: dict) -> pl.DataFrame:  # trimmed, the host's own core and cgroup as own/self
        return own_core_view(load(r["source_file"]).frame, r["host"], r.get("core", ""))

    try:
        devs, skipped = crosshost_deviations(meta, frame_of, runs=runs)
    except (TelemetryError, ValueError) as exc:
        failures.append(f"cross-host deviation: {exc}")
        return episodes, None
    failures += [f"cross-host deviation: {m}" for m in skipped]
    extra = crosshost_episodes(devs, run_labs)
    crosshost_fa = crosshost_false_alarms(devs, run_labs)
    if mode != "self":  # windows scored these labels already: a separate row, not in `overall`
        extra = extra.with_columns(fault_type=pl.col("fault_type") + " [cross-host]", in_overall=pl.lit(False))
    return pl.concat([episodes, extra], how="diagonal_relaxed"), crosshost_fa


#: the columns of ``pruned_vs_all.csv``
COMPARISON_COLUMNS = (
    "space",
    "mode",
    "n_metrics",
    "fault_type",
    "episodes",
    "detected",
    "episode_recall",
    "window_precision",
    "top1_accuracy",
    "false_alarm_share",
    "score_auc",
)


def recall_at_false_alarms(
    windows: pl.DataFrame, episodes: pl.DataFrame, rate: float = 0.01
) -> dict[str, Any]:
    """Episode recall at a matched false-alarm share: the threshold on the ``combined``
    score is the ``1 − rate`` quantile (``method="higher"``) of the fault-free (``baseline``)
    windows' scores, so at most ``rate`` of them exceed it whatever the space; an episode
    (``scope="episode"``, scored by windows) is found when a window of its run and host
    overlapping it exceeds the threshold. Compares metric spaces at one operating point.

    >>> import datetime as dt
    >>> t = [dt.datetime(2025, 1, 1, 0, 0, i) for i in range(6)]
    >>> w = pl.DataFrame({"run": ["b"] * 4 + ["f"] * 2, "host": "h", "start": t, "end": t,
    ...                   "baseline": [True] * 4 + [False] * 2,
    ...                   "combined": [0.1, 0.2, 0.3, 0.4, 0.35, 0.9]})
    >>> ep = pl.DataFrame({"run": ["f", "f"], "host": "h", "scope": "episode",
    ...                    "start": [t[4], t[5]], "end": [t[4], t[5]], "method": "windows"})
    >>> recall_at_false_alarms(w, ep, 0.25)["recall"]
    0.5
    """
    base = windows.filter(pl.col("baseline"))["combined"].drop_nulls().to_numpy()
    if base.size == 0:
        return {"threshold": None, "false_alarm_share": None, "recall": None, "episodes": 0}
    import numpy as np

    thr = float(np.quantile(base, 1.0 - rate, method="higher"))
    ep = episodes.filter(pl.col("scope").fill_null("episode") == "episode")
    if "method" in ep.columns:
        ep = ep.filter(pl.col("method") == "windows")
    found = 0
    for r in ep.iter_rows(named=True):
        hit = windows.filter(
            (pl.col("run") == r["run"])
            & (pl.col("host") == r["host"])
            & (pl.col("start") <= r["end"])
            & (pl.col("end") >= r["start"])
            & (pl.col("combined") > thr)
        )
        found += hit.height > 0
    return {
        "threshold": thr,
        "false_alarm_share": float((base > thr).mean()),
        "recall": found / ep.height if ep.height else None,
        "episodes": ep.height,
    }


def compare_spaces(evaluations: dict[str, Evaluation]) -> pl.DataFrame:
    """The evaluation tables of several metric spaces (``{"pruned": ev, "all": ev}``) stacked,
    one row per space and fault type (columns :data:`COMPARISON_COLUMNS`): the paper's claim
    that pruning sharpens detection, tested."""
    parts = []
    for space, ev in evaluations.items():
        n = len(ev.pruning.selected) if ev.pruning is not None else None
        parts.append(
            ev.table.with_columns(
                space=pl.lit(space), mode=pl.lit(ev.mode), n_metrics=pl.lit(n, dtype=pl.Int64)
            ).select(COMPARISON_COLUMNS)
        )
    return pl.concat(parts, how="vertical")


def write_comparison(evaluations: dict[str, Evaluation], out: str | Path) -> dict[str, Path]:
    """``pruned_vs_all.csv`` (:func:`compare_spaces`) and ``pruned_vs_all.json`` (the overall
    rows and the settings of each space), and ``pruning.json`` of the pruned space."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table = compare_spaces(evaluations)
    paths = {"csv": out / "pruned_vs_all.csv", "json": out / "pruned_vs_all.json"}
    table.write_csv(paths["csv"])
    import json

    summary = {
        space: {
            "overall": table.filter((pl.col("space") == space) & (pl.col("fault_type") == "overall"))
            .drop("space")
            .to_dicts(),
            "by_fault": {
                r["fault_type"]: {"episode_recall": r["episode_recall"], "score_auc": r["score_auc"]}
                for r in table.filter(
                    (pl.col("space") == space) & (pl.col("fault_type") != "overall")
                ).to_dicts()
            },
            "config": ev.config,
        }
        for space, ev in evaluations.items()
    }
    for space, ev in evaluations.items():
        summary[space]["recall_at_1pct_false_alarms"] = recall_at_false_alarms(ev.windows, ev.episodes, 0.01)
    paths["json"].write_text(json.dumps(summary, indent=1, default=str))
    for ev in evaluations.values():
        if ev.pruning is not None:
            from reveal_lab.pipeline import save_pruning

            paths["pruning"] = save_pruning(ev.pruning, out / "pruning.json")
            break
    return paths
