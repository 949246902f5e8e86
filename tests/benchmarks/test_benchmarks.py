"""The performance-suite runner and the summary table, as real subprocesses."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from reveal_lab.config import PROJECT_ROOT

BENCH = PROJECT_ROOT / "benchmarks"


def _side(name: str, median: float) -> dict:
    return {"name": name, "median": median}


def _row(case: str, unit: str, ours: dict, alt: dict | None = None, **kw) -> dict:  # noqa: ANN003
    return {
        "case": case,
        "unit": unit,
        "ours": ours,
        "alternative": alt,
        "ratio": None,
        "higher_is_better": False,
        "peak_mb": None,
        "note": "",
        **kw,
    }


def _timing(name: str, rows: list[dict], **kw) -> dict:  # noqa: ANN003
    return {
        "schema": 2,
        "benchmark": name,
        "kind": "timing",
        "command": f"benchmarks/{name}.py",
        "date": "2026-11-27T10:00:00+00:00",
        "commit": "abc1234",
        "machine": {"cores": 2},
        "load_before": [0.5, 0.4, 0.3],
        "load_after": [0.75, 0.5, 0.3],
        "results": rows,
        **kw,
    }


SPEED = _timing(
    "features_vs_tsfresh",
    [
        _row("700 ch, 3 s windows", "s", _side("numba", 0.5), _side("tsfresh", 600.0), ratio=1200.0),
        _row(
            "throughput",
            "rows/s",
            _side("reveal-lab", 200.0),
            _side("alternative", 50.0),
            ratio=4.0,
            higher_is_better=True,
        ),
        _row("alone", "s", _side("detect", 2.0), peak_mb=1027.4, note="derive 2.6 s"),
    ],
)


def _summarize(results: Path, studies: Path | None = None) -> str:
    cmd = [sys.executable, str(BENCH / "summarize.py"), "--results", str(results)]
    cmd += ["--studies", str(studies or results / "no-studies")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return (results / "SUMMARY.md").read_text()


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    """Empty results and studies folders under ``tmp_path``."""
    for d in ("results", "studies"):
        (tmp_path / d).mkdir()
    return tmp_path / "results", tmp_path / "studies"


def test_summary_reads_every_timing_the_same_way_and_tolerates_bad_or_missing_results(tmp_path: Path):
    (tmp_path / "features_vs_tsfresh.json").write_text(json.dumps(SPEED))
    (tmp_path / "dtw_vs_tslearn.json").write_text("{not json")
    # the shape a benchmark wrote before the harness: named, not guessed at
    (tmp_path / "detectors.json").write_text(json.dumps({"n_windows": 1800, "results": {"blas_default": {}}}))
    (tmp_path / "custom_thing.json").write_text(json.dumps([1, 2, 3]))
    text = _summarize(tmp_path)
    assert "| features_vs_tsfresh | 700 ch, 3 s windows | numba: 0.5 s | tsfresh: 600 s | 1,200× |  |" in text
    assert "| throughput | reveal-lab: 200 rows/s | alternative: 50 rows/s | 4× |" in text
    assert "| alone | detect: 2 s | – | – | derive 2.6 s; peak 1,027 MB |" in text
    assert "ok, features_vs_tsfresh.json (2026-11-27T10:00:00+00:00, commit abc1234, load 0.5 → 0.75)" in text
    assert "`dtw_vs_tslearn`" in text and "unreadable dtw_vs_tslearn.json" in text
    assert "unreadable detectors.json: expected 'schema': 2 and 'kind': 'timing'" in text
    assert "`collector_overhead` (collector vs `perf stat -I 100`): not run (no result JSON)" in text
    assert "`custom_thing` (): not run (unreadable custom_thing.json: top level is not an object)" in text
    assert "`lone_runs` (" in text and "a study): not run (no result JSON)" in text


def test_summary_of_a_converted_result_says_so(tmp_path: Path):
    """A stored result converted to schema 2 is read like any other and marked as not re-measured."""
    shutil.copy(BENCH / "results" / "end_to_end.json", tmp_path / "end_to_end.json")
    doc = json.loads((tmp_path / "end_to_end.json").read_text())
    assert doc["schema"] == 2 and doc["converted"]["from"].startswith("the benchmark's own shape")
    text = _summarize(tmp_path)
    wall = doc["cli_wall_s"]
    assert f"| end_to_end | `reveal-lab detect`, {doc['rows']} rows x 700 channels | " in text
    assert f"detect (CLI): {wall:.3g} s |" in text
    assert "converted to schema 2, not re-measured" in text


def test_each_benchmark_rebuilds_its_stored_rows_from_its_stored_values(monkeypatch):
    """The rows of every stored timing equal what the benchmark's own ``rows()`` makes of the
    stored values: one code path writes a row, whether measured now or converted."""
    monkeypatch.syspath_prepend(str(BENCH))
    import importlib

    checked = []
    for name in ("collector_overhead", "detectors", "end_to_end", "scale_throughput", "watch_latency"):
        doc = json.loads((BENCH / "results" / f"{name}.json").read_text())
        rows = importlib.import_module(name).rows(doc)
        assert json.loads(json.dumps(rows)) == doc["results"], name
        checked.append(len(rows))
    assert all(n >= 1 for n in checked)


def test_the_committed_results_are_all_readable_and_their_summary_is_the_one_in_the_docs(tmp_path: Path):
    """Every stored result is read (none 'unreadable'), and both the summary committed beside them
    and the benchmark section of docs/RESULTS.md are what summarize.py makes of them."""
    docs = tmp_path / "RESULTS.md"
    shutil.copy(PROJECT_ROOT / "docs" / "RESULTS.md", docs)
    out = tmp_path / "SUMMARY.md"
    cmd = [sys.executable, str(BENCH / "summarize.py"), "--out", str(out), "--readme", str(docs)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "unreadable" not in out.read_text() and "### Detection studies" in docs.read_text()
    assert out.read_text() == (BENCH / "results" / "SUMMARY.md").read_text()
    assert docs.read_text() == (PROJECT_ROOT / "docs" / "RESULTS.md").read_text()


def test_summary_renders_the_labelled_table(tmp_path: Path):
    agg = {
        "n_servers": 3,
        "best_f1": 0.5,
        "best_f1_pa": 0.9,
        "auc_pr": 0.4,
        "decision_f1": 0.3,
        "decision_precision": 0.35,
        "decision_recall": 0.25,
        "hit@100": 0.6,
        "hit@150": 0.7,
        "ndcg@100": 0.6,
        "ndcg@150": 0.65,
        "random_hit@150": 0.3,
        "detected_segment_share": None,
    }
    (tmp_path / "labelled_servers.json").write_text(
        json.dumps({"results": {"combined": {"mean": {"SMD": agg, "all": agg}}}})
    )
    text = _summarize(tmp_path)
    # own-decision precision/recall/F1 beside the best-threshold F1; point-adjusted F1 last
    assert (
        "| SMD (3) | combined | 0.5 | 0.35 | 0.25 | 0.3 | 0.4 | 0.6 | 0.7 | 0.6 | 0.65 | 0.3 | – | 0.9 |"
        in text
    )
    assert "`labelled_servers` (detection + attribution on labelled SMD/ASD servers): ok" in text


def test_summary_renders_the_lone_runs_study(tmp_path: Path):
    results, studies = _dirs(tmp_path)
    by_fault = {"cpu_contention": [{"model": "CNN", "phase": "train", "episode_share": 0.75, "top": "cpu"}]}
    summary = {
        "plain": {
            "fault_free_runs": 30,
            "fault_free_share_median": 0.25,
            "fault_free_share_mean": 0.5,
            "fault_free_share_max": 0.75,
            "by_fault": by_fault,
        },
        "sustained": {
            "fault_free_runs": 30,
            "fault_free_share_median": 0.0,
            "fault_free_share_mean": 0.125,
            "fault_free_share_max": 0.5,
            "by_fault": {
                "storage_read": [{"model": "MLP", "phase": "infer", "episode_share": 0.0, "top": None}]
            },
        },
    }
    (studies / "lone_runs.json").write_text(
        json.dumps({"kind": "study", "host": "labA", "min_run": 4, "summary": summary})
    )
    text = _summarize(results, studies)
    assert "| `--min-run 1` | 30 | 0.25 / 0.5 / 0.75 | cpu_contention CNN train 0.75 (cpu) |" in text
    assert (
        "| default for a run alone: `--min-run 4` + sentinel rule | 30 | 0 / 0.125 / 0.5 | "
        "storage_read MLP infer 0 (–) |" in text
    )
    assert "`lone_runs` (lab runs detected alone" in text and ": ok" in text
    # a result in another shape is listed as unreadable, not a crash
    (studies / "lone_runs.json").write_text(json.dumps({"kind": "study", "runs": []}))
    assert "unreadable lone_runs.json: no 'summary' by setting" in _summarize(results, studies)


def test_run_all_isolates_failures_and_time_limits(tmp_path: Path):
    b = tmp_path / "benchmarks"
    (b / "results").mkdir(parents=True)
    for f in ("run_all.py", "summarize.py", "_harness.py"):
        shutil.copy(BENCH / f, b / f)
    (b / "quick_one.py").write_text(
        "import sys\n"
        "from _harness import RESULTS, Session, row, side\n"
        "Session('quick_one', []).write(RESULTS / 'quick_one.json',"
        " [row('c', 's', side('ours', [1.0]), side('alt', [2.0]))])\n"
    )
    (b / "broken_one.py").write_text("raise SystemExit('boom')\n")
    (b / "slow_one.py").write_text("import time\ntime.sleep(60)\n")
    p = subprocess.run(
        [
            sys.executable,
            str(b / "run_all.py"),
            "--timeout",
            "3",
            "--skip",
            "labelled_servers,features_vs_tsfresh,dtw_vs_tslearn,detectors,collector_overhead,"
            "end_to_end,scale_throughput,watch_latency",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 1, p.stdout + p.stderr  # one failed, one timed out
    log = json.loads((b / "results" / "run_all.json").read_text())
    runs = {r["name"]: r for r in log["runs"]}
    assert runs["quick_one"]["status"] == "ok" and runs["quick_one"]["result_written"], runs["quick_one"]
    assert runs["broken_one"]["status"] == "failed" and "boom" in runs["broken_one"]["output_tail"]
    assert runs["slow_one"]["status"] == "timed out"
    assert log["machine"]["cores"] >= 1 and len(log["load_before"]) == 3
    summary = (b / "results" / "SUMMARY.md").read_text()
    assert "| quick_one | c | ours: 1 s | alt: 2 s | 2× |" in summary


def test_summary_rewrites_only_the_readme_section_between_markers(tmp_path: Path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "features_vs_tsfresh.json").write_text(json.dumps(SPEED))
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Project\n\nintro\n\n"
        "<!-- benchmarks:begin (written by benchmarks/summarize.py; do not edit by hand) -->\n"
        "old table\n<!-- benchmarks:end -->\n\n## After\nkept\n"
    )
    p = subprocess.run(
        [sys.executable, str(BENCH / "summarize.py"), "--results", str(results), "--readme", str(readme)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    text = readme.read_text()
    assert "old table" not in text
    assert text.startswith("# Project\n\nintro\n")
    assert text.rstrip().endswith("## After\nkept")
    section = text.split("-->", 1)[1].split("<!-- benchmarks:end -->")[0]
    assert "### Speed" in section and "features_vs_tsfresh" in section
    # a README without the markers is left alone
    plain = tmp_path / "PLAIN.md"
    plain.write_text("# no markers\n")
    subprocess.run(
        [sys.executable, str(BENCH / "summarize.py"), "--results", str(results), "--readme", str(plain)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert plain.read_text() == "# no markers\n"


def test_summary_renders_the_sentinel_study(tmp_path: Path):
    results, studies = _dirs(tmp_path)
    v = {"false_alarm_share": 0.0023, "episodes_found": {"packet_loss@0.01": {"found": 3, "episodes": 3}}}
    (studies / "sentinel_counters.json").write_text(json.dumps({"kind": "study", "by_min_samples": {"5": v}}))
    text = _summarize(results, studies)
    assert "| 5 | 0.0023 | packet_loss@0.01 3/3 |" in text
    (studies / "sentinel_counters.json").write_text(json.dumps({"kind": "study", "results": []}))
    assert "unreadable sentinel_counters.json: no 'by_min_samples'" in _summarize(results, studies)


def test_summary_renders_the_crosshost_references_study(tmp_path: Path):
    results, studies = _dirs(tmp_path)
    v = {
        "fault_free_hosts_flagged": 1,
        "fault_free_hosts_judged": 60,
        "false_alarm_share": 1 / 60,
        "labels_found": 7,
        "labels_judged": 8,
        "by_fault": {"config_threads": {"found": 7, "judged": 8}},
    }
    (studies / "crosshost_references.json").write_text(json.dumps({"kind": "study", "by_refs": {"3": v}}))
    assert "| 3 | 1/60 (0.0167) | 7/8: config_threads 7/8 |" in _summarize(results, studies)
    (studies / "crosshost_references.json").write_text(json.dumps({"kind": "study", "results": []}))
    assert "unreadable crosshost_references.json: no 'by_refs'" in _summarize(results, studies)


def test_the_public_scale_figure_is_drawn_from_the_stored_result(tmp_path: Path):
    """plot_public_scale.py reads the committed result (a stopped reproduction included) and
    writes a PNG; a result file it cannot read is named, exit 2."""
    out = tmp_path / "scale.png"
    cmd = [sys.executable, str(BENCH / "plot_public_scale.py"), str(BENCH / "results" / "public_scale.json")]
    p = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    cmd = [sys.executable, str(BENCH / "plot_public_scale.py"), str(bad)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "bad.json" in p.stderr


def test_public_scale_gives_each_notebook_the_peak_of_the_samples_taken_while_it_ran(tmp_path: Path, monkeypatch):
    """notebook_peaks reads papermill's start and end times from the executed notebooks and
    keeps, per notebook, the largest sample inside its span; samples outside every span are
    the runner's own (``between``); a notebook without times is left out."""
    monkeypatch.syspath_prepend(str(BENCH))
    import importlib

    ps = importlib.import_module("public_scale")

    def nb(name: str, start: str, end: str | None) -> None:
        meta = {"papermill": {"start_time": start, "end_time": end}}
        (tmp_path / f"{name}.ipynb").write_text(json.dumps({"metadata": meta, "cells": []}))

    from datetime import datetime

    nb("01-a", "2026-01-01T00:00:10+00:00", "2026-01-01T00:00:20+00:00")
    nb("02-b", "2026-01-01T00:00:30+00:00", None)  # stopped: runs to the last sample
    (tmp_path / "03-c.ipynb").write_text(json.dumps({"metadata": {}}))
    t0 = datetime.fromisoformat("2026-01-01T00:00:00+00:00").timestamp()
    samples = [(t0 + 5, 9e6), (t0 + 12, 3e6), (t0 + 19, 4e6), (t0 + 25, 7e6), (t0 + 31, 2e6), (t0 + 90, 5e6)]
    assert ps.notebook_peaks(samples, tmp_path) == {"01-a": 4.0, "02-b": 5.0, "between": 9.0}
