"""Recording one slot: one collector per host inside the host, the workload processes, the
planned faults at their offsets, then the collectors stopped (:func:`record_slot`)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from reveal_lab.lab._faults import Fault, make_fault, now_ms
from reveal_lab.lab._hosts import LabError, LabHost
from reveal_lab.lab._labels import run_stem
from reveal_lab.lab._runplan import FaultPlan, RecordedRun, RunPlan
from reveal_lab.lab._workloads import workload_spec

__all__ = ["collector_command", "record_slot", "record_slot_retry", "warm_up"]

log = logging.getLogger(__name__)


def collector_command(
    host: LabHost,
    out_dir: Path,
    *,
    interval: str = "100ms",
    probes: str | None = None,
    python: str = sys.executable,
) -> list[str]:
    """``reveal-lab collect --host <host> --out <dir> ...`` for one host (run inside the host).

    Uses the ``reveal-lab`` script beside ``python`` (the same virtual environment), else
    ``python -c 'from reveal_lab.cli import main; ...'``.
    """
    args = ["collect", "--host", host.name, "--out", str(out_dir), "--interval", interval]
    if probes:
        args += ["--probes", probes]
    if host.cgroup_v2_root is not None:
        args += ["--cgroup-root", str(host.cgroup_v2_root)]
    script = Path(python).with_name("reveal-lab")
    if script.exists():
        return [str(script), *args]
    return [python, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main(sys.argv[1:]))", *args]


def _seconds(interval: str) -> float:
    from reveal_lab.config import parse_duration

    return parse_duration(interval)


def _stop(proc: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 30.0) -> int:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    return proc.returncode


def _wait_started(out_dir: Path, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if (out_dir / "meta.json").exists() or any(out_dir.glob("journal-*.bin")):
            return
        if proc.poll() is not None:
            logf = out_dir.with_name(out_dir.name + ".collector.log")
            err = logf.read_text(errors="replace") if logf.exists() else ""
            raise LabError(f"collector exited ({proc.returncode}) before writing {out_dir}: {err[-2000:]}")
        time.sleep(0.05)
    raise LabError(f"collector did not start writing {out_dir} within {timeout}s")


def _started_at(logs: Sequence[Path], stop_evt: threading.Event, timeout: float = 180.0) -> float:
    """When every rank has logged its ``start`` line (the latest of them), in epoch seconds."""
    end = time.time() + timeout
    starts: dict[Path, float] = {}
    while time.time() < end and not stop_evt.is_set():
        for lp in logs:
            if lp in starts or not lp.exists():
                continue
            for line in lp.read_text().splitlines():
                rec = json.loads(line)
                if rec.get("event") == "start":
                    starts[lp] = rec["time_ms"] / 1000
                    break
        if len(starts) == len(logs):
            return max(starts.values())
        stop_evt.wait(0.05)
    raise LabError(f"workload did not start within {timeout}s ({[str(p) for p in logs]})")


def _summary_line(stdout: bytes | None) -> dict | None:
    r"""The workload's summary (its last stdout line, a JSON object), or ``None``.

    >>> _summary_line(b'noise\n{"steps": 3}\n')
    {'steps': 3}
    >>> _summary_line(b"") is None and _summary_line(b"not json") is None
    True
    """
    lines = (stdout or b"").decode(errors="replace").strip().splitlines()
    try:
        out = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return out if isinstance(out, dict) else None


def _fault_schedule(
    faults: list[tuple[Fault, FaultPlan]],
    logs: Sequence[Path],
    stop_evt: threading.Event,
    errors: list[BaseException],
    anchor: dict,
) -> None:
    try:
        t0 = _started_at(logs, stop_evt)
        anchor["t0"] = t0
    except BaseException as exc:  # noqa: BLE001 - handed to the main thread
        errors.append(exc)
        return
    events = []
    for f, fp in faults:
        if fp.at_s is None:
            continue
        events.append((t0 + fp.at_s, 0, f))
        events.append((t0 + fp.at_s + fp.for_s, 1, f))
    events.sort(key=lambda e: (e[0], e[1]))
    try:
        for when, kind, f in events:
            delay = when - time.time()
            if delay > 0 and stop_evt.wait(delay):
                break
            if kind == 0:
                f.start()
                log.info("fault %s on %s started", f.fault_type, f.host.name)
            else:
                f.stop()
                log.info("fault %s on %s stopped", f.fault_type, f.host.name)
    except BaseException as exc:  # noqa: BLE001 - handed to the main thread
        errors.append(exc)


def _threads(p: RunPlan, host: str) -> int:
    """Intra-op threads of ``p``'s workload on ``host``: 1 unless a ``config_threads`` fault says."""
    for f in p.faults:
        if f.fault_type == "config_threads" and f.host == host:
            return int(f.magnitude)
    return 1


def record_slot(
    hosts: dict[str, LabHost],
    plans: Sequence[RunPlan],
    raw_root: Path,
    *,
    interval: str = "100ms",
    probes: str | None = None,
    calm_before_s: float = 3.0,
    calm_after_s: float = 2.0,
    master_port: int = 29500,
    read_file: str = "/var/tmp/reveal_lab/readburst.bin",
) -> list[RecordedRun]:
    """Record ``plans`` at the same time (their hosts must be disjoint) into ``raw_root``.

    Each run leaves ``<stem>.run.json`` (plan, ground-truth labels in epoch ms, workload
    summaries) and one collector directory per host ``<stem>_<host>/``. One long function:
    the faults, workloads and collectors it starts are stopped in its ``finally`` block
    whatever happens between.
    """
    used = [h for p in plans for h in p.hosts]
    if len(used) != len(set(used)):
        raise ValueError(f"plans of one slot share hosts: {used}")
    for p in plans:
        p.validate()
    start_ms = now_ms()
    stems = {}
    for p in plans:
        spec = workload_spec(p.model)
        stems[p] = run_stem(p.phase, p.model_name, spec.task, spec.dataset, start_ms)
    collectors: dict[tuple[RunPlan, str], tuple[subprocess.Popen, Path]] = {}
    workers: dict[tuple[RunPlan, str], tuple[subprocess.Popen, Path]] = {}
    faults: dict[RunPlan, list[tuple[Fault, FaultPlan]]] = {}
    stop_evt = threading.Event()
    errors: list[BaseException] = []
    threads: list[threading.Thread] = []
    anchors: dict[RunPlan, dict] = {}
    results: list[RecordedRun] = []
    quotas: dict[str, float | None] = {}
    try:
        # 1. collectors
        for p in plans:
            for hn in p.hosts:
                d = raw_root / f"{stems[p]}_{hn}"
                if (raw_root / f"{stems[p]}.run.json").exists():
                    raise LabError(f"{stems[p]} was already recorded in {raw_root}")
                if d.exists():
                    shutil.rmtree(d)
                d.parent.mkdir(parents=True, exist_ok=True)
                cmd = collector_command(hosts[hn], d, interval=interval, probes=probes)
                with open(
                    raw_root / f"{stems[p]}_{hn}.collector.log", "wb"
                ) as errf:  # never a pipe: it can fill
                    proc = hosts[hn].popen(cmd, stdout=subprocess.DEVNULL, stderr=errf)
                collectors[(p, hn)] = (proc, d)
        for proc, d in collectors.values():
            _wait_started(d, proc)
        # the run's host configuration (a base CPU quota) once the collectors run (their start-up
        # compiles and imports a lot: under a quota it could take longer than the start timeout)
        for p in plans:
            for hn in p.hosts:
                quotas[hn] = hosts[hn].cpu_quota()
                if p.host_quota is not None:
                    hosts[hn].set_cpu_quota(p.host_quota)
        # whole-run configuration faults go on before the calm period
        for p in plans:
            faults[p] = []
            for fp in p.faults:
                kw: dict = {}
                if fp.fault_type == "storage_read":
                    kw["path"] = read_file
                elif fp.fault_type == "config_irq_imbalance":
                    kw["peers"] = tuple(hosts[h] for h in p.hosts)
                faults[p].append((make_fault(fp.fault_type, hosts[fp.host], fp.magnitude, **kw), fp))
            for f, fp in faults[p]:
                if fp.at_s is None:
                    f.start()
        config = {
            p: {hn: {"cpu_quota": hosts[hn].cpu_quota(), "steering": hosts[hn].steering()} for hn in p.hosts}
            for p in plans
        }  # as the workload will see it
        time.sleep(calm_before_s)
        # 2. workloads
        t_work = time.time()
        for i, p in enumerate(plans):
            port = master_port + i
            for rank, hn in enumerate(p.hosts):
                logf = raw_root / f"{stems[p]}_{hn}.progress.jsonl"
                cmd = [
                    sys.executable,
                    "-m",
                    "reveal_lab.lab._workloads",
                    "--model",
                    p.model,
                    "--phase",
                    p.phase,
                    "--duration",
                    str(p.duration_s),
                    "--seed",
                    str(p.seed * 10 + p.repeat),
                    "--log",
                    str(logf),
                    "--threads",
                    str(_threads(p, hn)),
                ]
                if p.world_size > 1:
                    cmd += [
                        "--rank",
                        str(rank),
                        "--world-size",
                        str(p.world_size),
                        "--master-addr",
                        hosts[p.hosts[0]].address,
                        "--master-port",
                        str(port),
                    ]
                # gloo must use the veth (hostname resolution would pick 127.0.0.1)
                env = {**os.environ, "GLOO_SOCKET_IFNAME": hosts[hn].veth, "OMP_NUM_THREADS": "1"}
                with open(raw_root / f"{stems[p]}_{hn}.workload.log", "wb") as errf:
                    proc = hosts[hn].popen(cmd, stdout=subprocess.PIPE, stderr=errf, env=env)
                workers[(p, hn)] = (proc, logf)
            logs = [workers[(p, hn)][1] for hn in p.hosts]
            anchors[p] = {}
            th = threading.Thread(
                target=_fault_schedule, args=(faults[p], logs, stop_evt, errors, anchors[p]), daemon=True
            )
            th.start()
            threads.append(th)
        # 3. wait
        summaries: dict[tuple[RunPlan, str], dict] = {}
        for key, (proc, _) in workers.items():
            try:
                so, _ = proc.communicate(timeout=key[0].duration_s + 120)
            except subprocess.TimeoutExpired:
                _stop(proc, signal.SIGKILL)
                raise LabError(f"workload {key[0].model} on {key[1]} did not finish") from None
            summary = _summary_line(so)
            if proc.returncode != 0 and summary is None:
                raise LabError(
                    f"workload {key[0].model}/{key[0].phase} on {key[1]} failed "
                    f"({proc.returncode}): "
                    + (raw_root / f"{stems[key[0]]}_{key[1]}.workload.log").read_text(errors="replace")[
                        -2000:
                    ]
                )
            if summary is None:
                raise LabError(f"workload {key[0].model}/{key[0].phase} on {key[1]} printed no summary")
            if proc.returncode != 0:  # it finished its steps, then its teardown failed: keep the run
                log.warning(
                    "workload %s/%s on %s exited %d after its summary (teardown); the run is kept",
                    key[0].model,
                    key[0].phase,
                    key[1],
                    proc.returncode,
                )
                summary["exit_code"] = proc.returncode
            summaries[key] = summary
        for th in threads:
            th.join(timeout=30)
        if errors:
            raise LabError(f"fault injection failed: {errors[0]!r}") from errors[0]
        for p in plans:
            for f, fp in faults[p]:
                if fp.at_s is None:
                    f.stop()
        time.sleep(calm_after_s)
    finally:
        stop_evt.set()
        for fl in faults.values():
            for f, _ in fl:
                if f.started_ms is not None and f.stopped_ms is None:
                    with contextlib.suppress(Exception):
                        f.stop()
        for proc, _ in workers.values():
            _stop(proc, signal.SIGKILL, timeout=5)
        for proc, _ in collectors.values():
            _stop(proc, signal.SIGINT)
        for hn, q in quotas.items():  # the hosts as they were before the run
            with contextlib.suppress(LabError, OSError):
                hosts[hn].set_cpu_quota(q)
    # 4. the raw record: collector directories + run.json (plan, labels, workload summaries)
    for p in plans:
        stem = stems[p]
        labels = []
        for f, fp in faults[p]:
            lab = f.label()
            labels.append({**lab, "scope": "run" if fp.at_s is None else "episode"})
        manifest = {
            "stem": stem,
            "plan": asdict(p),
            "model_name": p.model_name,
            "fault": p.fault_name,
            "hosts": {
                hn: {
                    "collector_dir": collectors[(p, hn)][1].name,
                    "address": hosts[hn].address,
                    "core": hosts[hn].core,
                    "cpu_quota": config[p][hn]["cpu_quota"],
                    "steering": config[p][hn]["steering"],
                    "threads": _threads(p, hn),
                    "collector_rc": collectors[(p, hn)][0].returncode,
                    "workload": summaries.get((p, hn), {}),
                }
                for hn in p.hosts
            },
            "workload_launch_ms": int(t_work * 1000),
            "workload_start_ms": int(anchors[p].get("t0", float("nan")) * 1000)
            if "t0" in anchors[p]
            else None,
            "labels": labels,
        }
        bad = {hn: v["collector_rc"] for hn, v in manifest["hosts"].items() if v["collector_rc"] != 0}
        manifest["ok"] = not bad
        name = f"{stem}.run.json" if not bad else f"{stem}.failed.json"
        (raw_root / name).write_text(json.dumps(manifest, indent=1, default=str))
        if bad:
            logs = {
                hn: (raw_root / f"{stem}_{hn}.collector.log").read_text(errors="replace")[-1500:]
                for hn in bad
            }
            raise LabError(f"{stem}: collector failed on {bad}: {logs}")
        results.append(
            RecordedRun(
                p,
                stem,
                {hn: collectors[(p, hn)][1] for hn in p.hosts},
                [],
                [],
                {hn: summaries.get((p, hn), {}) for hn in p.hosts},
            )
        )
    return results


def record_slot_retry(*args, retries: int = 1, **kw) -> list[RecordedRun]:
    """:func:`record_slot`, once more (a new time stamp, so new names) when a collector failed."""
    for attempt in range(retries + 1):
        try:
            return record_slot(*args, **kw)
        except LabError as exc:
            if attempt == retries or "collector failed" not in str(exc):
                raise
            log.warning("retrying the slot: %s", str(exc)[:500])
            time.sleep(1.5)  # the next attempt gets another start second
    raise AssertionError("unreachable")


def warm_up(hosts: dict[str, LabHost], plans: list[RunPlan], raw: Path, **kw) -> dict | None:
    """Record the warm-up ``plans`` (one slot) into ``raw``; what ran, or why it failed."""
    if not plans:
        return None
    t = time.time()
    try:
        recs = record_slot_retry(hosts, plans, raw, **kw)
    except LabError as exc:
        log.warning("warm-up %s failed (the slot is recorded all the same): %s", plans[0].model_name, exc)
        return {"error": str(exc), "wall_s": round(time.time() - t, 1)}
    log.info("warm-up done in %.0fs: %s", time.time() - t, ", ".join(r.stem for r in recs))
    return {"runs": [r.stem for r in recs], "wall_s": round(time.time() - t, 1)}
