"""Judge a fix the paper's way: anomalous-window shares and throughput, before vs after.

Two sets of runs, ``A`` (e.g. before a remediation) and ``B`` (after, or the faulty
configuration against a healthy one). Every host file is scored by the detection pipeline
(:func:`reveal_lab.pipeline.detect_run`) against one reference:

``reference="a"`` (default)
    detectors fitted on side A's runs of the same host (each A run on the *other* A runs,
    so A's own share is out of sample), thresholds cross-fitted for ``false_alarm_rate``;
    B's runs on all A runs. B's share then says how much more often B looks anomalous
    than A does to itself.
``reference="self"``
    each run fitted on itself (the paper's setting: a fixed top share of windows is
    flagged, so only the *composition* of the anomalies -- which subsystem or metric they
    are attributed to -- can change).

A flagged window is attributed to its ``top_subsystem`` and to the host-free key
(:meth:`reveal_lab.telemetry.MetricName.key`) of its highest-scoring evidence metric. Per
run (the hosts of a DDP run pooled), the share of its windows that are anomalous and
attributed to each subsystem / metric (and ``any``) is computed; the sides' means, their
difference and relative change get percentile bootstrap intervals from resampling
*runs* with replacement on each side (:func:`bootstrap_compare`). Throughput
(``samples_per_s`` of the lab's ``meta_lab.csv``) is compared the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from reveal_lab.telemetry import TIMESTAMP, Run, TelemetryError, parse_metric_name

if TYPE_CHECKING:
    from reveal_lab.pipeline import DetectionPolicy

__all__ = [
    "COMPARE_COLUMNS",
    "Comparison",
    "RunSpec",
    "bootstrap_compare",
    "case_study_runs",
    "combine_cases",
    "compare_cases",
    "compare_runs",
    "resolve_runs",
    "run_shares",
    "table_markdown",
]

log = logging.getLogger(__name__)

COMPARE_COLUMNS = (
    "level",
    "name",
    "n_a",
    "n_b",
    "a_mean",
    "a_lo",
    "a_hi",
    "b_mean",
    "b_lo",
    "b_hi",
    "diff",
    "diff_lo",
    "diff_hi",
    "rel_change",
    "rel_lo",
    "rel_hi",
)


@dataclass(frozen=True)
class RunSpec:
    """One host file to score: its path, the run it belongs to, and its throughput if known."""

    path: str
    group: str
    throughput: float | None = None
    span: tuple[Any, Any] | None = None  #: the workload's active span (first step .. last progress)
    run: Run | None = None  #: the run itself, already loaded (then ``path`` only names it)


def _meta_rows(root: Path) -> pl.DataFrame | None:
    from reveal_lab.io import read_meta

    p = root / "meta_lab.csv"
    return read_meta(p) if p.exists() else None


def _spec_from_row(root: Path, r: Mapping) -> RunSpec:
    from datetime import datetime

    def parse(v: Any) -> Any:
        return datetime.strptime(str(v), "%Y-%m-%d %H:%M:%S.%f") if v not in (None, "") else None

    span = None
    if r.get("workload_start") and r.get("workload_end"):
        span = (parse(r["workload_start"]), parse(r["workload_end"]))
    thr = r.get("samples_per_s")
    return RunSpec(
        str(root / str(r["source_file"]).removeprefix("./")),
        str(r.get("run_group") or r.get("run") or r["source_file"]),
        float(thr) if thr not in (None, "") else None,
        span,
    )


def resolve_runs(items: Sequence[str], data: str | Path | None = None) -> list[RunSpec]:
    """Host files for ``items``: paths, run stems of ``data``, or ``column=value[,...]``
    selectors over ``data``'s ``meta_lab.csv`` (e.g. ``case=irq:after`` or
    ``model=DDPCNN,fault=none``; ``column^=value``: the column starts with the value).
    Paths inside a lab dataset pick up their run group, throughput and workload span from
    its ``meta_lab.csv``.
    """
    from reveal_lab.config import data_dir

    root = Path(data) if data is not None else data_dir()
    meta = _meta_rows(root) if root.exists() else None
    out: list[RunSpec] = []
    for item in items:
        if not str(item).strip():
            raise ValueError(
                "an empty run name (''): give a run file, a run of the dataset or a column=value selector"
            )
        p = Path(item)
        if "=" in item and not p.exists():
            if meta is None:
                raise TelemetryError(f"selector {item!r} needs a dataset with meta_lab.csv", path=str(root))
            sel = meta
            for part in item.split(","):
                col, _, val = part.partition("=")
                prefix = col.endswith("^")  # column^=value: starts with
                col = col.removesuffix("^")
                if col not in meta.columns:
                    raise TelemetryError(
                        f"selector {item!r}: no column {col!r} (columns: {', '.join(meta.columns)})",
                        path=str(root / "meta_lab.csv"),
                    )
                v = pl.col(col).cast(pl.String)
                if val == "":  # column= : the runs without a value there
                    sel = sel.filter(v.is_null() | (v.str.strip_chars() == ""))
                else:
                    sel = sel.filter(v.str.starts_with(val) if prefix else v == val)
            if sel.height == 0:
                raise TelemetryError(f"selector {item!r} matches no run", path=str(root / "meta_lab.csv"))
            out += [_spec_from_row(root, r) for r in sel.iter_rows(named=True)]
        elif p.exists():
            droot = p.resolve().parent.parent
            dmeta = _meta_rows(droot)
            row = None
            if dmeta is not None:
                m = dmeta.filter(pl.col("source_file").str.ends_with("/" + p.name))
                row = m.row(0, named=True) if m.height else None
            out.append(_spec_from_row(droot, row) if row else RunSpec(str(p), p.stem))
        elif meta is not None and "run" in meta.columns and meta.filter(pl.col("run") == item).height:
            out += [_spec_from_row(root, r) for r in meta.filter(pl.col("run") == item).iter_rows(named=True)]
        else:
            raise FileNotFoundError(
                f"{item!r} is neither a file, a run of {root} nor a column=value selector"
            )
    return out


def _load(spec: RunSpec, trim: bool) -> Run:
    from reveal_lab.io import load_run

    run = spec.run if spec.run is not None else load_run(spec.path)
    if trim and spec.span is not None:
        a, b = spec.span
        run = Run(run.meta, run.frame.filter(pl.col(TIMESTAMP).is_between(a, b)), list(run.warnings))
    return run


def _metric_key(name: str) -> str:
    try:
        return parse_metric_name(name).key()
    except (TelemetryError, ValueError):
        return name


def run_shares(detection, group: str) -> pl.DataFrame:  # noqa: ANN001 - a pipeline Detection
    """Per subsystem / metric (and ``any``): anomalous windows attributed to it, and all windows.

    Rows ``group, level, name, anomalous, windows`` for one host file's detection.
    """
    w = detection.windows
    flagged = w.filter(detection.decision)
    n = w.height
    rows = [{"level": "any", "name": "any", "anomalous": flagged.height}]
    if "top_subsystem" in flagged.columns:
        for s, k in flagged.group_by("top_subsystem").len().iter_rows():
            if s is not None:
                rows.append({"level": "subsystem", "name": s, "anomalous": k})
    ev = detection.evidence
    if ev.height and {"window_id", "host", "metric", "score"} <= set(ev.columns):
        top = (
            ev.sort("score", descending=True)
            .group_by("window_id", "host", maintain_order=True)
            .first()
            .with_columns(pl.col("metric").map_elements(_metric_key, return_dtype=pl.String).alias("key"))
        )
        for m, k in top.group_by("key").len().iter_rows():
            rows.append({"level": "metric", "name": m, "anomalous": k})
    return pl.DataFrame(
        rows, schema={"level": pl.String, "name": pl.String, "anomalous": pl.Int64}
    ).with_columns(group=pl.lit(group), windows=pl.lit(n, dtype=pl.Int64))


def _per_run(shares: pl.DataFrame, groups: Sequence[str]) -> tuple[list[tuple[str, str]], np.ndarray]:
    """Matrix runs x (level, name) of anomalous shares (0 where a run has none)."""
    if shares.height == 0:
        return [], np.zeros((len(groups), 0))
    tot = shares.group_by("group", "level", "name").agg(pl.col("anomalous").sum())
    wins = shares.filter(pl.col("level") == "any").group_by("group").agg(pl.col("windows").sum())
    n_win = dict(wins.iter_rows())
    keys = sorted(set(zip(tot["level"], tot["name"], strict=True)))
    col = {k: i for i, k in enumerate(keys)}
    row = {g: i for i, g in enumerate(groups)}
    m = np.zeros((len(groups), len(keys)))
    for g, lv, nm, a in tot.iter_rows():
        if g in row and n_win.get(g):
            m[row[g], col[(lv, nm)]] = a / n_win[g]
    return keys, m


def bootstrap_compare(
    a: np.ndarray, b: np.ndarray, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> dict[str, np.ndarray]:
    """Means of runs x features matrices ``a`` and ``b``, their difference ``b - a`` and
    relative change ``(b - a) / a``, each with percentile bootstrap bounds (runs resampled
    with replacement on each side, the same draws for every feature).

    Examples
    --------
    >>> r = bootstrap_compare(np.array([[1.0], [1.2], [0.8]]), np.array([[2.0], [2.2], [1.8]]), n_boot=500)
    >>> float(r["diff"][0]), bool(r["diff_lo"][0] > 0)
    (1.0, True)
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must be runs x features with equal features, got {a.shape} and {b.shape}")
    if len(a) < 1 or len(b) < 1:
        raise ValueError("each side needs at least one run")
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, len(a), size=(n_boot, len(a)))
    ib = rng.integers(0, len(b), size=(n_boot, len(b)))
    ma, mb = a[ia].mean(axis=1), b[ib].mean(axis=1)  # n_boot x features
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(ma != 0, (mb - ma) / ma, np.nan)
        a_mean, b_mean = a.mean(axis=0), b.mean(axis=0)
        rel_point = np.where(a_mean != 0, (b_mean - a_mean) / a_mean, np.nan)
    out = {"a_mean": a_mean, "b_mean": b_mean, "diff": b_mean - a_mean, "rel_change": rel_point}
    for name, boot in (("a", ma), ("b", mb), ("diff", mb - ma)):
        lo, hi = np.percentile(boot, q, axis=0)
        out[f"{name}_lo"], out[f"{name}_hi"] = lo, hi
    lo, hi = np.full(a.shape[1], np.nan), np.full(a.shape[1], np.nan)
    ok = np.isfinite(rel).any(axis=0)
    if ok.any():
        lo[ok], hi[ok] = np.nanpercentile(rel[:, ok], q, axis=0)
    out["rel_lo"], out["rel_hi"] = lo, hi
    return out


@dataclass
class Comparison:
    """The comparison table (:data:`COMPARE_COLUMNS`), the per-run shares and the settings."""

    table: pl.DataFrame
    shares: pl.DataFrame
    runs: pl.DataFrame
    config: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def write(self, out: str | Path, *, name: str = "compare", figure: bool = True) -> dict[str, Path]:
        """``<name>.csv``, ``<name>.md``, ``<name>_runs.csv`` and the figure (PNG, PDF)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"csv": out / f"{name}.csv", "md": out / f"{name}.md", "runs": out / f"{name}_runs.csv"}
        self.table.write_csv(paths["csv"])
        paths["md"].write_text(
            table_markdown(self.table, config=self.config, failures=self.failures, warnings=self.warnings)
        )
        self.runs.write_csv(paths["runs"])
        if figure:
            from reveal_lab.plots import plot_comparison, save_figure

            labels = (self.config.get("a_label", "A"), self.config.get("b_label", "B"))
            fig = plot_comparison(self.table, title=self.config.get("title", ""), labels=labels)
            for p in save_figure(fig, out, name):
                paths[f"figure_{p.suffix.lstrip('.')}"] = p
        return paths


def _fmt(v: Any, pct: bool) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "–"
    return f"{100 * v:.1f} %" if pct else f"{v:.3g}"


def table_markdown(
    table: pl.DataFrame,
    *,
    config: Mapping | None = None,
    failures: Sequence[str] = (),
    max_metrics: int = 15,
    warnings: Sequence[str] = (),
) -> str:
    """The comparison as Markdown: throughput, ``any``, subsystems, then the metrics that
    changed most (by ``|diff|``), each ``mean [lo, hi]``."""
    cfg = dict(config or {})
    lines = [
        f"A: {cfg.get('a_label', 'A')} ({cfg.get('n_a', '?')} runs) · B: {cfg.get('b_label', 'B')} "
        f"({cfg.get('n_b', '?')} runs) · {int(100 * cfg.get('level', 0.95))} % bootstrap intervals "
        f"over runs ({cfg.get('n_boot', '?')} resamples)",
        "",
        "| level | name | A | B | B − A | relative change |",
        "|---|---|---|---|---|---|",
    ]
    metrics = table.filter(pl.col("level") == "metric")
    metrics = metrics.sort(pl.col("diff").abs(), descending=True).head(max_metrics)
    for part in (
        table.filter(pl.col("level") == "throughput"),
        table.filter(pl.col("level") == "any"),
        table.filter(pl.col("level") == "subsystem").sort("name"),
        metrics,
    ):
        for r in part.iter_rows(named=True):
            pct = r["level"] != "throughput"

            def ci(k: str, r: dict = r, pct: bool = pct) -> str:
                return f"{_fmt(r[k], pct)} [{_fmt(r[k + '_lo'], pct)}, {_fmt(r[k + '_hi'], pct)}]"

            rel = (
                f"{_fmt(r['rel_change'], True)} [{_fmt(r['rel_lo'], True)}, {_fmt(r['rel_hi'], True)}]"
                if r["rel_change"] is not None
                else "–"
            )
            a = f"{_fmt(r['a_mean'], pct)} [{_fmt(r['a_lo'], pct)}, {_fmt(r['a_hi'], pct)}]"
            b = f"{_fmt(r['b_mean'], pct)} [{_fmt(r['b_lo'], pct)}, {_fmt(r['b_hi'], pct)}]"
            lines.append(f"| {r['level']} | {r['name']} | {a} | {b} | {ci('diff')} | {rel} |")
    lines += ["", "Shares are of all windows of a run (hosts of a run pooled); throughput in samples/s."]
    if cfg:
        keep = ("reference", "preset", "false_alarm_rate", "trim", "seed")
        lines += ["", "Settings: " + ", ".join(f"{k}={cfg[k]}" for k in keep if k in cfg)]
    if warnings:
        lines += ["", *[f"Warning: {w}" for w in warnings]]
    if failures:
        lines += ["", f"Host files that could not be scored ({len(failures)}):"]
        lines += [f"- {f}" for f in failures]
    return "\n".join(lines) + "\n"


def _table(
    keys: list[tuple[str, str]], res: Mapping[str, np.ndarray], n_a: int, n_b: int
) -> pl.DataFrame:
    rows = []
    for i, (lv, nm) in enumerate(keys):
        row = {"level": lv, "name": nm, "n_a": n_a, "n_b": n_b}
        for c in COMPARE_COLUMNS[4:]:
            v = float(res[c][i])
            row[c] = v if np.isfinite(v) else None
        rows.append(row)
    schema = {c: pl.Float64 for c in COMPARE_COLUMNS}
    schema.update({"level": pl.String, "name": pl.String, "n_a": pl.Int64, "n_b": pl.Int64})
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def compare_runs(
    a: Sequence[str | RunSpec],
    b: Sequence[str | RunSpec],
    *,
    data: str | Path | None = None,
    reference: str = "a",
    preset: str = "paper",
    policy: DetectionPolicy | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    a_label: str = "A",
    b_label: str = "B",
    memo: dict | None = None,
) -> Comparison:
    """Compare run sets ``a`` and ``b`` (see the module doc); items as :func:`resolve_runs` takes.

    ``policy`` (:class:`~reveal_lab.pipeline.DetectionPolicy`, default ``POLICIES["default"]``)
    decides each run's anomalous windows; its
    ``min_agreement`` left to ``auto`` is 1 here (the shares count the windows any detector
    flags, on both sides alike, so a fault one detector sees still moves them). Its
    ``trim`` (unless ``none``) keeps each lab run's workload span only (from
    ``meta_lab.csv``; other files are used whole); its ``false_alarm_rate`` sets the
    cross-fitted thresholds of ``reference="a"`` (at least two other A runs of the host;
    one: in-sample thresholds).

    ``memo``: a dict kept between calls (:func:`compare_cases`), holding the runs loaded and
    the shares scored, keyed by the run, its baseline runs and every setting scoring reads:
    a run another call scored alike is read from it, not scored again.
    """
    from reveal_lab.config import get_preset
    from reveal_lab.pipeline import POLICIES, detect_run

    policy = (policy or POLICIES["default"]).for_shares()
    trim = policy.trim != "none"

    if reference not in ("a", "self"):
        raise ValueError(f"reference must be 'a' or 'self', got {reference!r}")
    sa, sb = _specs(a, data), _specs(b, data)
    if not sa or not sb:
        raise ValueError("both sides need at least one run")
    from reveal_lab.io import run_identity

    ids_a = {run_identity(s.path): s.path for s in sa}
    both = [(ids_a[k], s.path) for s in sb if (k := run_identity(s.path)) in ids_a]
    if both:
        pairs = "; ".join(b if a == b else f"{b} (B) is {a} (A)" for a, b in both[:3])
        raise ValueError(
            f"the same run on both sides (the same file, however spelled): {pairs}; a run compared "
            "with itself shows only the bootstrap's noise"
        )
    pre = get_preset(preset)
    memo = {} if memo is None else memo
    settings = (reference, repr(pre), repr(policy))

    def load(s: RunSpec) -> Run:
        if s.run is not None:  # a run handed in is named, not identified, by its path
            return _load(s, trim)
        key = ("run", s.path, s.span, trim)
        if key not in memo:
            memo[key] = _load(s, trim)
        return memo[key]

    def hosts(s: RunSpec) -> tuple[str, ...]:
        from reveal_lab.telemetry import frame_hosts

        r = load(s)
        return tuple(r.meta.hosts) or tuple(frame_hosts(r.frame))

    def detect(run: Run, base: list[Run] | None):  # noqa: ANN202 - a Detection
        return detect_run(run, baseline=base, preset=pre, policy=policy)

    parts, failures = _score_sides(sa, sb, reference, hosts, _memo_detect(detect, load, memo, settings))
    warnings = _workload_warnings([load(s) for s in sa], [load(s) for s in sb])
    shares = pl.concat(parts) if parts else pl.DataFrame()
    ga = list(dict.fromkeys(s.group for s in sa if shares.height and s.group in set(shares["group"])))
    gb = list(dict.fromkeys(s.group for s in sb if shares.height and s.group in set(shares["group"])))
    if not ga or not gb:
        raise TelemetryError(f"no run could be scored on one side: {failures[:3]}")
    table = _bootstrap_table(shares, sa, sb, ga, gb, {"n_boot": n_boot, "seed": seed, "level": level})
    table, note = _without_one_run_intervals(table, len(ga), len(gb), a_label, b_label)
    warnings += [note] if note else []
    runs = pl.DataFrame(
        [
            {"side": side, "group": s.group, "path": s.path, "throughput": s.throughput}
            for side, specs in (("a", sa), ("b", sb))
            for s in specs
        ],
        schema={"side": pl.String, "group": pl.String, "path": pl.String, "throughput": pl.Float64},
    )
    config = {
        "a_label": a_label,
        "b_label": b_label,
        "n_a": len(ga),
        "n_b": len(gb),
        "reference": reference,
        "preset": preset,
        "false_alarm_rate": policy.false_alarm_rate,
        "trim": trim,
        "policy": policy.name,
        "n_boot": n_boot,
        "seed": seed,
        "level": level,
        "title": f"{b_label} vs {a_label}",
    }
    for w in warnings:
        log.warning("%s", w)
    return Comparison(table, shares, runs, config, failures, warnings)


def _score_sides(sa, sb, reference, hosts, detect):  # noqa: ANN001, ANN202
    """Detect on every run of both sides (with ``reference="a"`` each fitted on the other A
    runs of its hosts, never its own group); ``(share frames, failures)``."""
    parts, failures = [], []
    for side, specs in (("a", sa), ("b", sb)):
        for s in specs:
            baseline = None
            if reference == "a":
                refs = [r for r in sa if r.path != s.path and r.group != s.group and hosts(r) == hosts(s)]
                if not refs:
                    failures.append(f"{s.path}: no other A run of host(s) {hosts(s)} to fit on")
                    continue
                baseline = refs
            scored = detect(s, baseline)
            if isinstance(scored, str):
                failures.append(f"{s.path}: {scored}")
                continue
            shares, n_windows = scored
            parts.append(shares.with_columns(side=pl.lit(side)))
            log.info("%s [%s]: %d windows", Path(s.path).name, side, n_windows)
    return parts, failures


def _memo_detect(detect, load, memo: dict, settings: tuple):  # noqa: ANN001, ANN202
    """``detect`` as :func:`_score_sides` calls it, ``(spec, baseline specs or None)`` ->
    ``(run_shares, windows)`` or the error's message, read from ``memo`` when the same run
    was scored on the same baseline runs under the same ``settings`` (runs handed in as
    :attr:`RunSpec.run` are scored every time: their path names them, it does not identify them)."""

    def shares(s: RunSpec, refs: list[RunSpec] | None) -> tuple[pl.DataFrame, int] | str:
        try:
            det = detect(load(s), None if refs is None else [load(r) for r in refs])
        except (TelemetryError, ValueError) as exc:
            return str(exc)
        return run_shares(det, s.group), det.windows.height

    def scored(s: RunSpec, refs: list[RunSpec] | None) -> tuple[pl.DataFrame, int] | str:
        if s.run is not None or any(r.run is not None for r in refs or ()):
            return shares(s, refs)
        key = ("shares", settings, s.path, s.span, s.group, refs and tuple((r.path, r.span) for r in refs))
        if key not in memo:
            memo[key] = shares(s, refs)
        return memo[key]

    return scored


def _bootstrap_table(shares, sa, sb, ga, gb, boot):  # noqa: ANN001, ANN202
    """B against A by bootstrap over runs (groups ``ga``, ``gb``): every share key, and the
    throughput when both sides have it; ``boot``: ``n_boot``, ``seed``, ``level``."""
    keys, m = _per_run(shares, ga + gb)
    ma, mb = m[: len(ga)], m[len(ga) :]
    tables = []
    if keys:
        res = bootstrap_compare(ma, mb, n_boot=boot["n_boot"], seed=boot["seed"], level=boot["level"])
        tables.append(_table(keys, res, len(ga), len(gb)))
    thr_a = _group_throughput(sa, ga)
    thr_b = _group_throughput(sb, gb)
    if thr_a is not None and thr_b is not None:
        res = bootstrap_compare(
            thr_a[:, None], thr_b[:, None], n_boot=boot["n_boot"], seed=boot["seed"] + 1, level=boot["level"]
        )
        tables.append(_table([("throughput", "samples_per_s")], res, len(thr_a), len(thr_b)))
    return pl.concat(tables) if tables else _table([], {}, 0, 0)


def _workload_of(run: Run) -> str | None:
    m = run.meta
    prefix = (m.extra or {}).get("prefix")
    return None if not m.workload else f"{prefix} {m.workload}" if prefix else str(m.workload)


def _workload_warnings(a: Sequence[Run], b: Sequence[Run]) -> list[str]:
    """A warning when the two sides ran different workloads (phase and model/task/data, from
    the file names or ``meta_lab.csv``): a difference is then the programs', not the fix's."""
    wa = {w for r in a if (w := _workload_of(r))}
    wb = {w for r in b if (w := _workload_of(r))}
    if not wa or not wb or wa == wb:
        return []
    return [
        f"the sides ran different workloads (A: {sorted(wa)[:3]}, B: {sorted(wb)[:3]}): a difference "
        "is then the workloads', not the change's; compare runs of the same workload"
    ]


def _without_one_run_intervals(
    table: pl.DataFrame, n_a: int, n_b: int, a_label: str, b_label: str
) -> tuple[pl.DataFrame, str | None]:
    """With one run on a side, resampling runs gives that side (and the difference) an interval
    of zero width, which says nothing: those bounds are left empty and a note says why."""
    one = [f"{lab} ({n} run)" for lab, n in ((a_label, n_a), (b_label, n_b)) if n < 2]
    if not one or not table.height:
        return table, None
    cols = [c for c in ("a_lo", "a_hi") if n_a < 2] + [c for c in ("b_lo", "b_hi") if n_b < 2]
    cols += ["diff_lo", "diff_hi", "rel_lo", "rel_hi"]
    table = table.with_columns(pl.lit(None, dtype=pl.Float64).alias(c) for c in cols)
    return table, (
        f"one run on side {' and '.join(one)}: a bootstrap over runs needs 2 or more per side, so "
        "no interval is given for it or for the difference (–); the values are those of single runs"
    )


def _specs(items: Sequence[str | RunSpec], data: str | Path | None) -> list[RunSpec]:
    out: list[RunSpec] = []
    for x in items:
        out += [x] if isinstance(x, RunSpec) else resolve_runs([x], data)
    return out


def _group_throughput(specs: Sequence[RunSpec], groups: Sequence[str]) -> np.ndarray | None:
    """Mean throughput per run (over its hosts), for the scored runs; None when any is unknown."""
    vals = []
    for g in groups:
        t = [s.throughput for s in specs if s.group == g and s.throughput is not None]
        if not t:
            return None
        vals.append(float(np.mean(t)))
    return np.array(vals)


def _limit(specs: list[RunSpec], n: int) -> list[RunSpec]:
    if n <= 0:
        return specs
    keep = list(dict.fromkeys(s.group for s in specs))[:n]
    return [s for s in specs if s.group in keep]


def case_study_runs(
    data: str | Path | None = None,
    *,
    before: str = "case=ddp:before",
    after: Sequence[str] = ("case=irq:after", "case=threads:after", "case=loss:after"),
    fallback_before: str = "model=DDPCNN,fault=none",
    fallback_after: Sequence[str] = ("fault^=packet_loss", "fault^=config_cpu_quota"),
    max_runs_per_side: int = 0,
) -> dict[str, tuple[list[RunSpec], list[RunSpec]]]:
    """Before/after run sets of the lab's case studies: ``{after selector: (A, B)}``.

    The v2 dataset marks them in ``meta_lab.csv``'s ``case`` column; a dataset without it
    (or without matching runs) falls back to ``fallback_before`` against each of
    ``fallback_after`` (e.g. the v1 data's fault-free DDP runs against its packet-loss and
    CPU-quota runs). After-selectors that match nothing are left out; at most
    ``max_runs_per_side`` runs per side when it is positive.
    """

    def pick(sel: str) -> list[RunSpec]:
        try:
            return resolve_runs([sel], data)
        except TelemetryError:
            return []

    a = pick(before)
    pairs = [(x, pick(x)) for x in after] if a else []
    if not a or not any(b for _, b in pairs):
        a = pick(fallback_before)
        pairs = [(x, pick(x)) for x in fallback_after]
    return {x: (_limit(a, max_runs_per_side), _limit(b, max_runs_per_side)) for x, b in pairs if a and b}


def compare_cases(
    pairs: Mapping[str, tuple[Sequence[str | RunSpec], Sequence[str | RunSpec]]],
    *,
    a_label: str = "A",
    **kwargs: Any,
) -> dict[str, Comparison]:
    """:func:`compare_runs` of each case's ``(A, B)`` (as :func:`case_study_runs` gives them),
    ``b_label`` the case; ``kwargs`` go to every call. The calls share one ``memo``, so a run
    of several cases (side A's, fitted on the same other A runs) is loaded and scored once."""
    memo: dict = {}
    return {
        case: compare_runs(a, b, a_label=a_label, b_label=case, memo=memo, **kwargs)
        for case, (a, b) in pairs.items()
    }


def combine_cases(comparisons: Mapping[str, Comparison]) -> pl.DataFrame:
    """One table of several comparisons: a ``case`` column first, the detection policy that
    decided its anomalous windows (``policy``: its name), then :data:`COMPARE_COLUMNS`."""
    parts = [c.table.select(pl.lit(k).alias("case"),
                            pl.lit(c.config.get("policy"), dtype=pl.String).alias("policy"),
                            pl.all()) for k, c in comparisons.items()]
    schema = {"case": pl.String, "policy": pl.String, **dict(_table([], {}, 0, 0).schema)}
    return pl.concat(parts) if parts else pl.DataFrame(schema=schema)
