"""The paper-vs-reproduced table: schema, values read from the output folder's tables,
the tolerance rule."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from reveal_lab.notebooks import NotebookResult, write_index
from reveal_lab.studies import (
    CLAIM_COLUMNS,
    CLAIM_STATUSES,
    CLAIMS,
    claim_status,
    paper_vs_reproduced,
    save_table,
    write_paper_vs_reproduced,
)


@pytest.fixture
def out(tmp_path):
    """An output folder with a few of the notebooks' tables, values chosen here."""
    save_table(
        pl.DataFrame(
            {
                "workload": ["w1", "all", "all"],
                "threshold": [0.5, 0.5, 0.9],
                "n_metrics": [10, 100, 100],
                "n_selected": [6, 61, 90],
                "selected_ratio": [0.6, 0.61, 0.9],
                "avg_multi_r2": [0.5, 0.97, 0.99],
                "avg_max_abs_r": [0.5, 0.62, 0.99],
            }
        ),
        tmp_path,
        "fig4_pruning_curve",
    )
    save_table(
        pl.DataFrame(
            {
                "pair": ["3s/1s vs 1.5s/0.5s"] * 3,
                "measure": ["iou", "hit_count", "hit_length"],
                "mean": [0.4, 0.9, 0.3],
                "median": [0.45, 1.0, 0.31],
                "std": [0.1, 0.1, 0.1],
                "n": [5, 5, 5],
            }
        ),
        tmp_path,
        "table2_window_granularity",
    )
    save_table(
        pl.DataFrame({"subsystem": ["cpu", "memory"], "pairs": [3, 7], "share": [0.3, 0.7]}),
        tmp_path,
        "evidence_by_subsystem",
    )
    save_table(
        pl.DataFrame(
            {
                "interval_ms": [100.0, 600.0, 100.0],
                "process": ["collector", "collector", "perf stat"],
                "pct_of_core": [0.8, 0.2, 0.4],
                "bytes_per_s": [1500.0, 300.0, None],
                "channels": [600, 600, None],
                "seconds": [4.0, 4.0, 4.0],
                "machine": ["cpuX, 2 cores"] * 3,
                "note": ["", "", ""],
            }
        ),
        tmp_path,
        "measured_overhead",
    )
    return tmp_path


def _row(df: pl.DataFrame, claim_id: str) -> dict:
    return df.filter(pl.col("claim_id") == claim_id).row(0, named=True)


def test_schema_and_catalogue(out):
    df = paper_vs_reproduced(out, data="data/lab")
    assert tuple(df.columns) == CLAIM_COLUMNS
    assert df.height == len(CLAIMS) >= 20
    assert df["claim_id"].n_unique() == df.height
    assert set(df["status"]) <= set(CLAIM_STATUSES)
    assert df["paper_value"].str.len_chars().min() > 0 and df["section"].str.starts_with("§").all()
    # every row that is not reproduced says why
    assert (df.filter(pl.col("status") != "reproduced")["note"].str.len_chars() > 0).all()
    assert df.schema["ours"] == pl.Float64


def test_ours_is_read_from_the_tables(out):
    df = paper_vs_reproduced(out)
    r = _row(df, "prune_retained")  # the 'all' row at 0.5, not the workload's or 0.9's
    assert r["ours"] == pytest.approx(0.61) and r["status"] == "reproduced"
    assert _row(df, "prune_max_r")["status"] == "differs"  # 0.62 < 0.8
    assert _row(df, "prune_multi_r2")["status"] == "reproduced"  # 0.97 >= 0.95
    t2 = _row(df, "t2_fine_hit_count_mean")
    assert t2["ours"] == pytest.approx(0.9) and t2["status"] == "reproduced"
    assert _row(df, "t2_fine_hit_length_median")["ours"] == pytest.approx(0.31)
    assert _row(df, "t2_fine_iou")["ours"] == pytest.approx(0.45)
    cpu = _row(df, "cpu_share_anomalous")
    assert cpu["ours"] == pytest.approx(0.3) and cpu["status"] == "differs"
    c100 = _row(df, "cpu_100ms")
    assert c100["ours"] == pytest.approx(0.8) and c100["machine"] == "cpuX, 2 cores"
    assert c100["data"].startswith("live collector")
    assert _row(df, "cpu_600ms")["status"] == "reproduced"
    assert _row(df, "cpu_vs_perf")["ours"] == pytest.approx(0.2 / 0.4)
    assert _row(df, "bytes_per_s")["ours"] == pytest.approx(1500.0)
    # a table that is not there: cannot be reproduced, naming the file
    miss = _row(df, "dtw_share")
    assert miss["ours"] is None and miss["status"] == "cannot be reproduced here"
    assert "dtw_summary.csv" in miss["note"]
    assert _row(df, "numa_speedup")["status"] == "cannot be reproduced here"


def test_status_rule():
    assert claim_status("close", 0.5, 0.59, 0.1) == "reproduced"
    assert claim_status("close", 0.5, 0.61, 0.1) == "differs"
    assert claim_status("range", (1.2, 1.4), 1.3, 0.0) == "reproduced"
    assert claim_status("range", (1.2, 1.4), 1.5, 0.05) == "differs"
    assert claim_status("at_least", 0.8, 0.79, 0.0) == "differs"
    assert claim_status("factor", 1.0, 1.9, 2.0) == "reproduced"
    assert claim_status("factor", 1.0, 0.4, 2.0) == "differs"
    assert claim_status("absent", 1.0, 1.0, 0.0) == "cannot be reproduced here"
    with pytest.raises(ValueError, match="unknown rule"):
        claim_status("nearly", 1.0, 1.0, 0.0)


def test_index_shows_the_claims_first(out):
    df = paper_vs_reproduced(out)
    results = [NotebookResult("01-x.ipynb", "First notebook", "ok")]
    page = write_index(out, results, preset="smoke", data="d", started=dt.datetime(2026, 1, 1), claims=df).read_text()
    assert page.index("The paper beside us") < page.index("First notebook")
    assert "prune_retained" in page and "cannot be reproduced here: " in page
    n_rep = int((df["status"] == "reproduced").sum())
    assert f"reproduced: {n_rep}<" in page
