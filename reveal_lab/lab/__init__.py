"""The lab: real ML workloads on namespace "hosts" under injected faults, recorded by the collector.

* :mod:`~reveal_lab.lab._workloads` -- CNN / Transformer / MLP train and infer on the CPU
  (PyTorch, synthetic data), and two-host DDP training over gloo;
* :mod:`~reveal_lab.lab._hosts` -- a host = network namespace + veth (a bridge for three or
  more) + cgroup pinned to a core, its network processing steered to that core;
* :mod:`~reveal_lab.lab._faults` -- packet loss, CPU contention, memory pressure, storage
  read bursts, a CPU-quota configuration difference, with exact start/end times;
* :mod:`~reveal_lab.lab._recorder` -- runs plans under one collector per host
  (:mod:`~reveal_lab.lab._runplan` the plan types, :mod:`~reveal_lab.lab._record` one slot
  recorded) and builds the dataset (:mod:`~reveal_lab.lab._dataset`: public file-name grammar,
  ``meta_lab.csv``, ``labels.csv``; :mod:`~reveal_lab.lab._provenance` its README);
* :mod:`~reveal_lab.lab._hostset` -- a labelled set of host recordings (intermittent jobs
  on this machine, no workload span);
* :mod:`~reveal_lab.lab._gate` -- recording hygiene: the load gate checked before each slot;
* :mod:`~reveal_lab.lab._plan` -- the plans (v2, the default; v1; smoke) and their time estimate.

Recording needs root; reading plans does not (the dataset's tables are read by
:func:`reveal_lab.io.read_meta` and :func:`reveal_lab.io.read_labels`). torch is imported lazily.
"""

from __future__ import annotations

import importlib
from typing import Any

#: where each name lives: (module, its name there). Loaded on first use (PEP 562), so that a
#: process running one module of the lab (the recorder's workload, ``python -m
#: reveal_lab.lab._workloads``: the standard library and torch) does not import the others
#: (polars, the dataset and Hub code)
_WHERE: dict[str, tuple[str, str]] = {
    "FAULT_SUBSYSTEM": ("reveal_lab.lab._faults", "FAULT_SUBSYSTEM"),
    "make_fault": ("reveal_lab.lab._faults", "make_fault"),
    "prepare_read_file": ("reveal_lab.lab._faults", "prepare_read_file"),
    "HF_ID_COLUMNS": ("reveal_lab.lab._hf", "ID_COLUMNS"),
    "HubError": ("reveal_lab.lab._hf", "HubError"),
    "export_hf": ("reveal_lab.lab._hf", "export_hf"),
    "hf_column_name": ("reveal_lab.lab._hf", "hf_column_name"),
    "hub_request_timeouts": ("reveal_lab.lab._hf", "hub_request_timeouts"),
    "push_hf": ("reveal_lab.lab._hf", "push_hf"),
    "GATE_EXIT_CODE": ("reveal_lab.lab._gate", "GATE_EXIT_CODE"),
    "GateRefused": ("reveal_lab.lab._gate", "GateRefused"),
    "LoadGate": ("reveal_lab.lab._gate", "LoadGate"),
    "ProcInfo": ("reveal_lab.lab._gate", "ProcInfo"),
    "busiest_others": ("reveal_lab.lab._gate", "busiest_others"),
    "lab_active_tasks": ("reveal_lab.lab._gate", "lab_active_tasks"),
    "lab_cpu_seconds": ("reveal_lab.lab._gate", "lab_cpu_seconds"),
    "own_load": ("reveal_lab.lab._gate", "own_load"),
    "own_load_from_counts": ("reveal_lab.lab._gate", "own_load_from_counts"),
    "read_page_cache_kb": ("reveal_lab.lab._gate", "read_page_cache_kb"),
    "read_process_table": ("reveal_lab.lab._gate", "read_process_table"),
    "GPU_FAULT_SUBSYSTEMS": ("reveal_lab.lab._gpuset", "GPU_FAULT_SUBSYSTEMS"),
    "build_gpu_host_set": ("reveal_lab.lab._gpuset", "build_gpu_host_set"),
    "slowdown": ("reveal_lab.lab._gpuset", "slowdown"),
    "HOST_JOBS": ("reveal_lab.lab._hostset", "HOST_JOBS"),
    "HostJob": ("reveal_lab.lab._hostset", "HostJob"),
    "HostRecordingPlan": ("reveal_lab.lab._hostset", "HostRecordingPlan"),
    "build_host_set": ("reveal_lab.lab._hostset", "build_host_set"),
    "host_set_plan": ("reveal_lab.lab._hostset", "host_set_plan"),
    "record_host_recording": ("reveal_lab.lab._hostset", "record_host_recording"),
    "record_host_set": ("reveal_lab.lab._hostset", "record_host_set"),
    "MAX_HOSTS": ("reveal_lab.lab._hosts", "MAX_HOSTS"),
    "LabError": ("reveal_lab.lab._hosts", "LabError"),
    "LabHost": ("reveal_lab.lab._hosts", "LabHost"),
    "bridge_namespace": ("reveal_lab.lab._hosts", "bridge_namespace"),
    "lab_hosts": ("reveal_lab.lab._hosts", "lab_hosts"),
    "require_root": ("reveal_lab.lab._hosts", "require_root"),
    "setup_hosts": ("reveal_lab.lab._hosts", "setup_hosts"),
    "teardown_hosts": ("reveal_lab.lab._hosts", "teardown_hosts"),
    "file_name": ("reveal_lab.lab._labels", "file_name"),
    "run_stem": ("reveal_lab.lab._labels", "run_stem"),
    "DEFAULT_PLAN": ("reveal_lab.lab._plan", "DEFAULT_PLAN"),
    "PLANS": ("reveal_lab.lab._plan", "PLANS"),
    "SLOT_OVERHEAD_S": ("reveal_lab.lab._plan", "SLOT_OVERHEAD_S"),
    "V2_HOSTS": ("reveal_lab.lab._plan", "V2_HOSTS"),
    "default_plan": ("reveal_lab.lab._plan", "default_plan"),
    "describe_plan": ("reveal_lab.lab._plan", "describe_plan"),
    "estimate_seconds": ("reveal_lab.lab._plan", "estimate_seconds"),
    "get_plan": ("reveal_lab.lab._plan", "get_plan"),
    "plan_hosts": ("reveal_lab.lab._plan", "plan_hosts"),
    "plan_summary": ("reveal_lab.lab._plan", "plan_summary"),
    "smoke_plan": ("reveal_lab.lab._plan", "smoke_plan"),
    "v1_plan": ("reveal_lab.lab._plan", "v1_plan"),
    "v2_plan": ("reveal_lab.lab._plan", "v2_plan"),
    "build_dataset": ("reveal_lab.lab._dataset", "build_dataset"),
    "label_hosts": ("reveal_lab.lab._dataset", "label_hosts"),
    "machine_provenance": ("reveal_lab.lab._provenance", "machine_provenance"),
    "recorded_slots": ("reveal_lab.lab._provenance", "recorded_slots"),
    "collector_command": ("reveal_lab.lab._record", "collector_command"),
    "record_slot": ("reveal_lab.lab._record", "record_slot"),
    "record_plans": ("reveal_lab.lab._recorder", "record_plans"),
    "supersede_runs": ("reveal_lab.lab._recorder", "supersede_runs"),
    "WARMUP_DIR": ("reveal_lab.lab._runplan", "WARMUP_DIR"),
    "FaultPlan": ("reveal_lab.lab._runplan", "FaultPlan"),
    "RecordedRun": ("reveal_lab.lab._runplan", "RecordedRun"),
    "RunPlan": ("reveal_lab.lab._runplan", "RunPlan"),
    "warmup_plans": ("reveal_lab.lab._runplan", "warmup_plans"),
    "workload_key": ("reveal_lab.lab._runplan", "workload_key"),
    "WORKLOADS": ("reveal_lab.lab._workloads", "WORKLOADS"),
    "build_model": ("reveal_lab.lab._workloads", "build_model"),
    "run_workload": ("reveal_lab.lab._workloads", "run_workload"),
    "workload_spec": ("reveal_lab.lab._workloads", "workload_spec"),
}

__all__ = [
    "GPU_FAULT_SUBSYSTEMS",
    "build_gpu_host_set",
    "slowdown",
    "HOST_JOBS",
    "HostJob",
    "HostRecordingPlan",
    "build_host_set",
    "host_set_plan",
    "record_host_recording",
    "record_host_set",
    "HubError",
    "HF_ID_COLUMNS",
    "export_hf",
    "label_hosts",
    "hf_column_name",
    "push_hf",
    "hub_request_timeouts",
    "GATE_EXIT_CODE",
    "GateRefused",
    "LoadGate",
    "ProcInfo",
    "busiest_others",
    "lab_active_tasks",
    "lab_cpu_seconds",
    "own_load",
    "own_load_from_counts",
    "read_page_cache_kb",
    "read_process_table",
    "FAULT_SUBSYSTEM",
    "DEFAULT_PLAN",
    "PLANS",
    "SLOT_OVERHEAD_S",
    "V2_HOSTS",
    "estimate_seconds",
    "plan_hosts",
    "plan_summary",
    "v1_plan",
    "v2_plan",
    "WORKLOADS",
    "FaultPlan",
    "LabError",
    "MAX_HOSTS",
    "bridge_namespace",
    "LabHost",
    "RecordedRun",
    "RunPlan",
    "build_dataset",
    "build_model",
    "collector_command",
    "default_plan",
    "describe_plan",
    "file_name",
    "get_plan",
    "lab_hosts",
    "machine_provenance",
    "make_fault",
    "prepare_read_file",
    "record_plans",
    "record_slot",
    "WARMUP_DIR",
    "warmup_plans",
    "recorded_slots",
    "supersede_runs",
    "workload_key",
    "require_root",
    "run_stem",
    "run_workload",
    "setup_hosts",
    "smoke_plan",
    "teardown_hosts",
    "workload_spec",
]


def __getattr__(name: str) -> Any:
    """The exported ``name``, its module imported on first use."""
    try:
        module, attr = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
