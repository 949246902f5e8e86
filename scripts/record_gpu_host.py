#!/usr/bin/env python
"""Record labelled GPU-host recordings: ``reveal-lab collect`` (100 ms) of the whole machine while
a real PyTorch training job runs and one kind of interference is injected at a known time
(``scripts/gpu_host_load.py``); each recording a collector folder with ``labels.json`` (the job,
the faults, the machine) and ``steps.csv`` (the job's step times), the raw form that
``scripts/build_gpu_host_set.py`` turns into ``data/gpu-host``.

    python scripts/record_gpu_host.py --plan gpu --print              # the plan and its length
    python scripts/record_gpu_host.py --plan gpu --raw /tmp/rec --tar $OUT/gpu-host.tar.gz

Made for a lent GPU machine without network access that has PyTorch but not this project: it
needs the standard library and PyTorch, and the collector's own imports (numpy, numba, pyarrow,
nvidia-ml-py); run it from the repository root with ``PYTHONPATH=.``. Its ``gpu`` plan (six
kinds, a calm job, then the host at rest: a baseline for runs without a job) takes ~8 minutes,
inside one 10-minute slice. ``--plan smoke`` is a
20-second CPU check (a small job, one busy process), the one the suite runs.

Nothing else may run on the machine while it records: the load average before and after each
recording goes to its ``labels.json``. A recording folder that exists is never overwritten.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOAD = HERE / "gpu_host_load.py"
sys.path.insert(0, str(HERE))
from gpu_host_load import GPU_KINDS, KINDS  # noqa: E402


@dataclass(frozen=True)
class Fault:
    """One interference: its kind, when it starts after the collector (s), how long (s), and
    the ``interfere`` options (``--gb``, ``--procs``)."""

    kind: str
    at_s: float
    length_s: float
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Recording:
    """One recording: the collector for ``seconds``, the job from ``job_s[0]`` to ``job_s[1]``
    (after the collector's start; ``None``: no job, the host at rest), the faults."""

    name: str
    seconds: float
    job_s: tuple[float, float] | None
    faults: tuple[Fault, ...] = ()


def _one(kind: str, **options: float) -> Recording:
    return Recording(kind.replace("_", "-"), 60.0, (8.0, 57.0), (Fault(kind, 28.0, 15.0, dict(options)),))


#: the plans: ``gpu`` six kinds on a GPU host, one recording each (the job's calm span about
#: 2.3x its fault), a calm job, and the host at rest; ``smoke`` a CPU check
PLANS: dict[str, dict] = {
    "gpu": {
        "device": "cuda",
        "size": "full",
        "recordings": (
            _one("gpu_cotenant_compute"),
            _one("gpu_cotenant_bandwidth", gb=40),
            _one("pcie_h2d", gb=4),
            _one("loader_cpu"),
            _one("host_memory", gb=48),
            _one("storage_write"),
            Recording("calm-job", 55.0, (8.0, 52.0)),
            Recording("idle-host", 40.0, None),
        ),
    },
    "smoke": {
        "device": "cpu",
        "size": "small",
        "recordings": (Recording("smoke-cpu", 14.0, (1.0, 12.5), (Fault("loader_cpu", 7.0, 4.0, {"procs": 1}),)),),
    },
}
#: pause between two recordings (the previous job's memory handed back)
GAP_S = 2.0


def plan_seconds(plan: dict) -> float:
    """How long a plan records (its recordings and the gaps between them)."""
    recs = plan["recordings"]
    return sum(r.seconds for r in recs) + GAP_S * max(len(recs) - 1, 0)


def check_plan(plan: dict, name: str) -> None:
    """Refuse a plan that cannot run as written (a GPU kind without CUDA, a fault or job outside
    its recording), before anything is recorded."""
    for r in plan["recordings"]:
        if r.job_s is not None and not 0 <= r.job_s[0] < r.job_s[1] <= r.seconds:
            raise SystemExit(f"plan {name}: {r.name}: the job {r.job_s} must lie inside its {r.seconds:g} s")
        for f in r.faults:
            if f.kind not in KINDS:
                raise SystemExit(f"plan {name}: {r.name}: unknown kind {f.kind!r}; expected one of {', '.join(KINDS)}")
            if f.kind in GPU_KINDS and plan["device"] != "cuda":
                raise SystemExit(f"plan {name}: {r.name}: {f.kind} needs --device cuda")
            lo, hi = r.job_s or (0.0, r.seconds)
            if not lo <= f.at_s < f.at_s + f.length_s <= hi:
                raise SystemExit(f"plan {name}: {r.name}: {f.kind} must lie inside {r.job_s or 'the recording'}")


def _loadavg() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


def machine() -> dict:
    """What the recording ran on: :func:`reveal_lab.machine.machine_info` (standard library only),
    PyTorch's version and the GPUs (``nvidia-smi``)."""
    from reveal_lab.machine import machine_info

    info: dict = machine_info()
    try:
        from importlib.metadata import version

        info["torch"] = version("torch")
    except Exception:  # noqa: BLE001 - not installed as a distribution: say so
        info["torch"] = None
    smi = shutil.which("nvidia-smi")
    if smi:
        q = "name,memory.total,driver_version"
        try:
            out = subprocess.run(
                [smi, f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
            )
            info["gpus"] = [s.strip() for s in out.stdout.splitlines() if s.strip()]
        except subprocess.TimeoutExpired:
            info["gpus"] = "nvidia-smi did not answer in 20 s"
    return info


def _collector(folder: Path, seconds: float) -> subprocess.Popen:
    cmd = [
        sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())",
        "collect", "--interval", "100ms", "--duration", f"{seconds:g}s", "--out", str(folder),
    ]
    return subprocess.Popen(cmd, stdout=open(folder.parent / f"{folder.name}.collect.log", "wb"),  # noqa: SIM115
                            stderr=subprocess.STDOUT)


def _wait_until(t: float) -> None:
    while (d := t - time.time()) > 0:
        time.sleep(min(d, 0.5))


def _start_job(rec: Recording, popen: float, steps: Path, device: str, size: str) -> subprocess.Popen | None:
    if rec.job_s is None:
        return None
    _wait_until(popen + rec.job_s[0])
    return subprocess.Popen(
        [sys.executable, str(LOAD), "job", "--device", device, "--size", size,
         "--duration", f"{rec.job_s[1] - rec.job_s[0]:g}", "--steps", str(steps)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )


def record(rec: Recording, root: Path, device: str, size: str) -> Path:
    """One recording into ``root/<name>``; its folder."""
    folder = root / rec.name
    if folder.exists():
        raise SystemExit(f"{folder} exists: a recording is never overwritten (give another --raw)")
    before = _loadavg()
    popen = time.time()
    coll = _collector(folder, rec.seconds)
    faults_log = root / f"{rec.name}.faults.jsonl"
    steps = root / f"{rec.name}.steps.csv"
    job = _start_job(rec, popen, steps, device, size)
    job_start = time.time()
    procs: list[subprocess.Popen] = []
    for f in sorted(rec.faults, key=lambda f: f.at_s):
        _wait_until(popen + f.at_s)
        opts = [x for k, v in f.options.items() for x in (f"--{k}", f"{v:g}")]
        procs.append(subprocess.Popen(
            [sys.executable, str(LOAD), "interfere", f.kind, "--duration", f"{f.length_s:g}",
             "--log", str(faults_log), *opts],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        ))
    job_out = job.communicate(timeout=rec.seconds + 300)[0].decode(errors="replace") if job else ""
    job_end = time.time()
    fault_out = [p.communicate(timeout=rec.seconds + 300)[0].decode(errors="replace") for p in procs]
    _, status, usage = os.wait4(coll.pid, 0)
    coll.returncode = os.waitstatus_to_exitcode(status)
    after = _loadavg()
    if not folder.is_dir():  # the collector made nothing: keep its log and what the load wrote
        raise SystemExit(f"{folder}: the collector wrote nothing (exit {coll.returncode}); see {folder}.collect.log")
    for src, dst in ((steps, "steps.csv"), (folder.parent / f"{folder.name}.collect.log", "collect.log")):
        if src.exists():
            src.replace(folder / dst)
    recorded = [json.loads(x) for x in faults_log.read_text().splitlines()] if faults_log.exists() else []
    faults_log.unlink(missing_ok=True)
    name = "transformer_train_bf16" if size == "full" else "transformer_train_small"
    labels = {
        "recording": rec.name,
        "collector_popen": popen,
        "collector_exit": coll.returncode,
        "collector_cpu_s": round(usage.ru_utime + usage.ru_stime, 6),
        "job": {"kind": "job", "name": name, "device": device, "start": job_start, "end": job_end,
                "rc": job.returncode} if job else None,
        "faults": recorded,
        "planned": [{"kind": f.kind, "at_s": f.at_s, "length_s": f.length_s, **f.options} for f in rec.faults],
        "machine": machine(),
        "loadavg_before": before,
        "loadavg_after": after,
        "note": "recorded by scripts/record_gpu_host.py; nothing else ran beside "
        + ("the job and the faults" if job else "the collector (the host at rest)"),
    }
    (folder / "labels.json").write_text(json.dumps(labels, indent=1) + "\n")
    bad = [o for p, o in zip(procs, fault_out, strict=True) if p.returncode] + ([job_out] if job and job.returncode else [])
    if bad or len(recorded) != len(rec.faults):
        raise SystemExit(f"{folder}: the job or a fault failed (kept what was recorded):\n" + "\n".join(bad))
    return folder


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", choices=sorted(PLANS), default="gpu", help="what to record (default gpu)")
    p.add_argument("--raw", type=Path, default=Path("/var/tmp/reveal_lab/gpu-host"), help="where the recordings go")
    p.add_argument("--only", action="append", default=[], help="record only this recording of the plan (repeatable)")
    p.add_argument("--tar", type=Path, default=None, help="also pack the recordings into this .tar.gz")
    p.add_argument("--no-warm", action="store_true", help="skip filling the collector's compiled cache first")
    p.add_argument("--print", action="store_true", help="print the plan and how long it records, record nothing")
    a = p.parse_args(argv)
    plan = dict(PLANS[a.plan])
    if a.only:
        names = {r.name for r in plan["recordings"]}
        if unknown := sorted(set(a.only) - names):
            p.error(f"--only {', '.join(unknown)}: not in plan {a.plan}; recordings: {', '.join(sorted(names))}")
        plan["recordings"] = tuple(r for r in plan["recordings"] if r.name in a.only)
    check_plan(plan, a.plan)
    if a.print:
        for r in plan["recordings"]:
            what = ", ".join(f"{f.kind} {f.at_s:g}-{f.at_s + f.length_s:g} s" for f in r.faults) or "nothing injected"
            job = f"job {r.job_s[0]:g}-{r.job_s[1]:g} s" if r.job_s else "no job"
            print(f"{r.name}: {r.seconds:g} s, {job}, {what}")
        print(f"total: {plan_seconds(plan):.0f} s of recording on {plan['device']}")
        return 0
    a.raw.mkdir(parents=True, exist_ok=True)
    if not a.no_warm:
        subprocess.run([sys.executable, "-m", "reveal_lab.collect.warm"], check=True, timeout=600,
                       stdout=subprocess.DEVNULL)
    made = []
    for i, r in enumerate(plan["recordings"]):
        if i:
            time.sleep(GAP_S)
        made.append(record(r, a.raw, plan["device"], plan["size"]))
        print(f"recorded {made[-1]}", flush=True)
    if a.tar:
        a.tar.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(a.tar, "w:gz") as t:
            for m in made:
                t.add(m, arcname=m.name)
        print(f"packed {len(made)} recording(s) into {a.tar}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
