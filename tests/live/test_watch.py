"""``reveal-lab watch`` against a real ``reveal-lab collect`` on this machine's procfs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reveal_lab.live import watch
from reveal_lab.pipeline import POLICIES

CLI = str(Path(sys.executable).with_name("reveal-lab"))

FIELDS = {
    "event",
    "window_id",
    "start",
    "end",
    "host",
    "phase",
    "anomalous",
    "methods",
    "agreement",
    "score",
    "scores",
    "subsystem",
    "metric",
    "feature",
    "claim",
    "evidence",
    "n_samples",
    "compute_ms",
}


def _kill(*procs: subprocess.Popen) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=30)


@pytest.mark.slow
def test_watch_cli_scores_windows_of_a_running_collector(tmp_path):
    out, jsonl = tmp_path / "run", tmp_path / "verdicts.jsonl"
    # the watch first, the collector once it watches: it follows the run from its first chunk
    # however long its imports take on a loaded machine (started together, a watch that came
    # up after the collector had finished read the finished run's segment, no journal bytes)
    watcher = subprocess.Popen(
        [
            CLI,
            "watch",
            str(out),
            "--warmup",
            "5s",
            "--window",  # a warm-up of 5 s holds 21 windows of 1 s every 200 ms (watch wants 20)
            "1s",
            "--stride",
            "200ms",
            "--all",
            "--jsonl",
            str(jsonl),
            "--idle-exit",  # past a loaded machine's stall of the collector (or its start), not only its end
            "30s",
            "--duration",
            "90s",
            "--prune",  # a stream alone scores every metric unless asked
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    collector = None
    try:
        first = watcher.stdout.readline()  # "watching RUN: warm-up ...", said before it follows
        collector = subprocess.Popen(
            [CLI, "collect", "--out", str(out), "--probes", "procfs", "--interval", "100ms", "--duration", "10s"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        stdout, stderr = watcher.communicate(timeout=120)
        stdout = first + stdout
        assert collector.wait(timeout=30) == 0
    finally:
        _kill(*(p for p in (collector, watcher) if p is not None))
    assert watcher.returncode == 0, stderr[-2000:]
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    windows = [r for r in lines if r["event"] == "window"]
    assert any(r["event"] == "fitted" for r in lines)
    assert len(windows) >= 1, stdout
    for r in windows:
        assert FIELDS <= set(r), sorted(FIELDS - set(r))
        # of the 10 samples of a 1 s window (a loaded machine's collector misses some ticks)
        assert r["phase"] == "scored" and 1 <= r["n_samples"] <= 11
        assert set(r["scores"]) == {"zscore", "mahalanobis", "iforest"}
        # a detector flags it, or the sentinel rule of a stream alone (its own quiet counters)
        assert r["anomalous"] == (r["agreement"] >= 1 or r["sentinel"] is not None)
        if r["anomalous"]:  # an anomaly carries its attribution
            assert r["subsystem"] and r["metric"] and r["feature"] and r["claim"]
    # printed as they happened: warm-up lines, the fit, then one line per scored window
    assert "warm-up" in stdout and "detectors fitted on warm-up" in stdout
    assert sum(" window " in ln and ("ok (" in ln or "ANOMALY" in ln) for ln in stdout.splitlines()) == len(
        windows
    )
    summary = json.loads(stderr.split("summary: ", 1)[1].splitlines()[0])
    assert summary["scored"] == len(windows) and summary["follow"]["bytes_read"] > 0
    # the paper's pruned space when asked (--prune), fitted on the warm-up, and said so
    assert summary["pruning"]["applied"] and summary["pruning"]["source"] == "fitted on the warm-up"
    fitted = next(r for r in lines if r["event"] == "fitted")
    assert fitted["pruning"]["n_selected"] == summary["pruning"]["n_selected"] > 0
    assert "pruned space of" in stdout


@pytest.mark.slow
def test_watch_function_with_a_baseline_run(tmp_path):
    """Fit on a finished collector run, then follow a second one: no warm-up, every window scored."""
    base, live = tmp_path / "base", tmp_path / "live"
    collectors = [
        subprocess.Popen(
            [CLI, "collect", "--out", str(d), "--probes", "procfs", "--duration", secs],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for d, secs in ((base, "6s"), (live, "5s"))
    ]  # side by side: both finished before the watch starts
    try:
        assert [c.wait(timeout=60) for c in collectors] == [0, 0]
    finally:
        _kill(*collectors)
    seen, features = [], {}
    for prune in (True, False):
        jsonl = tmp_path / f"prune_{prune}.jsonl"
        summary = watch(
            live,
            baseline=base,
            idle_exit_s=1.0,
            duration_s=60,
            show="none",
            echo=None,
            on_verdict=seen.append,
            policy=POLICIES["default"].with_(prune=prune),
            jsonl=jsonl,
        )
        assert summary.fitted_on and "baseline" in summary.fitted_on
        assert summary.warmup_windows == 0 and summary.scored >= 2
        assert all(v.phase in ("scored", "gap") for v in seen)
        assert summary.pruning["applied"] is prune
        events = [json.loads(line) for line in jsonl.read_text().splitlines()]
        features[prune] = next(e["n_features"] for e in events if e["event"] == "fitted")
    assert summary.pruning["source"].startswith("every metric")
    # the pruned space (fitted on the baseline) scores fewer features than every metric
    assert 0 < features[True] < features[False]
    # each verdict says whether the sentinel rule fired (which counters move is the machine's
    # business); with the rule off (a preset with sentinel_samples=None) it never does
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    verdicts = [e for e in lines if "window_id" in e]
    assert verdicts and all("sentinel" in e for e in verdicts)
    quiet: list = []
    summary = watch(live, baseline=base, idle_exit_s=1.0, duration_s=60, show="none", echo=None,
                    on_verdict=quiet.append, policy=POLICIES["default"].with_(sentinel_samples=None))  # fmt: skip
    assert summary.scored >= 2 and not any(v.sentinel for v in quiet)
    assert all(v.anomalous == (v.agreement >= 1) for v in quiet if v.phase == "scored")


@pytest.mark.slow
def test_warm_up_waits_for_enough_windows_of_a_collector_that_starts_late_and_stalls(tmp_path):
    """``watch`` first, the collector a moment later; the collector is stopped (SIGSTOP) half a
    second after it started writing and resumed 6 s later, as on a machine too busy to let it
    sample. The 5 s warm-up then holds gap windows only; it goes on (up to --wait) until it holds
    enough complete windows instead of fitting on the first one and exiting."""
    import os
    import signal
    import time

    out, jsonl = tmp_path / "run", tmp_path / "verdicts.jsonl"
    watcher = subprocess.Popen(
        [CLI, "watch", str(out), "--warmup", "5s", "--window", "1s", "--stride", "200ms", "--wait", "30s", "--all",
         "--jsonl", str(jsonl)]
        + ["--idle-exit", "20s", "--duration", "120s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.5)  # the collector starts after the watch
    collector = subprocess.Popen(
        [CLI, "collect", "--out", str(out), "--probes", "procfs", "--interval", "100ms", "--duration", "15s"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(out.glob("journal-*.bin")) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.5)
        os.kill(collector.pid, signal.SIGSTOP)
        time.sleep(6.0)
        os.kill(collector.pid, signal.SIGCONT)
        assert collector.wait(timeout=60) == 0
        stdout, stderr = watcher.communicate(timeout=120)
    finally:
        if collector.poll() is None:
            os.kill(collector.pid, signal.SIGCONT)
        _kill(collector, watcher)
    assert watcher.returncode == 0, stderr[-2000:]
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    fitted = next(r for r in lines if r["event"] == "fitted")
    n_fit = int(fitted["on"].split("(", 1)[1].split(" windows", 1)[0])
    assert n_fit >= 3, fitted["on"]
    windows = [r for r in lines if r["event"] == "window"]
    assert windows and all(r["phase"] == "scored" for r in windows)
