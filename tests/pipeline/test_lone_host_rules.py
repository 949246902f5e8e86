"""The sentinel rule for a run alone on a host recording (``docs/host_recordings.md``): per-CPU
interrupt counters are never its quiet counters, a window where several quiet counters fire is
named after the rarest, and every window the rule fires on is attributed to its counter's
subsystem, also where the detectors flag it too."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from reveal_lab.pipeline._sentinel import lone_sentinel_windows, quiet_counters
from reveal_lab.telemetry import Run, RunMeta

N = 600  # 60 s at 100 ms
IPI = "Interrupts_diff:CAL.0.h1[count]"
ALLOC = "Vmstat_diff:numa_hit.h1[count]"  # memory: moves with every job
SEND = "NetworkInterStat_diff:tx_bytes.veth0.h1[Bytes]"  # network: moves with the send alone


def _run(cols: dict[str, np.ndarray], seed: int = 0) -> Run:
    rng = np.random.default_rng(seed)
    t0 = dt.datetime(2026, 1, 1)
    frame = pl.DataFrame(
        {
            "timestamp": [t0 + dt.timedelta(milliseconds=100 * i) for i in range(N)],
            "CPU:Busy%.-.h1[%]": 5 + rng.normal(size=N),
            "Memory:Dirty.h1[kB]": 1000 + rng.normal(size=N),
            **cols,
        }
    ).with_columns(pl.col("timestamp").cast(pl.Datetime("ms")))
    return Run(RunMeta(run_id="host", hosts=("h1",)), frame)


def _busy(spans: list[tuple[int, int]], value: float = 3.0) -> np.ndarray:
    x = np.zeros(N)
    for a, b in spans:
        x[a:b] = value
    return x


def _windows(run: Run) -> pl.DataFrame:
    """3 s windows every 1 s over ``run``."""
    t = run.frame["timestamp"]
    starts = list(range(0, N - 29, 10))
    return pl.DataFrame(
        {
            "window_id": list(range(len(starts))),
            "host": ["h1"] * len(starts),
            "start": [t[i] for i in starts],
            "end": [t[i] + dt.timedelta(seconds=3) for i in starts],
        }
    )


def test_interrupt_counters_are_not_quiet_counters_of_a_run_alone():
    """An IPI counter 0 in 80 % of the run and busy for 12 s: the storage counter busy as long
    is a quiet counter, the interrupt counter is not, and no window fires on it."""
    run = _run({IPI: _busy([(100, 220)]), "Disk_diff:sectors_read.vda.h1[sectors]": _busy([(400, 520)])})
    assert quiet_counters(run.frame) == ["Disk_diff:sectors_read.vda.h1[sectors]"]
    fired = lone_sentinel_windows(_windows(run), {"h1": run}, 4).filter("sentinel")
    assert fired.height > 0 and set(fired["sentinel_metric"]) == {"Disk_diff:sectors_read.vda.h1[sectors]"}
    t = run.frame["timestamp"]
    assert (fired["window_id"] >= 40).all(), "a window inside the interrupt burst fired"
    assert t[400] <= _windows(run).filter(pl.col("window_id") == fired["window_id"].min())["start"][0]


def test_the_rarest_firing_counter_names_the_window():
    """The allocation counter moves through two jobs (0 in 60 % of the run), the send counter
    through the second only (0 in 80 %): in the send's windows both fire, in every sample, and
    the window is named after the send counter (the network), not the first in column order."""
    alloc = _busy([(60, 180), (300, 420)])
    send = _busy([(300, 420)], 5e6)
    run = _run({ALLOC: alloc, SEND: send})
    fired = lone_sentinel_windows(_windows(run), {"h1": run}, 4).filter("sentinel").sort("window_id")
    first_job = fired.filter(pl.col("window_id") < 20)
    second_job = fired.filter(pl.col("window_id") >= 30)
    assert first_job.height > 0 and set(first_job["sentinel_metric"]) == {ALLOC}
    assert second_job.height > 0 and set(second_job["sentinel_metric"]) == {SEND}
    assert set(second_job["sentinel_subsystem"]) == {"network"}


def test_every_window_the_rule_fires_on_is_attributed_to_its_counter():
    """Two windows the detectors flag and attribute to the memory, the sentinel rule fires on
    a network counter in the first: with the rule for a run alone (``lone``) that window is
    the network's, share 1; with the rule against baseline runs only a window the detectors
    leave alone takes the counter's subsystem."""
    from reveal_lab.pipeline._detect import _with_sentinel_decision
    from reveal_lab.telemetry import SUBSYSTEMS

    w = pl.DataFrame(
        {
            "window_id": [0, 1],
            "agreement": [1, 1],
            "sentinel": [True, False],
            "sentinel_subsystem": ["network", None],
            "subsystems": ["memory", "memory"],
            "top_subsystem": ["memory", "memory"],
            "top_share": [0.9, 0.9],
            **{f"share_{s}": [0.9 if s == "memory" else 0.02] * 2 for s in SUBSYSTEMS},
        }
    )
    lone = _with_sentinel_decision(w, 1, lone=True)
    assert lone["anomalous"].to_list() == [True, True]
    assert lone["top_subsystem"].to_list() == ["network", "memory"]
    assert lone["share_network"].to_list() == [1.0, 0.02] and lone["share_memory"].to_list() == [0.0, 0.9]
    base = _with_sentinel_decision(w, 1)
    assert base["top_subsystem"].to_list() == ["memory", "memory"]
