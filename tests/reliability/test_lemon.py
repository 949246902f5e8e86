"""Lemon hosts: peer-relative flags per run, Wilson intervals across runs, scan's output."""

import math

import polars as pl
import pytest

from reveal_lab.config import fixtures_dir
from reveal_lab.reliability import (
    LEMON_COLUMNS,
    flag_hosts,
    host_run_table,
    lemon_hosts,
    mttf_hours,
    mttf_without_host,
    scan_lemon_hosts,
    wilson_interval,
)


def test_wilson_interval_known_values_and_bounds():
    lo, hi = wilson_interval(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(0, 20)[0] == 0.0 and wilson_interval(20, 20)[1] == 1.0
    with pytest.raises(ValueError, match="k <= n"):
        wilson_interval(3, 2)


def _windows(shares: dict[tuple[str, str], int], n: int = 20) -> pl.DataFrame:
    rows = []
    for (run, host), k in shares.items():
        rows += [{"run": run, "host": host, "flagged": i < k} for i in range(n)]
    return pl.DataFrame(rows)


def test_a_persistent_lemon_among_four_hosts_is_ranked_first():
    shares = {}
    for r in range(12):
        for h in ("h1", "h2", "h3", "h4"):
            shares[(f"r{r}", h)] = 12 if h == "h3" and r < 10 else (r + ord(h[-1])) % 2
    t = host_run_table(_windows(shares))
    assert t.height == 48 and set(t.columns) >= {"run", "host", "n_windows", "n_flagged", "share"}
    rank = lemon_hosts(flag_hosts(t))
    assert rank.columns == list(LEMON_COLUMNS)
    top = rank.row(0, named=True)
    assert top["host"] == "h3" and top["n_flagged"] == 10 and top["persistent"]
    assert not rank.filter(pl.col("host") != "h3")["persistent"].any()


def test_hosts_flagged_together_are_not_lemons():
    # a DDP job slows every host at once: both hosts flagged alike, nobody stands out
    t = host_run_table(_windows({(f"r{r}", h): 15 for r in range(8) for h in ("a", "b")}))
    f = flag_hosts(t)
    assert not f["flagged"].any()
    assert not lemon_hosts(f)["persistent"].any()


def test_crosshost_deviation_flags_a_host_and_single_host_runs_are_dropped():
    t = pl.DataFrame({"run": ["r1", "r1", "r1", "solo"], "host": ["a", "b", "c", "a"],
                      "share": [0.1, 0.1, 0.1, 0.9]})
    dev = pl.DataFrame({"run": ["r1", "r1"], "host": ["c", "c"], "persistent": [True, False]})
    f = flag_hosts(t, crosshost=dev)
    assert f["run"].unique().to_list() == ["r1"]
    assert f.filter("flagged")["host"].to_list() == ["c"]
    assert f.filter("flagged")["by_crosshost"].to_list() == [True]
    with pytest.raises(ValueError, match="ratio"):
        flag_hosts(t, ratio=0.5)
    with pytest.raises(ValueError, match="share"):
        flag_hosts(t.drop("share"))


def test_scan_outputs_group_per_host_files_into_jobs():
    runs = pl.DataFrame({
        "run_id": [f"job{j}_{h}" for j in range(6) for h in ("labA", "labB")] + ["multi"],
        "hosts": ["labA", "labB"] * 6 + ["x,y"],
        "n_windows": [40] * 12 + [80],
    })
    an = pl.DataFrame({
        "run_id": [f"job{j}_labB" for j in range(6) for _ in range(20)] + ["multi"] * 3,
        "host": ["labB"] * 120 + ["x"] * 3,
        "window_id": [w for _ in range(6) for w in range(20)] + [0, 1, 1],
    })
    rank = scan_lemon_hosts(an, runs)
    assert rank["host"].to_list()[0] == "labB"
    b = rank.row(0, named=True)
    assert b["n_runs"] == 6 and b["n_flagged"] == 6 and b["persistent"]
    # the multi-host run: x has 2 of its 40 windows flagged, y none: under min_gap
    assert rank.filter(pl.col("host") == "x")["n_flagged"].to_list() == [0]
    empty = scan_lemon_hosts(pl.DataFrame(), pl.DataFrame())
    assert empty.height == 0 and empty.columns == list(LEMON_COLUMNS)


def test_mttf_without_the_worst_host():
    rank = pl.DataFrame({"rank": [1, 2], "host": ["a", "b"], "n_runs": [14, 14], "n_flagged": [1, 0],
                         "share": [1 / 14, 0.0], "ci_low": [0.0127, 0.0], "ci_high": [0.3147, 0.2153]})
    out = mttf_without_host(rank, 1024)
    assert out["host"] == "a" and out["mttf_before_h"] == pytest.approx(mttf_hours(1024))
    # smoothed shares 2/16 and 1/16: the rest fail at 2/3 of the mean
    assert out["mttf_after_h"] == pytest.approx(1.5 * mttf_hours(1024))
    lo, hi = out["mttf_after_ci"]
    assert lo < out["mttf_before_h"] < out["mttf_after_h"] < hi and math.isfinite(hi)
    with pytest.raises(ValueError, match="not in the ranking"):
        mttf_without_host(rank, 1024, host="zz")
    with pytest.raises(ValueError, match="two hosts"):
        mttf_without_host(rank.head(1), 1024)


@pytest.mark.slow
def test_scan_writes_lemon_hosts_csv(tmp_path, capsys):
    from reveal_lab.cli import main

    out = tmp_path / "scan"
    rc = main(["scan", str(fixtures_dir() / "reveal_sample"), "--inprocess", "--preset", "smoke",
               "--out", str(out), "--no-progress"])
    assert rc == 0
    assert "lemon_hosts.csv" in capsys.readouterr().out
    rank = pl.read_csv(out / "lemon_hosts.csv")
    assert rank.columns == list(LEMON_COLUMNS)
    # the fixture's one two-host run: both hosts ranked, one run each
    assert sorted(rank["host"].to_list()) == ["nserver07", "nserver08"]
    assert rank["n_runs"].to_list() == [1, 1]
