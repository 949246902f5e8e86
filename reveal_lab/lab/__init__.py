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

from reveal_lab.lab._faults import FAULT_SUBSYSTEM, make_fault, prepare_read_file
from reveal_lab.lab._hf import ID_COLUMNS as HF_ID_COLUMNS
from reveal_lab.lab._hf import HubError, export_hf, hf_column_name, hub_request_timeouts, push_hf
from reveal_lab.lab._gate import (
    GATE_EXIT_CODE,
    GateRefused,
    LoadGate,
    ProcInfo,
    busiest_others,
    lab_active_tasks,
    lab_cpu_seconds,
    own_load,
    own_load_from_counts,
    read_page_cache_kb,
    read_process_table,
)
from reveal_lab.lab._gpuset import GPU_FAULT_SUBSYSTEMS, build_gpu_host_set, slowdown
from reveal_lab.lab._hostset import (
    HOST_JOBS,
    HostJob,
    HostRecordingPlan,
    build_host_set,
    host_set_plan,
    record_host_recording,
    record_host_set,
)
from reveal_lab.lab._hosts import (
    MAX_HOSTS,
    LabError,
    LabHost,
    bridge_namespace,
    lab_hosts,
    require_root,
    setup_hosts,
    teardown_hosts,
)
from reveal_lab.lab._labels import file_name, run_stem
from reveal_lab.lab._plan import (
    DEFAULT_PLAN,
    PLANS,
    SLOT_OVERHEAD_S,
    V2_HOSTS,
    default_plan,
    describe_plan,
    estimate_seconds,
    get_plan,
    plan_hosts,
    plan_summary,
    smoke_plan,
    v1_plan,
    v2_plan,
)
from reveal_lab.lab._dataset import build_dataset, label_hosts
from reveal_lab.lab._provenance import machine_provenance, recorded_slots
from reveal_lab.lab._record import collector_command, record_slot
from reveal_lab.lab._recorder import record_plans, supersede_runs
from reveal_lab.lab._runplan import WARMUP_DIR, FaultPlan, RecordedRun, RunPlan, warmup_plans, workload_key
from reveal_lab.lab._workloads import WORKLOADS, build_model, run_workload, workload_spec

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
