"""The collector: host telemetry at 100 ms into a crash-safe run directory.

:func:`collect` runs the hot loop; probes (``reveal_lab.collect.probes``) are
listed once in :data:`ALL_PROBES` and selected by name and group (:data:`PROBES`,
:data:`GROUPS`, :func:`resolve_probes`); :func:`write_proc_tree` writes a synthetic host of
any number of cores for them to read (``proc_root``), :class:`ProcTreeMover` moves its
counters as a host's move; the on-disk
format is described in ``FORMAT.md`` and read back by
:func:`reveal_lab.io.read_collector_run`. Collecting needs numpy, numba and pyarrow, not polars
(a GPU machine lent without this project's environment runs it): the views over a run
(:data:`DERIVED_VIEWS`, :func:`dataset_view`) load polars when first asked for.
"""

from reveal_lab.collect._collect import CollectOptions, CollectResult, collect, host_info
from reveal_lab.collect._probe import (
    GROUPS,
    MISSING_INT,
    Channel,
    Probe,
    ProbeContext,
    ProbeUnavailable,
    sanitize_instance,
)
from reveal_lab.collect._proctree import ROW_CHANGE, ProcTreeMover, write_proc_tree
from reveal_lab.collect._registry import PROBES, probe_table, resolve_probes
from reveal_lab.collect.probes import ALL_PROBES
from reveal_lab.collect._writer import DiskFull

__all__ = [
    "DERIVED_VIEWS",
    "dataset_view",
    "collect",
    "CollectOptions",
    "CollectResult",
    "host_info",
    "Channel",
    "Probe",
    "ProbeContext",
    "ProbeUnavailable",
    "probe_table",
    "ALL_PROBES",
    "resolve_probes",
    "sanitize_instance",
    "PROBES",
    "GROUPS",
    "MISSING_INT",
    "DiskFull",
    "write_proc_tree",
    "ProcTreeMover",
    "ROW_CHANGE",
]


def __getattr__(name: str):  # noqa: ANN202 - the lazily loaded views (module docstring)
    if name in ("DERIVED_VIEWS", "dataset_view"):
        from reveal_lab.collect import _views

        return _views.DERIVED if name == "DERIVED_VIEWS" else _views.dataset_view
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
