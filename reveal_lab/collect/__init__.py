"""The collector: host telemetry at 100 ms into a crash-safe run directory.

:func:`collect` runs the hot loop; probes (``reveal_lab.collect.probes``) are
registered by name and group (see :data:`PROBES`, :data:`GROUPS`); the on-disk
format is described in ``FORMAT.md`` and read back by
:func:`reveal_lab.io.read_collector_run`.
"""

from reveal_lab.collect._loop import CollectResult, collect, host_info
from reveal_lab.collect._probe import (
    GROUPS,
    MISSING_INT,
    PROBES,
    Channel,
    Probe,
    ProbeContext,
    ProbeUnavailable,
    register_probe,
    resolve_probes,
    sanitize_instance,
)
from reveal_lab.collect._views import DERIVED as DERIVED_VIEWS
from reveal_lab.collect._views import dataset_view
from reveal_lab.collect._writer import DiskFull

__all__ = [
    "DERIVED_VIEWS",
    "dataset_view",
    "collect",
    "CollectResult",
    "host_info",
    "Channel",
    "Probe",
    "ProbeContext",
    "ProbeUnavailable",
    "register_probe",
    "resolve_probes",
    "sanitize_instance",
    "PROBES",
    "GROUPS",
    "MISSING_INT",
    "DiskFull",
]
