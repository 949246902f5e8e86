"""Cross-host deviation: the HugePages case, a persistently deviating dynamic metric,
and no false alarms on a healthy cluster."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from reveal_lab.crosshost import DEVIATION_SCHEMA, deviation
from reveal_lab.synth import Anomaly, make_run

HOSTS = ["h1", "h2", "h3", "h4"]


def test_hugepages_and_a_dynamic_deviation_are_flagged_and_nothing_else():
    run, truth = make_run(
        120,
        200,
        hosts=HOSTS,
        seed=0,
        anomalies=[
            Anomaly("memory", 0, 0, kind="static", host="h3", n_columns=1),
            Anomaly("network", 0, 120, kind="level", host="h2", n_columns=2, magnitude=4),
        ],
    )
    dev = deviation(run)
    assert dict(dev.schema) == DEVIATION_SCHEMA
    flagged = dev.filter(pl.col("persistent"))
    expected = set(truth.select("column", "host").rows())
    got = set(flagged.select("metric", "host").rows())
    assert got == expected
    huge = flagged.filter(pl.col("kind") == "static").row(0, named=True)
    assert huge["key"] == "Memory:HugePages_Total" and huge["host"] == "h3"
    assert huge["claim"] == "HugePages configured is 1,024 on h3 while the cluster median is 0"
    net = flagged.filter(pl.col("kind") == "dynamic")
    assert (net["host"] == "h2").all() and (net["deviating_share"] > 0.9).all()
    assert net["claim"].str.contains("above the cluster median").all()
    # flagged rows come first
    assert dev["persistent"][: flagged.height].all()


def test_a_healthy_cluster_has_no_persistent_deviation():
    run, _ = make_run(120, 200, hosts=HOSTS, seed=1)
    dev = deviation(run)
    assert dev.filter(pl.col("persistent")).height == 0
    assert dev.height == 200 * 4


def test_runs_per_host_recorded_at_different_times():
    runs = []
    for i, h in enumerate(HOSTS):
        anomalies = [Anomaly("memory", 0, 0, kind="static", n_columns=1)] if h == "h4" else []
        start = dt.datetime(2025, 5, 1, 8 + i, 0, 0)
        r, truth = make_run(60, 150, hosts=[h], seed=10 + i, profile_seed=3, start=start, anomalies=anomalies)
        runs.append(r)
    planted = truth["column"][0]  # a static memory channel of h4 (MemTotal, HugePages_Total, ...)
    dev = deviation(runs, align="elapsed")
    flagged = dev.filter(pl.col("persistent"))
    assert flagged.select("metric", "host").rows() == [(planted, "h4")]
    # a dict of frames works too, and whole-run comparison (one window)
    dev2 = deviation({r.meta.hosts[0]: r.frame for r in runs}, window_s=None)
    assert (dev2["n_windows"] == 1).all()
    assert (planted, "h4") in dev2.filter(pl.col("persistent")).select("metric", "host").rows()


def test_two_hosts_warn_and_flag_nothing():
    run, _ = make_run(
        30,
        60,
        hosts=["a", "b"],
        seed=2,
        anomalies=[Anomaly("memory", 0, 0, kind="static", host="b", n_columns=1)],
    )
    with pytest.warns(UserWarning, match="2 hosts"):
        dev = deviation(run)
    assert not dev["persistent"].any()
    with pytest.raises(ValueError, match="at least 2 hosts"):
        deviation(make_run(10, 30, seed=0).run)
    with pytest.raises(ValueError, match="align"):
        deviation(run, align="bogus")


def test_one_odd_host_among_identical_hosts_gets_a_finite_z():
    """MAD is 0 when the other hosts agree exactly (e.g. TCP_timewait = 0 everywhere);
    the odd host must still get a finite, flaggable z, never inf."""
    import datetime as dt

    import numpy as np
    import polars as pl

    from reveal_lab.crosshost import deviation

    n = 40
    ts = [dt.datetime(2025, 1, 1) + dt.timedelta(milliseconds=100 * i) for i in range(n)]
    frames = {}
    for h in ("h1", "h2", "h3", "h4"):
        v = np.full(n, 3.0 if h == "h4" else 0.0)
        frames[h] = pl.DataFrame(
            {"timestamp": ts, f"NetworkProtocolCounts:TCP_timewait.{h}[count]": v},
            schema_overrides={"timestamp": pl.Datetime("ms")},
        )
    dev = deviation(frames, window_s=1.0)
    z = dict(zip(dev["host"], dev["z"], strict=True))
    assert all(np.isfinite(v) for v in z.values()), z
    assert abs(z["h4"]) > 2 and z["h1"] == 0
    assert dev.filter(pl.col("persistent"))["host"].to_list() == ["h4"]


# -- against the job's fault-free runs ----------------------------------------------------------
def _job(
    seed: int,
    *,
    role: float = 1.3,
    odd_host: str | None = None,
    odd: float = 1.0,
    n: int = 90,
    hosts: tuple[str, ...] = tuple(HOSTS),
    huge_host: str | None = None,
):
    """Hosts of one job, 1 s samples: h2 always 30 % busier (its role); ``odd_host`` has
    ``odd`` times the memory traffic; every host carries the collector's own lag, h4's high,
    and its configured huge pages (1,024 on ``huge_host``, else 0)."""
    import numpy as np

    from reveal_lab.telemetry import Run, RunMeta

    rng = np.random.default_rng(seed)
    t0 = dt.datetime(2025, 1, 1)
    t = pl.datetime_range(t0, t0 + dt.timedelta(seconds=n - 1), "1s", eager=True)
    cols: dict = {"timestamp": t}
    for h in hosts:
        cols[f"Memory:HugePages_Total.{h}[count]"] = np.full(n, 1024.0 if h == huge_host else 0.0)
        cols[f"CPU:Busy%.0.{h}[%]"] = 50 * (role if h == "h2" else 1.0) + rng.normal(0, 1, n)
        cols[f"Memory:Dirty.{h}[kB]"] = 100 * (odd if h == odd_host else 1.0) + rng.normal(0, 2, n)
        cols[f"Network:rx_bytes.{h}[B]"] = 1e6 + rng.normal(0, 1e4, n)
        cols[f"Collector:lag.{h}[us]"] = (5000.0 if h == "h4" else 100.0) + rng.normal(0, 5, n)
    return Run(RunMeta(run_id=f"job{seed}"), pl.DataFrame(cols))


def test_a_host_is_judged_against_itself_in_the_fault_free_runs():
    from reveal_lab.crosshost import BASELINE_COLUMNS, baseline_deviation

    base = [_job(s) for s in range(4)]
    plain = deviation(_job(9, odd_host="h3", odd=2.0))
    # the cluster rule flags h2 for its role, in a faulty run and a fault-free one alike
    assert set(plain.filter(pl.col("persistent"))["host"]) == {"h2", "h3"}
    assert "h2" in set(deviation(base[0]).filter(pl.col("persistent"))["host"])
    dev = baseline_deviation(_job(9, odd_host="h3", odd=2.0), base)
    assert list(dev.columns) == [*DEVIATION_SCHEMA, *BASELINE_COLUMNS]
    hit = dev.filter(pl.col("persistent"))
    assert hit.select("host", "key").rows() == [("h3", "Memory:Dirty")]
    row = hit.row(0, named=True)
    assert row["excess"] > row["threshold"] >= 3.0 and row["baseline_runs"] == 4
    role = dev.filter((pl.col("host") == "h2") & (pl.col("key") == "CPU:Busy%.0"))
    assert role["cluster_persistent"].item() and not role["persistent"].item()
    # a fault-free run like the baseline runs: nothing
    assert baseline_deviation(_job(10), base).filter(pl.col("persistent")).height == 0
    # a change of the role itself (h2 now 60 % busier) is a deviation again
    moved = baseline_deviation(_job(11, role=1.6), base).filter(pl.col("persistent"))
    assert moved.select("host", "key").rows() == [("h2", "CPU:Busy%.0")]


def test_the_collectors_own_telemetry_is_not_compared():
    dev = deviation(_job(0))
    assert not dev["key"].str.starts_with("Collector").any()
    assert set(dev["key"]) == {"CPU:Busy%.0", "Memory:Dirty", "Network:rx_bytes", "Memory:HugePages_Total"}


def test_a_configuration_value_that_changed_is_a_deviation_on_three_hosts():
    """HugePages set on one of three hosts: one odd value among three has |z| 2.4, under the
    excess bar, yet the value differs from the cluster where the baseline runs did not; a host
    configured so in every baseline run (its role) is not flagged."""
    from reveal_lab.crosshost import baseline_deviation

    three = ("h1", "h2", "h3")
    base = [_job(s, hosts=three) for s in range(3)]
    dev = baseline_deviation(_job(9, hosts=three, huge_host="h3"), base)
    hit = dev.filter(pl.col("persistent"))
    assert hit.select("host", "key", "kind").rows() == [("h3", "Memory:HugePages_Total", "static")]
    assert abs(hit["excess"][0]) < hit["threshold"][0]
    usual = [_job(s, hosts=three, huge_host="h1") for s in range(3)]
    assert baseline_deviation(_job(9, hosts=three, huge_host="h1"), usual)["persistent"].sum() == 0


def test_baseline_deviation_needs_two_baseline_runs():
    from reveal_lab.crosshost import baseline_deviation

    with pytest.raises(ValueError, match="at least 2 baseline runs"):
        baseline_deviation(_job(0), [_job(1)])


def test_judging_precomputed_deviations_is_the_same_rule():
    from reveal_lab.crosshost import baseline_deviation, judge_deviation

    base = [_job(s) for s in range(3)]
    run = _job(9, odd_host="h3", odd=2.0)
    direct = baseline_deviation(run, base)
    judged = judge_deviation(deviation(run, align="time"), [deviation(b, align="time") for b in base])
    assert judged.equals(direct)
    with pytest.raises(ValueError, match="at least 2 baseline runs"):
        judge_deviation(deviation(run), [deviation(base[0])])
