#!/usr/bin/env python
"""Run every benchmark script that exists, each in its own process with a time limit,
then summarize all result JSONs into ``benchmarks/results/SUMMARY.md``.

    .venv/bin/python benchmarks/run_all.py [--only a,b] [--skip a,b] [--timeout S] [--no-summary]
    .venv/bin/python benchmarks/run_all.py --quick    # every benchmark's --quick run into out/bench/quick/

Each script ``benchmarks/<name>.py`` writes ``benchmarks/results/<name>.json``. A script
that is missing is listed as not present; one that fails or runs past its limit is
recorded with its exit status and the tail of its output, and the others still run.
The run log goes to ``benchmarks/results/run_all.json``, with the machine and the load
average before and after. ``--quick`` runs each script that has a ``--quick`` mode that
way (tiny, seconds to a minute each: it shows they work, its numbers are not quotable), with
results and log in ``out/bench/quick/``, and leaves ``benchmarks/results/`` alone.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

from _harness import HERE, RESULTS, ROOT, load_average, machine_info, write_json

#: where ``--quick`` writes (not committed)
QUICK = ROOT / "out" / "bench" / "quick"

#: benchmark scripts in run order, with their default time limit in seconds
SCRIPTS: dict[str, int] = {
    "collector_overhead": 900,
    "features_vs_tsfresh": 1800,
    "dtw_vs_tslearn": 900,
    "detectors": 900,
    "end_to_end": 1800,
    "scale_throughput": 1200,
    "watch_latency": 900,
    "study_cache": 900,
    "public_scale": 7200,
    "labelled_servers": 3600,
}


def has_quick(script: Path) -> bool:
    """Whether a benchmark script takes ``--quick`` (through the harness's :func:`parser`)."""
    return "quick=" in script.read_text()


def run_one(name: str, timeout: float, python: str, results: Path = RESULTS, quick: bool = False) -> dict:
    script = HERE / f"{name}.py"
    rec: dict = {"name": name, "script": str(script.relative_to(HERE.parent)), "timeout_s": timeout}
    if not script.is_file():
        rec["status"] = "not present"
        return rec
    result = results / f"{name}.json"
    extra = ["--quick", "--out", str(result)] if quick else []
    if quick and not has_quick(script):
        rec["status"] = "no --quick mode"
        return rec
    before = result.stat().st_mtime if result.exists() else None
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [python, str(script), *extra],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        rec["returncode"] = proc.returncode
        out = proc.stdout + proc.stderr
        rec["status"] = "ok" if proc.returncode == 0 else "failed"
    except subprocess.TimeoutExpired as exc:
        out = (
            (exc.stdout or b"").decode(errors="replace")
            if isinstance(exc.stdout, bytes)
            else (exc.stdout or "")
        )
        out += (
            (exc.stderr or b"").decode(errors="replace")
            if isinstance(exc.stderr, bytes)
            else (exc.stderr or "")
        )
        rec["status"] = "timed out"
    rec["seconds"] = round(time.perf_counter() - t0, 2)
    rec["output_tail"] = out[-3000:]
    after = result.stat().st_mtime if result.exists() else None
    rec["result_json"] = str(result.relative_to(HERE.parent)) if after is not None else None
    rec["result_written"] = after is not None and after != before
    return rec


def _names(a: argparse.Namespace, ap: argparse.ArgumentParser) -> list[str]:
    names = list(SCRIPTS)
    # scripts added later that follow the convention run too (after the known ones)
    names += sorted(
        p.stem
        for p in HERE.glob("*.py")
        if p.stem not in SCRIPTS and p.stem not in {"run_all", "summarize"} and not p.stem.startswith("_")
    )
    if a.only:
        wanted = [s.strip() for s in a.only.split(",") if s.strip()]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            ap.error(f"--only: unknown benchmark(s) {unknown}; known: {names}")
        names = [n for n in names if n in wanted]
    if a.skip:
        skip = {s.strip() for s in a.skip.split(",")}
        names = [n for n in names if n not in skip]
    return names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma-separated script names")
    ap.add_argument("--skip", default=None, help="comma-separated script names")
    ap.add_argument("--timeout", type=float, default=None, help="override every script's time limit (s)")
    ap.add_argument("--quick", action="store_true", help=f"each script's --quick run, into {QUICK}")
    ap.add_argument("--no-summary", action="store_true")
    a = ap.parse_args(argv)
    names = _names(a, ap)
    results = QUICK if a.quick else RESULTS
    results.mkdir(parents=True, exist_ok=True)
    log: dict = {
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "quick": a.quick,
        "machine": machine_info(),
        "load_before": load_average(),
        "runs": [],
    }
    for n in names:
        limit = a.timeout if a.timeout is not None else SCRIPTS.get(n, 900)
        print(f"[run_all] {n} (limit {limit:.0f} s) ...", flush=True)
        rec = run_one(n, limit, sys.executable, results, a.quick)
        print(
            f"[run_all] {n}: {rec['status']}" + (f" in {rec['seconds']} s" if "seconds" in rec else ""),
            flush=True,
        )
        log["runs"].append(rec)
        write_json(results / "run_all.json", {**log, "load_after": load_average()})
    if not a.no_summary:
        cmd = [sys.executable, str(HERE / "summarize.py"), "--results", str(results)]
        cmd += (
            ["--out", str(results / "SUMMARY.md")]
            if a.quick
            else ["--readme", str(ROOT / "docs" / "RESULTS.md")]
        )
        subprocess.run(cmd, cwd=ROOT, check=False)
    ok = ("ok", "not present", "no --quick mode")
    return 0 if all(r["status"] in ok for r in log["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
