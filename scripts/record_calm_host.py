#!/usr/bin/env python
"""Record a calm host: ``reveal-lab collect`` (100 ms) of this machine for ``--duration`` plus a
minute, with a light steady training job (the lab's MLP, one thread) from 30 s in to 30 s before
the end, and nothing injected; for counting false episodes per host-hour
(``benchmarks/calm_host.py``). Waits for a quiet machine first (the lab's load gate) and writes
the raw recording in the GPU-host set's form (collector folder, ``labels.json`` with the job and
no fault, ``steps.csv`` from the job's per-second progress lines: each row one second of steps,
``step_s`` their mean), then the set in the lab layout (``reveal_lab.lab.build_gpu_host_set``).

    .venv/bin/python scripts/record_calm_host.py --duration 31min --raw /var/tmp/reveal_lab/calm --out data/calm-host

Measure alone: nothing else may run while it records (the load average before and after goes to
``labels.json`` and the set's ``recordings.md``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from reveal_lab.config import parse_duration

LEAD_S = 30.0


def _steps(log: Path, out: Path) -> int:
    """``steps.csv`` from the job's progress lines (one a second); how many rows."""
    rows, prev = [], None
    for line in log.read_text().splitlines():
        d = json.loads(line)
        if "steps_per_s" in d and prev is not None and d["steps_per_s"] > 0:
            rows.append(f"{prev / 1000:.3f},{1.0 / d['steps_per_s']:.6f}")
        prev = d.get("time_ms", prev)
    out.write_text("t,step_s\n" + "\n".join(rows) + "\n")
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", default="31min", help="the job's length (default 31min)")
    p.add_argument("--raw", default="/var/tmp/reveal_lab/calm", help="where the raw recording goes")
    p.add_argument("--out", default="data/calm-host", help="the set's folder (lab layout)")
    p.add_argument("--load-gate", type=float, default=0.5, help="1-min load average to wait for (default 0.5)")
    a = p.parse_args(argv)
    from reveal_lab.lab import LoadGate, build_gpu_host_set

    job_s = parse_duration(a.duration)
    raw = Path(a.raw) / "calm-mlp"
    if raw.exists():
        print(f"{raw} exists: record into an empty --raw folder", file=sys.stderr)
        return 2
    raw.mkdir(parents=True)
    LoadGate(gate=a.load_gate, max_wait_s=900).wait()
    before = Path("/proc/loadavg").read_text().split()[:3]
    exe = Path(sys.executable).with_name("reveal-lab")
    popen = time.time()
    coll = subprocess.Popen(
        [str(exe), "collect", "--interval", "100ms", "--duration", f"{job_s + 2 * LEAD_S:g}s", "--out", str(raw)],
        stdout=open(raw / "collect.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
    )
    time.sleep(LEAD_S)
    start = time.time()
    job = subprocess.run(
        [sys.executable, "-m", "reveal_lab.lab._workloads", "--model", "MLP", "--phase", "train",
         "--duration", f"{job_s:g}", "--threads", "1", "--log", str(raw / "job.log")],
        capture_output=True, text=True, timeout=job_s + 600,
    )
    end = time.time()
    rc = coll.wait(timeout=2 * LEAD_S + 300)
    after = Path("/proc/loadavg").read_text().split()[:3]
    n = _steps(raw / "job.log", raw / "steps.csv")
    (raw / "labels.json").write_text(json.dumps({
        "recording": raw.name, "collector_popen": popen, "collector_exit": rc,
        "job": {"kind": "job", "name": "mlp_train_cpu", "start": start, "end": end, "rc": job.returncode},
        "faults": [], "loadavg_before": before, "loadavg_after": after,
        "note": "a calm host: a light steady training job (MLP, one thread), nothing injected",
    }, indent=1))
    print(f"recorded {raw}: job {end - start:.0f} s, {n} pace rows, collector rc {rc}, load {before} -> {after}")
    if rc != 0 or job.returncode != 0:
        print(job.stderr[-2000:], file=sys.stderr)
        return 1
    build_gpu_host_set([raw], a.out)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
