"""Recording plans: which runs the bundled lab dataset holds, slot by slot.

A plan is a list of *slots*; the plans of one slot run at the same time on disjoint hosts.
The plans record every run alone (one run per slot): a fault's effects, and a
neighbour run's load, reach the global ``/proc`` files every host's collector reads, so a
concurrent run would carry unlabelled effects. Single-host runs all use ``labA`` (core 0),
so a faulted run and its workload's baseline runs share host, core and column names.

``v2_plan()`` (the default, ``default_plan``) is the plan of the second lab dataset: 90 s
runs, 5 fault-free repeats per workload, graded faults, DDP on three hosts and the
before/after case studies; ``v1_plan()`` is what the first ``data/lab`` was recorded
with; ``smoke_plan()`` is one short run with one fault. :func:`plan_summary` counts what a
plan holds and estimates how long it takes to record (``reveal-lab record --dry-run``).
"""

from __future__ import annotations

from collections.abc import Sequence

from reveal_lab.lab._runplan import WARMUP_CALM_S, FaultPlan, RunPlan, warmup_plans

__all__ = [
    "default_plan",
    "v1_plan",
    "v2_plan",
    "smoke_plan",
    "PLANS",
    "DEFAULT_PLAN",
    "V2_HOSTS",
    "SLOT_OVERHEAD_S",
    "get_plan",
    "describe_plan",
    "plan_hosts",
    "plan_summary",
    "estimate_seconds",
]

SINGLE = ("CNN", "Transformer", "MLP")
#: the v2 lab: three hosts (labA and labC share core 0, labB has core 1 on a 2-core machine)
V2_HOSTS = ("labA", "labB", "labC")
#: each DDP host's CPU quota in v2 (cores): 3 ranks use at most 1.2 of 2 cores, leaving headroom
V2_DDP_QUOTA = 0.4
#: seconds a slot takes beyond its workload and calm periods: collectors' start and stop,
#: interpreter and torch import, DDP set-up. An estimate: the v1 recording took a median 16 s
#: per slot beyond workload and calm, at a 1-minute load average of ~8 on 2 cores.
SLOT_OVERHEAD_S = 15.0


def _two_episodes(fault: str, host: str, magnitude: float | None, duration: float, length: float) -> tuple:
    """Two episodes of ``length`` s: one at ~1/4 of the run, one at ~2/3, calm between and around."""
    a = round(duration * 0.22, 1)
    b = round(duration * 0.64, 1)
    return (FaultPlan(fault, host, magnitude, a, length), FaultPlan(fault, host, magnitude, b, length))


def v1_plan(duration_s: float = 40.0, repeats: int = 3, episode_s: float = 7.0) -> list[list[RunPlan]]:
    """The first lab dataset's plan (40 slots, about 45 minutes on a 2-core machine).

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
    mags = {"cpu_contention": 1.0, "memory_pressure": 1024.0, "storage_read": 1.0}
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


def _episodes(
    fault: str, host: str, magnitudes: Sequence[float], duration: float, length: float
) -> tuple[FaultPlan, ...]:
    """Episodes of ``length`` s, one per magnitude, evenly spaced with equal calm before,
    between and after them (a 90 s run, three 10 s episodes: at 15, 40 and 65 s)."""
    n = len(magnitudes)
    gap = (duration - n * length) / (n + 1)
    return tuple(
        FaultPlan(fault, host, m, round(gap + k * (gap + length), 1), length)
        for k, m in enumerate(magnitudes)
    )


#: v2 magnitudes per episode fault: two or three grades each
V2_MAGNITUDES: dict[str, tuple[float, ...]] = {
    "cpu_contention": (1.0, 2.0),  # busy processes on the workload's core
    "memory_pressure": (512.0, 2048.0),  # MiB held (and MiB/8 written + fsynced per loop)
    "storage_read": (0.5, 1.0),  # O_DIRECT read duty cycle
    "packet_loss": (0.001, 0.002, 0.01),  # drop probability
}


def v2_plan(
    duration_s: float = 90.0,
    repeats: int = 5,
    episode_s: float = 10.0,
    case_runs: int = 3,
    quota_runs: int = 2,
) -> list[list[RunPlan]]:
    """The second lab dataset's plan: 52 slots of 90 s (about 97 minutes, see :func:`plan_summary`).

    * fault-free: CNN/Transformer/MLP x train/infer on ``labA`` and DDP CNN training on
      ``labA``+``labB``+``labC`` (every host at a CPU quota of 0.4 core), ``repeats`` each;
    * single-host faults on ``labA``, two runs per fault type, each run three 10 s episodes
      alternating the two magnitudes (low-high-low, high-low-high: three episodes per
      magnitude), calm of ~15 s before the first and after the last: CPU contention (1 and 2
      busy processes), memory pressure (512 and 2048 MiB), storage read bursts (duty cycle
      0.5 and 1); the six runs cover the six workloads once;
    * case studies on DDP (``case`` = ``<study>:after``; the fault-free DDP runs are every
      study's ``before`` side, ``ddp:before``), ``case_runs`` runs each: packet loss on
      ``labB`` (three episodes per run, 0.1 / 0.2 / 1 % in rotating order); IRQ/softirq
      imbalance (every host's network processing steered to core 0, against each on its
      own core); a thread-count difference (``labB``'s rank runs 4 intra-op threads);
    * ``quota_runs`` DDP runs with ``labB`` at a CPU quota of 0.1 core instead of 0.4 (the v1
      cross-host configuration difference, kept for the evaluation and the cross-host study).

    Runs are interleaved: each repeat's seven baselines are followed by a share of the
    faulted runs, so a part recorded with ``--slots`` mixes both and slow drift of the
    machine does not line up with the fault/no-fault split.
    """
    d = duration_s
    hosts3 = V2_HOSTS
    baselines = [
        [
            *(RunPlan(m, ph, ("labA",), d, (), r, case="") for m in SINGLE for ph in ("train", "infer")),
            RunPlan("CNN", "train", hosts3, d, (), r, host_quota=V2_DDP_QUOTA, case="ddp:before"),
        ]
        for r in range(repeats)
    ]
    faulted: list[RunPlan] = []
    singles = {
        "cpu_contention": (("CNN", "train"), ("MLP", "infer")),
        "memory_pressure": (("Transformer", "infer"), ("MLP", "train")),
        "storage_read": (("CNN", "infer"), ("Transformer", "train")),
    }
    for seed, (fault, runs) in enumerate(singles.items(), start=1):
        lo, hi = V2_MAGNITUDES[fault]
        for k, (m, ph) in enumerate(runs):
            mags = (lo, hi, lo) if k % 2 == 0 else (hi, lo, hi)
            eps = _episodes(fault, "labA", mags, d, episode_s)
            faulted.append(RunPlan(m, ph, ("labA",), d, eps, k, seed))
    loss = V2_MAGNITUDES["packet_loss"]
    for k in range(case_runs):
        mags = loss[k % 3 :] + loss[: k % 3]
        faulted.append(
            RunPlan(
                "CNN",
                "train",
                hosts3,
                d,
                _episodes("packet_loss", "labB", mags, d, episode_s),
                k,
                seed=5,
                host_quota=V2_DDP_QUOTA,
                case="loss:after",
            )
        )
    for k in range(case_runs):
        faulted.append(
            RunPlan(
                "CNN",
                "train",
                hosts3,
                d,
                (FaultPlan("config_irq_imbalance", "labA", 1.0),),
                k,
                seed=6,
                host_quota=V2_DDP_QUOTA,
                case="irq:after",
            )
        )
        faulted.append(
            RunPlan(
                "CNN",
                "train",
                hosts3,
                d,
                (FaultPlan("config_threads", "labB", 4.0),),
                k,
                seed=7,
                host_quota=V2_DDP_QUOTA,
                case="threads:after",
            )
        )
    for k in range(quota_runs):
        faulted.append(
            RunPlan(
                "CNN",
                "train",
                hosts3,
                d,
                (FaultPlan("config_cpu_quota", "labB", 0.1),),
                k,
                seed=8,
                host_quota=V2_DDP_QUOTA,
            )
        )
    slots: list[list[RunPlan]] = []
    per = -(-len(faulted) // max(repeats, 1))  # faulted runs after each repeat block
    for r, block in enumerate(baselines):
        slots += [[p] for p in block]
        slots += [[p] for p in faulted[r * per : (r + 1) * per]]
    slots += [[p] for p in faulted[len(baselines) * per :]]
    return slots


default_plan = v2_plan


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


PLANS = {"v2": v2_plan, "v1": v1_plan, "smoke": smoke_plan}
#: what ``reveal-lab record`` records without ``--plan``
DEFAULT_PLAN = "v2"


def get_plan(name: str, **kw) -> list[list[RunPlan]]:
    """A plan by name (``v2``, ``v1``, ``smoke``; ``default`` = :data:`DEFAULT_PLAN`)."""
    name = DEFAULT_PLAN if name == "default" else name
    try:
        fn = PLANS[name]
    except KeyError:
        raise ValueError(f"unknown plan {name!r}; expected one of {sorted(PLANS)} or 'default'") from None
    return fn(**kw)


def plan_hosts(slots: Sequence[Sequence[RunPlan]]) -> tuple[str, ...]:
    """The hosts a plan needs, in a stable order (``labA``, ``labB``, ... as first used)."""
    out: list[str] = []
    for slot in slots:
        for p in slot:
            out += [h for h in p.hosts if h not in out]
    return tuple(sorted(out))


def estimate_seconds(
    slots: Sequence[Sequence[RunPlan]],
    *,
    calm_before_s: float = 3.0,
    calm_after_s: float = 2.0,
    overhead_s: float = SLOT_OVERHEAD_S,
    gate_sample_s: float = 2.0,
    warmup_s: float = 0.0,
) -> float:
    """Wall-clock seconds to record ``slots`` on a quiet machine (no waiting at the load gate):
    per slot its longest run, the calm periods, :data:`SLOT_OVERHEAD_S` and the gate's sample;
    with ``warmup_s``, each slot that warms a workload up (:func:`~reveal_lab.lab.warmup_plans`)
    adds ``warmup_s``, the warm-up's short calm periods and the overhead once more.

    >>> estimate_seconds(smoke_plan()), estimate_seconds(smoke_plan() * 2, warmup_s=10)
    (30.0, 86.0)
    """
    per_slot = calm_before_s + calm_after_s + overhead_s + gate_sample_s
    per_warm = warmup_s + 2 * WARMUP_CALM_S + overhead_s
    warm = sum(per_warm for w in _warmups(slots, warmup_s) if w)
    return float(sum(max(p.duration_s for p in slot) + per_slot for slot in slots) + warm)


def _warmups(slots: Sequence[Sequence[RunPlan]], warmup_s: float) -> list[list[RunPlan]]:
    """The warm-up runs recorded before each slot (:func:`~reveal_lab.lab.warmup_plans`)."""
    seen: set = set()
    return [warmup_plans(slot, warmup_s, seen) for slot in slots]


def plan_summary(slots: Sequence[Sequence[RunPlan]], **estimate_kw) -> dict:
    """What a plan holds: fault-free repeats per workload, episodes per fault and magnitude,
    case-study runs per side, hosts, shortest run, and the estimated recording time.

    >>> s = plan_summary(v2_plan())
    >>> s["slots"], s["minutes"] <= 100, s["min_duration_s"]
    (52, True, 90.0)
    """
    plans = [p for slot in slots for p in slot]
    base: dict[str, int] = {}
    episodes: dict[str, dict[float, int]] = {}
    cases: dict[str, int] = {}
    for p in plans:
        if not p.faults:
            key = f"{p.model_name}/{p.phase}"
            base[key] = base.get(key, 0) + 1
        for f in p.faults:
            mags = episodes.setdefault(f.fault_type, {})
            mags[f.magnitude] = mags.get(f.magnitude, 0) + 1
        if p.case:
            cases[p.case] = cases.get(p.case, 0) + 1
    secs = estimate_seconds(slots, **estimate_kw)
    warmup_s = estimate_kw.get("warmup_s", 0.0)
    return {
        "warmup_runs": sum(map(len, _warmups(slots, warmup_s))),
        "warmup_s": warmup_s,
        "slots": len(slots),
        "runs": len(plans),
        "hosts": plan_hosts(slots),
        "min_duration_s": min((p.duration_s for p in plans), default=0.0),
        "fault_free_repeats": base,
        "episodes": episodes,
        "case_runs": cases,
        "seconds": secs,
        "minutes": round(secs / 60, 1),
        "overhead_s": estimate_kw.get("overhead_s", SLOT_OVERHEAD_S),
    }


def describe_plan(slots: list[list[RunPlan]], numbers: Sequence[int] | None = None) -> list[str]:
    """One line per slot (for ``reveal-lab record --dry-run``); ``numbers``: the slots'
    numbers in the full plan when ``slots`` is a selection (default 0, 1, ...).

    >>> describe_plan(smoke_plan())[0]
    'slot 0: MLP/train on labA 8s [cpu_contention@1]'
    >>> describe_plan(v1_plan()[5:6], numbers=[5])[0][:7]
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
            + ("" if p.host_quota is None else f" quota {p.host_quota:g}")
            + (f" ({p.case})" if p.case else "")
            for p in slot
        )
        out.append(f"slot {i}: {runs}")
    return out
