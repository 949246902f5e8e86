"""Recording plans: which runs the bundled lab dataset holds, slot by slot.

A plan is a list of *slots*; the plans of one slot run at the same time on disjoint hosts.
The default plan records every run alone (one run per slot): a fault's effects, and a
neighbour run's load, reach the global ``/proc`` files every host's collector reads, so a
concurrent run would carry unlabelled effects. Single-host runs all use ``labA`` (core 0),
so a faulted run and its workload's baseline runs share host, core and column names.

``default_plan()`` is what ``data/lab`` was recorded with; ``smoke_plan()`` is one short
run with one fault (what the ``root`` test re-records).
"""

from __future__ import annotations

from collections.abc import Sequence

from reveal_lab.lab._recorder import FaultPlan, RunPlan

__all__ = ["default_plan", "smoke_plan", "PLANS", "get_plan", "describe_plan"]

SINGLE = ("CNN", "Transformer", "MLP")


def _two_episodes(fault: str, host: str, magnitude: float | None, duration: float, length: float) -> tuple:
    """Two episodes of ``length`` s: one at ~1/4 of the run, one at ~2/3, calm between and around."""
    a = round(duration * 0.22, 1)
    b = round(duration * 0.64, 1)
    return (FaultPlan(fault, host, magnitude, a, length), FaultPlan(fault, host, magnitude, b, length))


def default_plan(duration_s: float = 40.0, repeats: int = 3, episode_s: float = 7.0) -> list[list[RunPlan]]:
    """The bundled dataset's plan (40 slots, about 45 minutes on a 2-core machine).

    * baselines on ``labA``: CNN/Transformer/MLP x train/infer x ``repeats``;
    * single-host faults on ``labA``, two episodes each: CPU contention, memory pressure,
      storage read bursts, each on three workloads;
    * two-host DDP CNN training (gloo over the veth): ``repeats`` baselines, packet loss of
      0.1 %, 0.2 % and 1 % on ``labB`` (two runs each, two episodes per run) and two runs
      with ``labB`` limited to half a core and two to a tenth of a core (cross-host
      configuration difference).
    """
    d, e = duration_s, episode_s
    base = [
        RunPlan(m, ph, ("labA",), d, (), r)
        for r in range(repeats)
        for m in SINGLE
        for ph in ("train", "infer")
    ]
    slots: list[list[RunPlan]] = [[b] for b in base]
    faulted = {
        "cpu_contention": (("CNN", "train"), ("Transformer", "train"), ("MLP", "infer")),
        "memory_pressure": (("CNN", "train"), ("MLP", "train"), ("Transformer", "infer")),
        "storage_read": (("CNN", "infer"), ("Transformer", "train"), ("MLP", "train")),
    }
    mags = {"cpu_contention": 1.0, "memory_pressure": 1024.0, "storage_read": 512.0}
    for fault, runs in faulted.items():
        for k, (m, ph) in enumerate(runs):
            slots.append(
                [RunPlan(m, ph, ("labA",), d, _two_episodes(fault, "labA", mags[fault], d, e), k, seed=1)]
            )
    ab = ("labA", "labB")
    for r in range(repeats):
        slots.append([RunPlan("CNN", "train", ab, d, (), r)])
    for k, p in enumerate((0.001, 0.002, 0.01, 0.001, 0.002, 0.01)):
        slots.append(
            [RunPlan("CNN", "train", ab, d, _two_episodes("packet_loss", "labB", p, d, e), k // 3, seed=2)]
        )
    for r in range(2):
        slots.append(
            [RunPlan("CNN", "train", ab, d, (FaultPlan("config_cpu_quota", "labB", 0.5),), r, seed=3)]
        )
    # on a loaded machine a host gets well under half a core, so 0.5 may never bind: also 0.1
    for r in range(2):
        slots.append(
            [RunPlan("CNN", "train", ab, d, (FaultPlan("config_cpu_quota", "labB", 0.1),), r, seed=4)]
        )
    return slots


def smoke_plan(duration_s: float = 8.0) -> list[list[RunPlan]]:
    """One short MLP training run on ``labA`` with a 2 s CPU-contention episode."""
    return [
        [
            RunPlan(
                "MLP",
                "train",
                ("labA",),
                duration_s,
                (FaultPlan("cpu_contention", "labA", 1.0, round(duration_s * 0.35, 1), 2.0),),
                0,
                seed=9,
            )
        ]
    ]


PLANS = {"default": default_plan, "smoke": smoke_plan}


def get_plan(name: str, **kw) -> list[list[RunPlan]]:
    try:
        return PLANS[name](**kw)
    except KeyError:
        raise ValueError(f"unknown plan {name!r}; expected one of {sorted(PLANS)}") from None


def describe_plan(slots: list[list[RunPlan]], numbers: Sequence[int] | None = None) -> list[str]:
    """One line per slot (for ``reveal-lab record --dry-run``); ``numbers``: the slots'
    numbers in the full plan when ``slots`` is a selection (default 0, 1, ...).

    >>> describe_plan(smoke_plan())[0]
    'slot 0: MLP/train on labA 8s [cpu_contention@1]'
    >>> describe_plan(default_plan()[5:6], numbers=[5])[0][:7]
    'slot 5:'
    """
    if numbers is None:
        numbers = range(len(slots))
    if len(numbers) != len(slots):
        raise ValueError(f"{len(numbers)} slot numbers for {len(slots)} slots")
    out = []
    for i, slot in zip(numbers, slots, strict=True):
        runs = " | ".join(
            f"{p.model_name}/{p.phase} on {'+'.join(p.hosts)} {p.duration_s:g}s [{p.fault_name}]"
            for p in slot
        )
        out.append(f"slot {i}: {runs}")
    return out
