"""What the recorder runs: a run's plan (:class:`RunPlan`, its faults :class:`FaultPlan`), what a
recorded run returns (:class:`RecordedRun`), and the warm-up plans run before a session."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from reveal_lab.lab._faults import RUN_ONLY_FAULTS
from reveal_lab.lab._workloads import workload_spec

__all__ = [
    "FaultPlan",
    "RunPlan",
    "RecordedRun",
    "WARMUP_DIR",
    "SUPERSEDED_DIR",
    "WARMUP_CALM_S",
    "workload_key",
    "warmup_plans",
]


@dataclass(frozen=True)
class FaultPlan:
    """A fault on ``host``: from ``at_s`` for ``for_s`` seconds after the workload starts.

    ``at_s=None`` means the whole run (a configuration difference such as a CPU quota).
    """

    fault_type: str
    host: str
    magnitude: float | None = None
    at_s: float | None = None
    for_s: float | None = None


@dataclass(frozen=True)
class RunPlan:
    """One run: ``model`` x ``phase`` on ``hosts`` (several hosts: DDP training over gloo).

    ``host_quota``: every host of the run limited to this share of a core for the run
    (so that DDP ranks on a 2-core machine leave headroom); ``None``: no limit.
    ``case``: the case study (before/after pair) the run belongs to, e.g. ``irq:after``.
    """

    model: str
    phase: str
    hosts: tuple[str, ...] = ("labA",)
    duration_s: float = 40.0
    faults: tuple[FaultPlan, ...] = ()
    repeat: int = 0
    seed: int = 0
    host_quota: float | None = None
    case: str = ""

    @property
    def world_size(self) -> int:
        return len(self.hosts)

    @property
    def model_name(self) -> str:
        """The ``{MODEL}`` of the file name: ``DDP`` prefixed for distributed runs."""
        return f"DDP{self.model}" if self.world_size > 1 else self.model

    @property
    def fault_name(self) -> str:
        if not self.faults:
            return "none"
        parts = []
        for f in self.faults:
            mag = "" if f.magnitude is None else f"@{f.magnitude:g}"
            if f.fault_type + mag not in parts:
                parts.append(f.fault_type + mag)
        return "+".join(parts)

    def validate(self) -> None:
        workload_spec(self.model)
        if self.phase not in ("train", "infer"):
            raise ValueError(f"phase must be train or infer, got {self.phase!r}")
        if self.world_size > 1 and self.phase != "train":
            raise ValueError("two-host runs are DDP training runs")
        if self.host_quota is not None and not 0 < self.host_quota <= 64:
            raise ValueError(f"host_quota must be a positive share of cores, got {self.host_quota}")
        for f in self.faults:
            if f.host not in self.hosts:
                raise ValueError(f"fault on {f.host} but the run uses {self.hosts}")
            if f.fault_type in RUN_ONLY_FAULTS and f.at_s is not None:
                raise ValueError(f"{f.fault_type} is a whole-run configuration: at_s and for_s must be None")
            if (f.at_s is None) != (f.for_s is None):
                raise ValueError("a fault needs both at_s and for_s, or neither (whole run)")
            if f.at_s is not None and f.at_s + f.for_s >= self.duration_s:
                raise ValueError(f"fault {f} does not end before the workload ({self.duration_s}s)")


@dataclass
class RecordedRun:
    plan: RunPlan
    stem: str
    files: dict[str, Path]  #: host -> parquet
    meta_rows: list[dict]
    label_rows: list[dict]
    workload: dict[str, dict] = field(default_factory=dict)  #: host -> workload summary


#: where :func:`record_plans` puts the discarded warm-up runs (inside the raw folder, out of
#: :func:`build_dataset`'s reach: it reads ``raw/*.run.json`` only)
WARMUP_DIR = "warmup"


#: where :func:`record_plans` moves the raw files of a slot's earlier recording when the slot
#: is recorded again (kept, out of :func:`build_dataset`'s reach)
SUPERSEDED_DIR = "superseded"


#: calm before and after a warm-up run (it is not analysed: it only has to run the workload)
WARMUP_CALM_S = 0.5


def workload_key(p: RunPlan) -> tuple:
    """What one warm-up run stands for: the workload on its hosts under the run's base quota."""
    return (p.model, p.phase, p.hosts, p.host_quota)


def warmup_plans(slot: Sequence[RunPlan], warmup_s: float, seen: set) -> list[RunPlan]:
    """Fault-free warm-up runs of ``warmup_s`` seconds for the plans of ``slot`` whose
    workload (:func:`workload_key`) is not in ``seen`` yet; ``seen`` is updated. None when
    ``warmup_s`` is 0.

    The first run of each workload in a recording session meets the machine in another
    state than its later repeats (on the v2 recording: twice the page cache, and 17 % of
    its fault-free windows flagged against 0.13 % for repeats 1-4), so a discarded run of
    the same workload on the same hosts goes first.

    >>> a = RunPlan("MLP", "train", duration_s=9, faults=(FaultPlan("cpu_contention", "labA", 1, 2, 2),))
    >>> seen = set()
    >>> [(w.model, w.faults, w.duration_s, w.case) for w in warmup_plans([a], 5.0, seen)]
    [('MLP', (), 5.0, 'warmup')]
    >>> warmup_plans([a], 5.0, seen), warmup_plans([RunPlan("CNN", "train")], 0.0, seen)
    ([], [])
    """
    if warmup_s <= 0:
        return []
    out = []
    for p in slot:
        k = workload_key(p)
        if k not in seen:
            seen.add(k)
            out.append(replace(p, duration_s=float(warmup_s), faults=(), case="warmup"))
    return out
