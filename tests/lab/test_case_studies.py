"""Case studies on the bundled lab dataset (real DDP runs)."""

from __future__ import annotations

import polars as pl
import pytest

from reveal_lab.studies._case_studies import (
    crosshost_study,
    own_core_view,
    packet_loss_study,
    packet_loss_summary,
    storage_burst_example,
)

pytestmark = pytest.mark.slow


def test_own_core_view_renames_only_own_columns():
    f = pl.DataFrame(
        {
            "timestamp": [1],
            "CPU:Busy%.1.labB[%]": [1.0],
            "CPU:Busy%.0.labB[%]": [2.0],
            "Cgroup_diff:cpu_usage_usec.labB.labB[us]": [3.0],
            "Memory:Dirty.labB[kB]": [4.0],
        }
    )
    g = own_core_view(f, "labB", 1)
    assert g.columns == [
        "timestamp",
        "CPU:Busy%.own.labB[%]",
        "CPU:Busy%.0.labB[%]",
        "Cgroup_diff:cpu_usage_usec.self.labB[us]",
        "Memory:Dirty.labB[kB]",
    ]


def test_packet_loss_study():
    s = packet_loss_study()
    assert set(s["condition"]) == {"baseline", "loss_episode", "loss_calm"}
    assert set(s["host"]) == {"labA", "labB", "labC"}  # v2: DDP on three hosts
    summ = packet_loss_summary(s)
    rate = {(r["condition"], r["loss"]): r["retrans_per_bin"] for r in summ.iter_rows(named=True)}
    # graded: each bin carries the loss of the episode it overlaps
    assert {loss for cond, loss in rate if cond == "loss_episode"} == {0.001, 0.002, 0.01}
    base = rate[("baseline", 0.0)]
    # 1 % loss makes TCP retransmit more than the fault-free runs do
    assert rate[("loss_episode", 0.01)] > base
    assert summ["cooccur_share"].drop_nulls().is_between(0, 1).all()


def test_storage_burst_example():
    ex = storage_burst_example()
    s, w = ex["series"], ex["windows"]
    sect = s.filter(pl.col("metric").str.starts_with("Storage_diff:sectors_read"))
    inside = sect.filter(pl.col("in_episode"))["value"].mean()
    outside = sect.filter(~pl.col("in_episode"))["value"].mean()
    assert inside > 10 * max(outside, 1.0)  # the burst is real
    assert ex["episodes"].height >= 2
    assert {"start", "end", "flagged"} <= set(w.columns)


def test_crosshost_study_sees_the_quota():
    res = crosshost_study()
    summ = res["summary"]
    q = summ.filter(pl.col("host_run").str.starts_with("f") & (pl.col("host") == "labB"))
    quota = q["cpu_quota"].cast(pl.Float64)
    assert q.height >= 2 and quota.null_count() == 0 and set(quota) <= {0.4, 0.1}
    # the quota held the host's cgroup to at most its share of a core (plus sampling slack)
    assert (q["cgroup_cpu_cores"] <= quota + 0.05).all()
    dev = res["deviation"]
    assert {"pair", "labelled", "persistent", "z"} <= set(dev.columns)
