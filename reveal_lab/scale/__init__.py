"""Scale-out: per-run work and cross-run studies over a whole dataset as Dask tasks.

``dask.distributed`` is imported lazily (``pip install 'reveal-lab[scale]'``).

Examples
--------
>>> from reveal_lab.scale import plan_local_cluster
>>> plan_local_cluster(2, memory_limit="1GB").threads_per_worker
1
"""

from reveal_lab.scale._cluster import (
    MIN_MEMORY_LIMIT,
    PATIENCE_ENV,
    PATIENCE_S,
    WORKER_ENVIRON,
    ClusterLost,
    ClusterPlan,
    dashboard_note,
    dask_client,
    patience_s,
    plan_local_cluster,
)
from reveal_lab.scale._engine import (
    LazyRun,
    RunMap,
    dataset_problems,
    detect_runs,
    engine_label,
    granularity_runs,
    lazy_runs,
    load_study_run,
    map_runs,
    read_skipped,
    record_skipped,
    setting_spaces,
    space_file,
    study_refs,
    study_space,
)
from reveal_lab.scale._platforms import PLATFORMS, section_refs, study_platforms
from reveal_lab.scale._scan import INPROCESS, ScanResult, run_refs, scan
from reveal_lab.scale._tasks import (
    TASKS,
    RunOutcome,
    RunRef,
    RunResult,
    detect_task,
    execute,
    load_ref,
    summarize_detection,
    task_times,
)

__all__ = [
    "TASKS",
    "task_times",
    "RunMap",
    "LazyRun",
    "lazy_runs",
    "dataset_problems",
    "detect_runs",
    "granularity_runs",
    "engine_label",
    "load_study_run",
    "map_runs",
    "read_skipped",
    "record_skipped",
    "PLATFORMS",
    "study_platforms",
    "section_refs",
    "study_refs",
    "study_space",
    "setting_spaces",
    "space_file",
    "ClusterPlan",
    "WORKER_ENVIRON",
    "MIN_MEMORY_LIMIT",
    "PATIENCE_S",
    "PATIENCE_ENV",
    "patience_s",
    "ClusterLost",
    "plan_local_cluster",
    "dask_client",
    "dashboard_note",
    "scan",
    "run_refs",
    "ScanResult",
    "INPROCESS",
    "RunRef",
    "RunOutcome",
    "RunResult",
    "detect_task",
    "execute",
    "load_ref",
    "summarize_detection",
]
