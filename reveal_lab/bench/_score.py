"""The separate scorer: reads ONLY the bench's output files and the labels.

This is the contract test of ``reveal-lab bench labelled``: whatever produced an
output folder, if it holds

* ``NAME.scores.csv`` -- header ``score,label``, one row per test row (``label`` is the
  producer's own 0/1 decision, not the ground truth), and
* ``NAME.attribution.jsonl`` -- one ``{"start", "end", "ranking"}`` object per run of
  consecutive ``label == 1`` rows (``end`` is the row after the last; ``ranking`` lists
  1-based metric numbers, most responsible first),

this module scores it against ``NAME_test_label.csv.gz`` and
``NAME_interpretation_label.txt``.

How a labelled segment is attributed (after InterFusion's ``cal_IPS``): a labelled
segment ``start-end`` (matched end-inclusive) counts as *detected* when at least one of
its rows is both labelled anomalous and flagged (a true positive). Its ranking comes
from the reported segments holding those true-positive rows; when several do, their
rankings are merged by a Borda count weighted by how many of the segment's
true-positive rows each holds (one reported segment: its ranking unchanged). Segments
that were not detected are not scored (InterFusion scores only detected ones), and the
share detected is reported beside the scores. Nested labelled segments are each scored.

Run it as ``python -m reveal_lab.bench._score --data DIR --out OUT`` or
``reveal-lab bench score``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from reveal_lab.jsonsafe import dumps
from reveal_lab.bench._data import (
    InterpretationSegment,
    label_runs,
    read_interpretation_labels,
    read_point_labels,
    server_family,
)
from reveal_lab.bench._metrics import (
    average_precision,
    best_f1,
    best_f1_point_adjusted,
    decision_f1,
    hit_rate,
    ndcg,
    point_adjust_decisions,
    random_hit_rate,
    random_ndcg,
)
from reveal_lab.render import markdown_table
from reveal_lab.telemetry import TelemetryError

__all__ = [
    "SCORES_HEADER",
    "ATTRIBUTION_KEYS",
    "PS",
    "read_scores",
    "read_attribution",
    "segment_ranking",
    "score_server",
    "score_folder",
    "aggregate",
    "format_table",
    "format_server_table",
    "main",
]

SCORES_HEADER = ("score", "label")
ATTRIBUTION_KEYS = ("start", "end", "ranking")
#: the P of HitRate@P% / NDCG@P%
PS = (100, 150)


def read_scores(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """``NAME.scores.csv`` as ``(score float64[n], decision int8[n])``; strict header."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: missing")
    scores: list[float] = []
    dec: list[int] = []
    with p.open(newline="") as fh:
        rd = csv.reader(fh)
        header = next(rd, None)
        if header is None or tuple(h.strip() for h in header) != SCORES_HEADER:
            raise TelemetryError(
                f"header must be exactly {','.join(SCORES_HEADER)!r}, found {header}", path=str(p), line=1
            )
        for lineno, row in enumerate(rd, start=2):
            if len(row) != 2:
                raise TelemetryError(f"expected 2 values, found {len(row)}", path=str(p), line=lineno)
            try:
                s = float(row[0])
            except ValueError:
                raise TelemetryError(
                    f"score {row[0]!r} is not a number", path=str(p), line=lineno, column="score"
                ) from None
            if not math.isfinite(s):
                raise TelemetryError(
                    f"score {row[0]!r} is not finite", path=str(p), line=lineno, column="score"
                )
            if row[1].strip() not in ("0", "1"):
                raise TelemetryError(
                    f"label {row[1]!r} must be 0 or 1", path=str(p), line=lineno, column="label"
                )
            scores.append(s)
            dec.append(int(row[1]))
    return np.asarray(scores, dtype=np.float64), np.asarray(dec, dtype=np.int8)


def read_attribution(path: str | Path, *, n_metrics: int | None = None) -> list[dict]:
    """``NAME.attribution.jsonl``: checks keys, types, row order and metric numbers."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: missing")
    out: list[dict] = []
    for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TelemetryError(f"not JSON: {exc.msg}", path=str(p), line=lineno) from None
        if not isinstance(obj, dict) or tuple(sorted(obj)) != tuple(sorted(ATTRIBUTION_KEYS)):
            raise TelemetryError(
                f"expected exactly the keys {list(ATTRIBUTION_KEYS)}, found "
                f"{sorted(obj) if isinstance(obj, dict) else type(obj).__name__}",
                path=str(p),
                line=lineno,
            )
        start, end, ranking = obj["start"], obj["end"], obj["ranking"]
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end):
            raise TelemetryError(
                f"start/end must be integers with 0 <= start < end, found {start}, {end}",
                path=str(p),
                line=lineno,
            )
        if not (isinstance(ranking, list) and ranking and all(isinstance(x, int) for x in ranking)):
            raise TelemetryError(
                "ranking must be a non-empty list of 1-based metric numbers",
                path=str(p),
                line=lineno,
                column="ranking",
            )
        if (
            min(ranking) < 1
            or (n_metrics is not None and max(ranking) > n_metrics)
            or len(set(ranking)) != len(ranking)
        ):
            raise TelemetryError(
                f"ranking must hold distinct metric numbers 1..{n_metrics or 'n'}",
                path=str(p),
                line=lineno,
                column="ranking",
            )
        out.append(obj)
    return out


def _check_segments_match(attr: list[dict], dec: np.ndarray, path: Path) -> None:
    runs = label_runs(dec)
    got = [(a["start"], a["end"]) for a in attr]
    if got != runs:
        missing = sorted(set(runs) - set(got))[:3]
        extra = sorted(set(got) - set(runs))[:3]
        raise TelemetryError(
            f"{len(got)} attribution segments for {len(runs)} runs of label=1 in the scores file; "
            f"runs without a segment {missing}, segments without a run {extra}",
            path=str(path),
        )


def segment_ranking(
    seg: InterpretationSegment, truth: np.ndarray, dec: np.ndarray, attr: list[dict]
) -> list[int] | None:
    """The ranking a labelled segment is judged on, or ``None`` when not detected.

    Two reported segments hold the true positives of row 1 (weight 1) and rows 3-4
    (weight 2); the heavier one leads the merged ranking:

    >>> truth = np.array([0, 1, 1, 1, 1]); dec = np.array([0, 1, 0, 1, 1])
    >>> attr = [{"start": 1, "end": 2, "ranking": [2, 1, 3]}, {"start": 3, "end": 5, "ranking": [3, 1, 2]}]
    >>> segment_ranking(InterpretationSegment(1, 4, (1,), 1), truth, dec, attr)
    [3, 1, 2]
    >>> segment_ranking(InterpretationSegment(2, 2, (1,), 2), truth, dec, attr) is None
    True
    """
    lo, hi = seg.start, min(seg.end + 1, truth.size)
    tp = np.flatnonzero((truth[lo:hi] > 0) & (dec[lo:hi] > 0)) + lo
    if tp.size == 0:
        return None
    weights: list[tuple[int, list[int]]] = []
    for a in attr:
        w = int(((tp >= a["start"]) & (tp < a["end"])).sum())
        if w:
            weights.append((w, a["ranking"]))
    if not weights:  # flagged rows without an attribution line: checked earlier, cannot happen
        return None
    if len(weights) == 1:
        return list(weights[0][1])
    points: dict[int, float] = {}
    first_seen: dict[int, int] = {}
    for w, ranking in sorted(weights, key=lambda t: -t[0]):
        n = len(ranking)
        for pos, m in enumerate(ranking):
            points[m] = points.get(m, 0.0) + w * (n - pos) / n
            first_seen.setdefault(m, len(first_seen))
    return sorted(points, key=lambda m: (-points[m], first_seen[m]))


def _test_width(data_dir: Path, name: str) -> int | None:
    """Metric count D (for the random baseline and range checks): the width of the first
    line of ``NAME_test.csv.gz`` -- only that line is read -- or ``None`` without it."""
    import gzip

    test = data_dir / f"{name}_test.csv.gz"
    if not test.is_file():
        return None
    with gzip.open(test, "rt") as fh:
        first = fh.readline().strip()
    return len(first.split(",")) if first else None


def score_server(out_dir: str | Path, data_dir: str | Path, name: str) -> dict:
    """All metrics for one server from ``out_dir/NAME.*`` and the labels in ``data_dir``."""
    out_dir, data_dir = Path(out_dir), Path(data_dir)
    score, dec = read_scores(out_dir / f"{name}.scores.csv")
    truth = read_point_labels(data_dir / f"{name}_test_label.csv.gz")
    if score.size != truth.size:
        raise TelemetryError(
            f"{score.size} score rows for {truth.size} test rows", path=str(out_dir / f"{name}.scores.csv")
        )
    segs = read_interpretation_labels(data_dir / f"{name}_interpretation_label.txt", n_rows=truth.size)
    attr_path = out_dir / f"{name}.attribution.jsonl"
    attr = read_attribution(attr_path, n_metrics=_test_width(data_dir, name))
    _check_segments_match(attr, dec, attr_path)
    n_metrics = _test_width(data_dir, name) or max(
        [len(a["ranking"]) for a in attr] + [max(s.metrics) for s in segs] + [1]
    )

    bf = best_f1(score, truth)
    pa = best_f1_point_adjusted(score, truth)
    df = decision_f1(dec, truth)
    res: dict = {
        "server": name,
        "family": server_family(name),
        "n_rows": int(truth.size),
        "n_anomalous_rows": int(truth.sum()),
        "best_f1": bf["f1"],
        "best_f1_precision": bf["precision"],
        "best_f1_recall": bf["recall"],
        "best_f1_pa": pa["f1"],
        "auc_pr": average_precision(score, truth),
        "decision_f1": df["f1"],
        "decision_precision": df["precision"],
        "decision_recall": df["recall"],
        "decision_f1_pa": decision_f1(point_adjust_decisions(dec, truth), truth)["f1"],
        "flagged_share": float(dec.mean()),
        "n_reported_segments": len(attr),
        "n_labelled_segments": len(segs),
        "n_metrics": n_metrics,
    }
    per_seg = []
    for seg in segs:
        ranking = segment_ranking(seg, truth, dec, attr)
        if ranking is None:
            continue
        lo, hi = seg.start, min(seg.end + 1, truth.size)
        n_tp = int(((truth[lo:hi] > 0) & (dec[lo:hi] > 0)).sum())
        row = {"start": seg.start, "end": seg.end, "n_labelled_metrics": len(seg.metrics), "n_tp_rows": n_tp}
        for p in PS:
            row[f"hit@{p}"] = hit_rate(ranking, seg.metrics, p)
            row[f"ndcg@{p}"] = ndcg(ranking, seg.metrics, p)
            row[f"random_hit@{p}"] = random_hit_rate(len(seg.metrics), n_metrics, p)
            row[f"random_ndcg@{p}"] = random_ndcg(len(seg.metrics), n_metrics, p)
        per_seg.append(row)
    res["n_detected_segments"] = len(per_seg)
    res["detected_segment_share"] = len(per_seg) / len(segs) if segs else float("nan")
    for key in ("hit", "ndcg", "random_hit", "random_ndcg"):
        for p in PS:
            vals = [r[f"{key}@{p}"] for r in per_seg]
            res[f"{key}@{p}"] = float(np.mean(vals)) if vals else float("nan")
    # InterFusion's cal_IPS weights each detected segment by its true-positive rows
    for p in PS:
        w = [r["n_tp_rows"] for r in per_seg]
        for key in ("hit", "random_hit"):
            res[f"{key}_tp_weighted@{p}"] = (
                float(np.average([r[f"{key}@{p}"] for r in per_seg], weights=w)) if per_seg else float("nan")
            )
    # the random level over ALL labelled segments (independent of what was detected)
    for p in PS:
        res[f"random_hit_all@{p}"] = (
            float(np.mean([random_hit_rate(len(s.metrics), n_metrics, p) for s in segs]))
            if segs
            else float("nan")
        )
    res["segments"] = per_seg
    return res


def _servers_in(out_dir: Path) -> list[str]:
    return sorted(p.name[: -len(".scores.csv")] for p in out_dir.glob("*.scores.csv"))


#: columns aggregated (mean over servers) in the summary
SUMMARY_KEYS = (
    "best_f1",
    "best_f1_pa",
    "auc_pr",
    "decision_f1",
    "decision_precision",
    "decision_recall",
    "hit@100",
    "hit@150",
    "ndcg@100",
    "ndcg@150",
    "random_hit@150",
    "detected_segment_share",
    "hit_tp_weighted@150",
    "random_hit_tp_weighted@150",
    "random_hit@100",
)


def aggregate(rows: Sequence[dict]) -> dict[str, dict[str, float]]:
    """Mean over servers of :data:`SUMMARY_KEYS`, per family (SMD, ASD) and ``all``.

    Attribution means skip servers where no labelled segment was detected.
    """
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["family"], []).append(r)
        groups.setdefault("all", []).append(r)
    out: dict[str, dict[str, float]] = {}
    for g, rs in groups.items():
        out[g] = {"n_servers": len(rs)}
        for k in SUMMARY_KEYS:
            vals = [r[k] for r in rs if not (isinstance(r[k], float) and math.isnan(r[k]))]
            out[g][k] = float(np.mean(vals)) if vals else float("nan")
    return out


def score_folder(out_dir: str | Path, data_dir: str | Path, servers: Sequence[str] | None = None) -> dict:
    """Score every ``NAME.scores.csv`` in ``out_dir`` (or ``servers``)."""
    out_dir = Path(out_dir)
    names = list(servers) if servers else _servers_in(out_dir)
    if not names:
        raise FileNotFoundError(f"{out_dir}: no NAME.scores.csv files")
    rows = [score_server(out_dir, data_dir, n) for n in names]
    return {"servers": rows, "mean": aggregate(rows)}


def format_table(results: dict[str, dict], *, families: Sequence[str] = ("SMD", "ASD", "all")) -> str:
    """A Markdown table: one row per method and family (``results``: method -> score_folder)."""
    # point-wise and own-decision numbers first; point-adjusted F1 (inflated) last
    cols = [
        ("best_f1", "F1 (pw, best thr)"),
        ("decision_precision", "P (own)"),
        ("decision_recall", "R (own)"),
        ("decision_f1", "F1 (own thr)"),
        ("auc_pr", "AUC-PR"),
        ("hit@100", "Hit@100"),
        ("hit@150", "Hit@150"),
        ("ndcg@100", "NDCG@100"),
        ("ndcg@150", "NDCG@150"),
        ("random_hit@150", "rand Hit@150"),
        ("detected_segment_share", "segs detected"),
        ("best_f1_pa", "F1 (PA, inflated)"),
    ]
    rows = [
        {"set": f"{fam} ({agg['n_servers']})", "method": method, **{label: float(agg[k]) for k, label in cols}}
        for fam in families
        for method, res in results.items()
        if (agg := res["mean"].get(fam))
    ]
    schema = {"set": pl.String, "method": pl.String} | {label: pl.Float64 for _, label in cols}
    return markdown_table(pl.DataFrame(rows, schema=schema), float_format="{:.3f}", nan="–", right=True)


def format_server_table(results: dict[str, dict], methods: Sequence[str] | None = None) -> str:
    """A Markdown table with one row per server (``results``: method -> score_folder)."""
    cols = [
        ("best_f1", "F1 (pw, best thr)"),
        ("decision_precision", "P (own)"),
        ("decision_recall", "R (own)"),
        ("decision_f1", "F1 (own thr)"),
        ("auc_pr", "AUC-PR"),
        ("hit@100", "Hit@100"),
        ("hit@150", "Hit@150"),
        ("ndcg@150", "NDCG@150"),
        ("random_hit@150", "rand Hit@150"),
        ("best_f1_pa", "F1 (PA, inflated)"),
    ]
    rows = [
        {
            "server": r["server"],
            "method": method,
            **{label: float(r[k]) for k, label in cols},
            "segs detected": f"{r['n_detected_segments']}/{r['n_labelled_segments']}",
        }
        for method in methods or list(results)
        for r in results[method]["servers"]
    ]
    schema = {"server": pl.String, "method": pl.String} | {label: pl.Float64 for _, label in cols}
    df = pl.DataFrame(rows, schema=schema | {"segs detected": pl.String})
    return markdown_table(df, float_format="{:.3f}", nan="–", right=[*df.columns[2:]])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m reveal_lab.bench._score",
        description="Score a bench output folder against the labels.",
    )
    ap.add_argument("--data", required=True, help="labelled-servers folder (labels)")
    ap.add_argument("--out", required=True, help="folder holding NAME.scores.csv / NAME.attribution.jsonl")
    ap.add_argument("--servers", default=None, help="comma-separated names (default: all in --out)")
    ap.add_argument("--json", default=None, help="write the full result here")
    a = ap.parse_args(argv)
    res = score_folder(a.out, a.data, a.servers.split(",") if a.servers else None)
    print(format_table({Path(a.out).name or "out": res}))
    if a.json:
        Path(a.json).write_text(dumps(res, indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
