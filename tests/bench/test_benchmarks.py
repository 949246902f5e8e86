"""The performance-suite runner and the summary table, as real subprocesses."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from reveal_lab.config import PROJECT_ROOT

BENCH = PROJECT_ROOT / "benchmarks"

SPEED = {
    "benchmark": "features_vs_tsfresh",
    "machine": {"cpus": 2},
    "results": [
        {
            "case": "700 ch, 3 s windows",
            "unit": "s",
            "ours": {"name": "numba", "median": 0.5},
            "alternative": {"name": "tsfresh", "median": 600.0},
        },
        {
            "case": "throughput",
            "unit": "rows/s",
            "ours": 200.0,
            "alternative": 50.0,
            "higher_is_better": True,
        },
        {"case": "flat", "unit": "s", "ours_median": 2.0, "alt_median": 3.0, "alt_name": "tslearn"},
    ],
}


def _summarize(results: Path) -> str:
    p = subprocess.run(
        [sys.executable, str(BENCH / "summarize.py"), "--results", str(results)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    return (results / "SUMMARY.md").read_text()


def test_summary_computes_ratios_and_tolerates_bad_or_missing_results(tmp_path: Path):
    (tmp_path / "features_vs_tsfresh.json").write_text(json.dumps(SPEED))
    (tmp_path / "dtw_vs_tslearn.json").write_text("{not json")
    (tmp_path / "detectors.json").write_text(json.dumps({"something": "else"}))
    (tmp_path / "custom_thing.json").write_text(json.dumps([1, 2, 3]))
    text = _summarize(tmp_path)
    assert "| features_vs_tsfresh | 700 ch, 3 s windows | numba: 0.5 s | tsfresh: 600 s | 1,200× |" in text
    assert (
        "| features_vs_tsfresh | throughput | reveal-lab: 200 rows/s | alternative: 50 rows/s | 4× |" in text
    )
    assert "tslearn: 3 s | 1.5× |" in text
    assert "`dtw_vs_tslearn`" in text and "unreadable dtw_vs_tslearn.json" in text
    assert "unreadable detectors.json" in text
    assert "`collector_overhead` (collector vs `perf stat -I 100`): not run (no result JSON)" in text
    assert "`custom_thing` (): not run" in text


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
    assert "| SMD (3) | combined | 0.5 | 0.35 | 0.25 | 0.3 | 0.4 | 0.6 | 0.7 | 0.6 | 0.65 | 0.3 | – | 0.9 |" in text
    assert "`labelled_servers` (detection + attribution on labelled SMD/ASD servers): ok" in text


def test_summary_renders_the_lone_runs_study(tmp_path: Path):
    by_fault = {"cpu_contention": [{"model": "CNN", "phase": "train", "episode_share": 0.75, "top": "cpu"}]}
    summary = {
        "plain": {"fault_free_runs": 30, "fault_free_share_median": 0.25, "fault_free_share_mean": 0.5,
                  "fault_free_share_max": 0.75, "by_fault": by_fault},
        "sustained": {"fault_free_runs": 30, "fault_free_share_median": 0.0, "fault_free_share_mean": 0.125,
                      "fault_free_share_max": 0.5, "by_fault": {"storage_read": [
                          {"model": "MLP", "phase": "infer", "episode_share": 0.0, "top": None}]}},
    }
    (tmp_path / "lone_runs.json").write_text(json.dumps({"host": "labA", "min_run": 4, "summary": summary}))
    text = _summarize(tmp_path)
    assert "| `--min-run 1` | 30 | 0.25 / 0.5 / 0.75 | cpu_contention CNN train 0.75 (cpu) |" in text
    assert (
        "| default for a run alone: `--min-run 4` + sentinel rule | 30 | 0 / 0.125 / 0.5 | "
        "storage_read MLP infer 0 (–) |"
        in text
    )
    assert "`lone_runs` (lab runs detected alone" in text and ": ok" in text
    # a result in another shape is listed as unreadable, not a crash
    (tmp_path / "lone_runs.json").write_text(json.dumps({"runs": []}))
    assert "unreadable lone_runs.json: no 'summary' by setting" in _summarize(tmp_path)


def test_run_all_isolates_failures_and_time_limits(tmp_path: Path):
    b = tmp_path / "benchmarks"
    (b / "results").mkdir(parents=True)
    for f in ("run_all.py", "summarize.py"):
        shutil.copy(BENCH / f, b / f)
    (b / "quick_one.py").write_text(
        "import json, pathlib\n"
        "p = pathlib.Path(__file__).parent / 'results' / 'quick_one.json'\n"
        "row = {'case': 'c', 'unit': 's', 'ours': 1.0, 'alternative': 2.0}\n"
        "p.write_text(json.dumps({'results': [row]}))\n"
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
    assert p.returncode == 1  # one failed, one timed out
    log = {r["name"]: r for r in json.loads((b / "results" / "run_all.json").read_text())["runs"]}
    assert log["quick_one"]["status"] == "ok" and log["quick_one"]["result_written"]
    assert log["broken_one"]["status"] == "failed" and "boom" in log["broken_one"]["output_tail"]
    assert log["slow_one"]["status"] == "timed out"
    summary = (b / "results" / "SUMMARY.md").read_text()
    assert "| quick_one | c | reveal-lab: 1 s | alternative: 2 s | 2× |" in summary


def test_summary_reads_the_collector_overhead_shape(tmp_path: Path):
    (tmp_path / "collector_overhead.json").write_text(
        json.dumps(
            {
                "benchmark": "collector_overhead",
                "host": {"cpus": 2},
                "median_by_interval_ms": {
                    "100": {
                        "procfs": {"stat_pct_of_core": 0.2, "schedstat_pct_of_core": 0.25, "channels": 300},
                        "perf": {"stat_pct_of_core": 1.0, "schedstat_pct_of_core": 1.0, "channels": 10},
                    }
                },
                "bytes_on_disk": {"interval_ms": 100, "channels": 700, "folder_bytes_per_s": 4000.0},
            }
        )
    )
    text = _summarize(tmp_path)
    assert "procfs: 0.25 % of a core | perf stat -I 100: 1 % of a core | 4× |" in text
    assert "collector: 4,000 B/s" in text


def test_summary_reads_the_detectors_end_to_end_and_scale_shapes(tmp_path: Path):
    (tmp_path / "detectors.json").write_text(
        json.dumps(
            {
                "n_windows": 1800,
                "n_features": 6818,
                "repeat": 3,
                "results": {
                    "blas_1_thread": {
                        "fit_plus_score_median_s": {"zscore": 1.5, "mahalanobis": 12.0},
                        "total_median_s": 13.5,
                    }
                },
            }
        )
    )
    (tmp_path / "end_to_end.json").write_text(
        json.dumps(
            {
                "rows": 18000,
                "channels": 700,
                "cli_wall_s": 100.0,
                "peak_rss_gb": 0.97,
                "traced": {"timings_s": {"features": 34.0}},
            }
        )
    )
    (tmp_path / "scale_throughput.json").write_text(
        json.dumps(
            {
                "in_process": [{"rows": 1200, "cols": 790, "median_s": 7.7}],
                "dask": [{"workers": 2, "runs": 8, "runs_per_minute": 5.9, "peak_worker_rss_mb": 688.0}],
                "speedup_2_vs_1": 1.23,
            }
        )
    )
    text = _summarize(tmp_path)
    assert (
        "| detectors | mahalanobis fit + score, 1800 windows x 6818 features (blas_1_thread) | "
        "mahalanobis: 12 s |" in text
    )
    assert "detect (CLI): 100 s | – | – | peak RSS 0.97 GB; features 34.0 s |" in text
    assert "dask: 5.9 runs/min" in text and "2 vs 1 workers: 1.23x" in text
    assert "`scale_throughput` (Dask scale-out throughput): ok" in text


def test_summary_reads_the_watch_latency_shape(tmp_path: Path):
    (tmp_path / "watch_latency.json").write_text(
        json.dumps(
            {
                "stream": {"channels": 700, "interval_ms": 100},
                "target_ms": 50,
                "paper_end_to_end_s": 2.26,
                "data_to_verdict_ms_after_fit": {"median": 51.0, "p95": 93.0},
                "alternatives_same_run": {
                    "engine_fast_forest_compute_ms": {"median": 6.5},
                    "engine_sklearn_forest_compute_ms": {"median": 42.25},
                    "naive_full_history_features_ms": {"median": 975.0},
                },
            }
        )
    )
    text = _summarize(tmp_path)
    assert "watch: 51 ms | – | – | p95 93 ms; target 50 ms; paper 2.26 s |" in text
    assert "same, scikit-learn forest: 42.2 ms | 6.5× |" in text
    assert "features over the full history: 975 ms | 150× |" in text


def test_summary_rewrites_only_the_readme_section_between_markers(tmp_path: Path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "features_vs_tsfresh.json").write_text(json.dumps(SPEED))
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Project\n\nintro\n\n<!-- benchmarks:begin (written by benchmarks/summarize.py; do not edit by hand) -->\n"
        "old table\n<!-- benchmarks:end -->\n\n## After\nkept\n"
    )
    p = subprocess.run(
        [sys.executable, str(BENCH / "summarize.py"), "--results", str(results), "--readme", str(readme)],
        capture_output=True, text=True, timeout=60,
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
    subprocess.run([sys.executable, str(BENCH / "summarize.py"), "--results", str(results), "--readme", str(plain)],
                   capture_output=True, text=True, timeout=60, check=True)
    assert plain.read_text() == "# no markers\n"


def test_summary_renders_the_sentinel_study(tmp_path: Path):
    v = {"false_alarm_share": 0.0023, "episodes_found": {"packet_loss@0.01": {"found": 3, "episodes": 3}}}
    (tmp_path / "sentinel_counters.json").write_text(json.dumps({"by_min_samples": {"5": v}}))
    text = _summarize(tmp_path)
    assert "| 5 | 0.0023 | packet_loss@0.01 3/3 |" in text
    (tmp_path / "sentinel_counters.json").write_text(json.dumps({"results": []}))
    assert "unreadable sentinel_counters.json: no 'by_min_samples'" in _summarize(tmp_path)


def test_sentinel_study_finds_the_bundled_packet_loss(tmp_path: Path):
    """v3: counters never non-zero in the fault-free runs move in every loss episode (5 of a
    window's 30 samples), and rarely if ever in fault-free windows; bad input is refused by name."""
    out = tmp_path / "s.json"
    script = str(BENCH / "sentinel_counters.py")
    p = subprocess.run([sys.executable, script, "--min-samples", "5", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert p.returncode == 0, p.stderr
    res = json.loads(out.read_text())["by_min_samples"]["5"]
    loss = {k: v for k, v in res["episodes_found"].items() if k.startswith("packet_loss")}
    assert len(loss) == 3 and all(v["found"] == v["episodes"] == 3 for v in loss.values())
    assert res["false_alarm_share"] < 0.01  # 0 since the collector's missed ticks are no sentinel
    bad = subprocess.run(
        [sys.executable, script, "--min-samples", "0"], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "--min-samples" in bad.stderr


def test_summary_renders_the_crosshost_references_study(tmp_path: Path):
    v = {"fault_free_hosts_flagged": 1, "fault_free_hosts_judged": 60, "false_alarm_share": 1 / 60,
         "labels_found": 7, "labels_judged": 8, "by_fault": {"config_threads": {"found": 7, "judged": 8}}}
    (tmp_path / "crosshost_references.json").write_text(json.dumps({"by_refs": {"3": v}}))
    assert "| 3 | 1/60 (0.0167) | 7/8: config_threads 7/8 |" in _summarize(tmp_path)
    (tmp_path / "crosshost_references.json").write_text(json.dumps({"results": []}))
    assert "unreadable crosshost_references.json: no 'by_refs'" in _summarize(tmp_path)


def test_crosshost_references_study_on_the_bundled_ddp_runs(tmp_path: Path):
    """v3, all 4 other fault-free runs as references (what evaluate uses): every whole-run label
    found on its host, no host of a fault-free run flagged; a number of references the data
    cannot give is refused by name."""
    out = tmp_path / "x.json"
    script = str(BENCH / "crosshost_references.py")
    p = subprocess.run([sys.executable, script, "--refs", "4", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert p.returncode == 0, p.stderr
    res = json.loads(out.read_text())
    v = res["by_refs"]["4"]
    assert res["fault_free_runs"] == 5 and res["labels"] == 8
    assert v["fault_free_hosts_judged"] == 15 and v["fault_free_hosts_flagged"] == 0
    assert v["labels_found"] == v["labels_judged"] == 40
    bad = subprocess.run([sys.executable, script, "--refs", "1"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--refs 1" in bad.stderr
