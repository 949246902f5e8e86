"""The recorder: run workloads on lab hosts under a collector each, inject faults, write the dataset.

One :class:`RunPlan` is one run of a workload on one host (or a two-host DDP run). The
recorder, for each *slot* (plans on disjoint hosts that run at the same time):

1. starts one collector per host inside the host (``reveal-lab collect --host labX``,
   in the host's namespace and cgroup, so it shares the host's core like a real agent);
2. waits ``calm_before_s``, starts the workload processes (DDP: rank 0 on the first host,
   ``MASTER_ADDR`` = its veth address);
3. starts and stops each planned fault at its offset, recording wall-clock ms;
4. waits for the workload, lets ``calm_after_s`` pass, stops the collectors (SIGINT);
5. reads every collector directory back with
   :func:`reveal_lab.io.read_collector_run` (``view="dataset"``), writes
   ``{train,infer}_separated/<public-grammar name>.parquet`` and returns the meta rows and
   ground-truth label rows.

:func:`record_plans` runs many slots on one set of hosts and writes ``meta_lab.csv``,
``labels.csv`` and ``recording.json`` (provenance) beside the Parquet files.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import shutil
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from reveal_lab.io import ms_to_stamp
from reveal_lab.lab._faults import now_ms, prepare_read_file
from reveal_lab.lab._gate import GateRefused, LoadGate, lab_active_tasks, lab_cpu_seconds
from reveal_lab.lab._hosts import LabError, lab_hosts
from reveal_lab.lab._provenance import machine_provenance, recorded_slots
from reveal_lab.lab._record import record_slot_retry, warm_up
from reveal_lab.lab._runplan import (
    SUPERSEDED_DIR,
    WARMUP_CALM_S,
    WARMUP_DIR,
    RecordedRun,
    RunPlan,
    warmup_plans,
)

__all__ = ["record_plans", "supersede_runs"]

log = logging.getLogger(__name__)


def supersede_runs(raw_root: str | Path, stems: Sequence[str]) -> list[str]:
    """Move every raw file of ``stems`` (``<stem>.run.json``, ``<stem>_<host>`` collector
    folders and logs) into ``raw_root/superseded/``: kept, no longer built into the dataset.
    Returns the names moved."""
    raw_root = Path(raw_root)
    dest = raw_root / SUPERSEDED_DIR
    moved = []
    for stem in stems:
        for f in sorted(raw_root.glob(f"{stem}[._]*")):
            dest.mkdir(exist_ok=True)
            shutil.move(str(f), str(dest / f.name))
            moved.append(f.name)
    return moved


def _count_tasks(gate: LoadGate, stop: threading.Event, every_s: float = 1.0) -> None:
    """Sample the lab's runnable + uninterruptible tasks for the gate until ``stop`` is set."""
    while not stop.wait(every_s):
        with contextlib.suppress(Exception):  # a sampling hiccup must not end the recording
            gate.sample_tasks()


def record_plans(
    slots: Sequence[Sequence[RunPlan]],
    raw_dir: str | Path,
    *,
    host_names: Sequence[str] = ("labA", "labB"),
    subnet: str = "10.77.0",
    interval: str = "100ms",
    probes: str | None = None,
    read_file: str = "/var/tmp/reveal_lab/readburst.bin",
    read_file_mib: int = 512,
    calm_before_s: float = 3.0,
    calm_after_s: float = 2.0,
    on_slot: Callable[[int, list[RecordedRun]], None] | None = None,
    gate: LoadGate | None = None,
    numbers: Sequence[int] | None = None,
    warmup_s: float = 0.0,
    note: str | None = None,
) -> dict:
    """Record every slot on one set of lab hosts into ``raw_dir`` (see :func:`build_dataset`).

    Before each slot ``gate`` (:class:`~reveal_lab.lab._gate.LoadGate`) measures the
    1-minute load average less the lab's own share and waits while it is above its
    threshold; it raises :class:`~reveal_lab.lab._gate.GateRefused` (after logging the
    reading) when the machine stays busy. Default: measure and log, never wait. Each
    slot's reading (load, the lab's share, the busiest other processes) goes into the
    slot's entry of ``recording.json``. ``numbers``: the slots' numbers in the full plan
    (for the log; default 0, 1, ...). ``warmup_s`` > 0: before the first slot of each
    workload (:func:`workload_key`) in this session, a fault-free run of that many seconds
    on the same hosts (:func:`warmup_plans`), kept in ``raw_dir/warmup/`` and left out of
    the dataset; the slot's entry says which (``warmup``). A warm-up that fails is logged
    and the slot is recorded all the same. With ``gate.settle_s`` > 0, the session's first
    slot also waits until the page cache has stopped moving (:meth:`LoadGate.settle`); the
    reading is the session's ``settle``. A slot recorded before (an earlier session of the
    same ``raw_dir``) is replaced once it records again: the earlier runs' raw files move to
    ``raw_dir/superseded/`` (:func:`supersede_runs`) and the slot's entry names them
    (``supersedes``). ``note``: why this session was recorded (kept in its provenance and
    the dataset README).

    Appends this session's provenance to ``raw_dir/recording.json`` and returns it. One long
    function: the hosts it creates live in one ``with lab_hosts(...)`` block, removed whatever a
    slot does.
    """
    gate = gate if gate is not None else LoadGate(gate=None)
    numbers = list(range(len(slots))) if numbers is None else list(numbers)
    if len(numbers) != len(slots):
        raise ValueError(f"{len(numbers)} slot numbers for {len(slots)} slots")
    raw_root = Path(raw_dir)
    raw_root.mkdir(parents=True, exist_ok=True)
    if any(fp.fault_type == "storage_read" for s in slots for p in s for fp in p.faults):
        prepare_read_file(read_file, read_file_mib)
    slot_log: list[dict] = []
    prov = {
        "started": ms_to_stamp(now_ms()),
        "machine": machine_provenance(),
        "interval": interval,
        "probes": probes or "all",
        "calm_before_s": calm_before_s,
        "calm_after_s": calm_after_s,
        "warmup_s": warmup_s,
        "load_gate": gate.gate,
        "gate_max_wait_s": gate.max_wait_s,
        "settle_s": gate.settle_s,
        "settle_mb_s": gate.settle_mb_s if gate.settle_s > 0 else None,
        "argv": sys.argv,
        **({"note": note} if note else {}),
        "slots": slot_log,
    }
    rec_path = raw_root / "recording.json"
    sessions = json.loads(rec_path.read_text())["sessions"] if rec_path.exists() else []

    def save() -> None:
        rec_path.write_text(json.dumps({"sessions": [*sessions, prov]}, indent=1, default=str))

    with lab_hosts(host_names, subnet=subnet) as hs:
        hosts = {h.name: h for h in hs}
        prov["hosts"] = [
            {
                "name": h.name,
                "address": h.address,
                "core": h.core,
                "cgroups": {k: str(v) for k, v in h.cgroups.items()},
                "bridge_namespace": h.bridge_ns,
                "steering": h.steering(),
            }
            for h in hs
        ]
        if gate.own_cpu is lab_cpu_seconds:  # the lab = these hosts' cgroups + the recorder
            gate.own_cpu = functools.partial(lab_cpu_seconds, [h.cgroup_path for h in hs])
        if gate.own_tasks is None:
            gate.own_tasks = functools.partial(lab_active_tasks, [h.cgroup_path for h in hs])
        gate.note()
        warmed: set = set()
        for k, (i, slot) in enumerate(zip(numbers, slots, strict=True)):
            try:
                if k == 0 and gate.settle_s > 0:
                    prov["settle"] = gate.settle()
                    log.info("page cache settled: %s", prov["settle"])
                reading = gate.wait()
            except GateRefused as exc:
                log.error("slot %d not recorded: %s", i, exc)
                slot_log.append({"slot": i, "refused": str(exc), "gate_reading": exc.reading})
                prov["finished"] = ms_to_stamp(now_ms())
                save()
                raise
            collect_kw = {"interval": interval, "probes": probes, "read_file": read_file}
            warm_log = warm_up(
                hosts,
                warmup_plans(slot, warmup_s, warmed),
                raw_root / WARMUP_DIR,
                calm_before_s=WARMUP_CALM_S,
                calm_after_s=WARMUP_CALM_S,
                master_port=29505 + 10 * (k % 50),
                **collect_kw,
            )
            load_before = open("/proc/loadavg").read().split()[:3]
            t = time.time()
            counting = threading.Event()
            counter = threading.Thread(target=_count_tasks, args=(gate, counting), daemon=True)
            counter.start()
            try:
                recs = record_slot_retry(
                    hosts,
                    slot,
                    raw_root,
                    calm_before_s=calm_before_s,
                    calm_after_s=calm_after_s,
                    master_port=29500 + 10 * (k % 50),
                    **collect_kw,
                )
            except LabError as exc:
                counting.set()
                counter.join(timeout=10)
                gate.note()
                log.error("slot %d failed: %s", i, exc)
                slot_log.append(
                    {
                        "slot": i,
                        "error": str(exc),
                        "gate_reading": reading,
                        "plans": [asdict(p) for p in slot],
                        **({"warmup": warm_log} if warm_log else {}),
                    }
                )
                save()
                continue
            finally:
                counting.set()
                counter.join(timeout=10)
            gate.note()
            earlier = [st for st in recorded_slots(sessions).get(i, []) if st not in {r.stem for r in recs}]
            if earlier:
                log.info("slot %d recorded again: %s moved to %s/", i, earlier, SUPERSEDED_DIR)
                supersede_runs(raw_root, earlier)
            slot_log.append(
                {
                    "slot": i,
                    "runs": [r.stem for r in recs],
                    **({"supersedes": earlier} if earlier else {}),
                    "wall_s": round(time.time() - t, 1),
                    "loadavg_before": load_before,
                    "loadavg_after": open("/proc/loadavg").read().split()[:3],
                    "gate_reading": reading,
                    "top_processes_before": [
                        f"{p['cores'] * 100:.0f}% {p['comm']} ({p['pid']})"
                        for p in reading["top_other_processes"]
                    ],
                    **({"warmup": warm_log} if warm_log else {}),
                }
            )
            log.info(
                "slot %d (%d/%d) done in %.0fs: %s",
                i,
                k + 1,
                len(slots),
                time.time() - t,
                ", ".join(f"{r.stem} [{r.plan.fault_name}]" for r in recs),
            )
            prov["finished"] = ms_to_stamp(now_ms())
            save()
            if on_slot:
                on_slot(i, recs)
    return prov
