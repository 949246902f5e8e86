"""The paper-vs-reproduced table: the catalogue quotes the paper, each rule's boundary, both
detection settings read from the tables' ``policy`` column, the data and machine columns,
missing tables, and no status written as a literal."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import polars as pl
import pytest

import reveal_lab.reliability._claims as reliability_claims
import reveal_lab.studies._claim_model as claim_model
import reveal_lab.studies._claim_readers as claim_readers
import reveal_lab.studies._claims as claims_module
from reveal_lab.reliability import STATUSES, paper_claims
from reveal_lab.reliability._claims import status
from reveal_lab.studies import (
    CLAIM_COLUMNS,
    CLAIM_STATUSES,
    CLAIMS,
    claim_counts,
    claim_status,
    counts_line,
    paper_vs_reproduced,
    policy_table,
    save_table,
    setting_policies,
    setting_policy,
)

REPRODUCED, DIFFERS, CANNOT = CLAIM_STATUSES
PAPER = Path(__file__).resolve().parents[3] / "shared" / "papers" / "reveal-2510.26008.txt"


def _measured(tmp_path: Path) -> None:
    rows = [
        (100.0, "collector", 1.3, 4000.0, 600),
        (200.0, "collector", 0.9, 2500.0, 600),
        (300.0, "collector", 0.7, 1800.0, 600),
        (600.0, "collector", 0.5, 1000.0, 600),
        (100.0, "perf stat", 0.8, None, None),
    ]
    save_table(
        pl.DataFrame(
            [dict(zip(("interval_ms", "process", "pct_of_core", "bytes_per_s", "channels"), r, strict=True))
             | {"seconds": 4.0, "machine": "cpuX, 2 cores", "note": ""} for r in rows]
        ),
        tmp_path,
        "measured_overhead",
    )


@pytest.fixture
def out(tmp_path):
    """An output folder with a few of the notebooks' tables, values chosen here; the
    detection tables with different values per setting."""
    save_table(
        pl.DataFrame(
            {
                "workload": ["w1", "all", "all", "all"],
                "threshold": [0.5, 0.3, 0.5, 0.9],
                "n_metrics": [10, 100, 100, 100],
                "n_selected": [6, 40, 61, 90],
                "selected_ratio": [0.6, 0.4, 0.61, 0.9],
                "avg_multi_r2": [0.5, 0.5, 0.97, 0.99],
                "avg_max_abs_r": [0.5, 0.5, 0.62, 0.99],
            }
        ),
        tmp_path,
        "fig4_pruning_curve",
    )
    t2 = pl.DataFrame(
        {
            "pair": ["3s/1s vs 1.5s/0.5s"] * 3 + ["3s/1s vs 5s/2s", "1.5s/0.5s vs 5s/2s"],
            "measure": ["iou", "hit_count", "hit_length", "iou", "iou"],
            "mean": [0.4, 0.9, 0.3, 0.5, 0.3],
            "median": [0.45, 1.0, 0.31, 0.5, 0.3],
            "std": [0.1, 0.14, 0.1, 0.1, 0.1],
            "n": [5] * 5,
        }
    )
    save_table(policy_table({"paper": t2, "default": t2.with_columns(pl.col("mean") / 10)}), tmp_path,
               "table2_window_granularity")
    ev = pl.DataFrame({"subsystem": ["cpu", "memory"], "pairs": [3, 7], "share": [0.3, 0.7]})
    save_table(policy_table({"paper": ev, "default": ev.with_columns(pl.col("share").reverse())}), tmp_path,
               "evidence_by_subsystem")
    _measured(tmp_path)
    return tmp_path


def _row(df: pl.DataFrame, claim_id: str) -> dict:
    return df.filter(pl.col("claim_id") == claim_id).row(0, named=True)


def test_schema_and_catalogue(out):
    df = paper_vs_reproduced(out, data="data/lab")
    assert tuple(df.columns) == CLAIM_COLUMNS
    assert df.height == len(CLAIMS) and df["claim_id"].n_unique() == df.height
    assert (df["kind"] == "finding").sum() >= 60
    for col in ("status_paper_method", "status_default"):
        assert set(df[col]) <= set(CLAIM_STATUSES)
    assert (df["section"].str.len_chars() > 0).all() and (df["quote"].str.len_chars() > 10).all()
    # every row that is not reproduced says why
    bad = df.filter((pl.col("status_paper_method") != REPRODUCED) & (pl.col("note").str.len_chars() == 0))
    assert bad.height == 0, bad["claim_id"].to_list()
    assert df.schema["ours_paper_method"] == pl.Float64 and df.schema["ours_default"] == pl.Float64


def _norm(text: str) -> str:
    """The paper's LaTeX as text, every dash one hyphen, no spaces, lower case."""
    for a, b in (("\\pm", "±"), ("\\sim", "~"), ("\\approx", "≈"), ("\\rightarrow", "→"), ("\\%", "%"),
                 ("\\mathrm{s}", "s"), ("\\,", ""), ("$", ""), ("–", "-"), ("—", "-"), ("−", "-"), ("’", "'"),
                 ("*", ""), ("<u>", ""), ("</u>", "")):
        text = text.replace(a, b)
    return re.sub(r"\s+", "", text).lower()


def test_every_quote_is_the_papers_text():
    """Each quote's fragments (split at ' ... ') are the paper's text, in order; the paper's
    text is in ../shared/papers, which CI has: without it the test fails."""
    assert PAPER.exists(), f"the paper's text is not at {PAPER} (../shared/papers/ must be checked out)"
    paper = _norm(PAPER.read_text())
    wrong = []
    for c in CLAIMS:
        if c.section.endswith("Table 2"):
            continue  # a table cell: the row and column are named instead
        pos = 0
        for part in c.quote.split(" ... "):
            i = paper.find(_norm(part.strip(" (").removeprefix("... ")), pos)
            if i < 0:
                where = "not found after the fragment before it" if pos else "not found"
                wrong.append((c.claim_id, part, where))
                break
            pos = i + len(_norm(part))
    assert not wrong


def _spellings(v: float) -> set[str]:
    """How a value may be written in a quote: as it is or as a percentage, to 0-2 decimals."""
    return {f.format(x) for x in (v, v * 100) for f in ("{:g}", "{:.1f}", "{:.2f}", "{:.0f}", "{:,.0f}")}


def test_the_papers_value_is_in_its_quote():
    """A claim's number is written in its quote; where the paper gives words, not a number
    ('thousands', 'slightly higher'), the note says how the words were read."""
    missing = []
    for c in CLAIMS:
        if c.paper is None:
            continue
        q = _norm(c.quote)
        for v in c.paper if isinstance(c.paper, tuple) else (c.paper,):
            written = any(
                re.search(rf"(?<![0-9])(?<![0-9]\.){re.escape(_norm(s))}(?![0-9])", q) for s in _spellings(v)
            )
            if not written and "read as" not in c.note:
                missing.append((c.claim_id, v))
    assert not missing


def test_ours_is_read_from_the_tables(out):
    df = paper_vs_reproduced(out)
    r = _row(df, "prune_removed_curve")  # the 'all' row at 0.5, not the workload's or 0.9's
    assert r["ours_paper_method"] == pytest.approx(0.39) and r["status_paper_method"] == REPRODUCED
    assert _row(df, "prune_max_r")["status_paper_method"] == DIFFERS  # 0.62 < 0.8
    sat = _row(df, "prune_multi_r2")  # falls 0.02 above 0.5, 0.47 below: saturated
    assert sat["status_paper_method"] == REPRODUCED and sat["ours_paper_method"] == pytest.approx(0.97)
    c100 = _row(df, "cpu_100ms")
    assert c100["ours_default"] == pytest.approx(1.3) and c100["status_default"] == REPRODUCED
    assert c100["machine"] == "cpuX, 2 cores" and c100["data"].startswith("live collector")
    assert _row(df, "cpu_vs_perf_200ms")["ours_paper_method"] == pytest.approx(0.9 / 0.8)
    assert _row(df, "cpu_vs_perf_200ms")["status_paper_method"] == DIFFERS
    assert _row(df, "cpu_vs_perf_300ms")["status_paper_method"] == REPRODUCED  # 0.7 / 0.8
    assert _row(df, "cpu_decreasing")["status_paper_method"] == REPRODUCED
    # raw-to-raw: 600 channels × 10 samples/s × 8 B; ours compressed in its own row
    assert _row(df, "bytes_raw")["ours_paper_method"] == pytest.approx(48.0)
    assert _row(df, "bytes_compressed_ours")["ours_paper_method"] == pytest.approx(4.0)
    assert _row(df, "bytes_compression")["status_paper_method"] == REPRODUCED


def test_detection_claims_are_read_per_setting(out):
    df = paper_vs_reproduced(out)
    t2 = _row(df, "t2_fine_hit_count_mean")
    assert t2["ours_paper_method"] == pytest.approx(0.9) and t2["status_paper_method"] == REPRODUCED
    assert t2["ours_default"] == pytest.approx(0.09) and t2["status_default"] == DIFFERS
    assert _row(df, "t2_fine_hit_count_std")["ours_paper_method"] == pytest.approx(0.14)
    mio = _row(df, "local_memory_io")  # memory 0.7 vs cpu 0.3 (paper); reversed (default)
    assert (mio["status_paper_method"], mio["status_default"]) == (REPRODUCED, DIFFERS)
    counts = claim_counts(df)
    assert counts["paper"] != counts["default"]


def test_a_detection_table_without_its_setting_cannot_be_read(tmp_path):
    save_table(
        pl.DataFrame({"subsystem": ["memory"], "pairs": [7], "share": [1.0]}),
        tmp_path,
        "evidence_by_subsystem",
    )
    r = _row(paper_vs_reproduced(tmp_path), "local_memory_io")
    assert r["status_paper_method"] == r["status_default"] == CANNOT
    assert "no policy column" in r["note"]


def test_a_missing_table_cannot_be_checked_and_names_it(out):
    df = paper_vs_reproduced(out)
    miss = _row(df, "dtw_share")
    assert miss["ours_paper_method"] is None and miss["status_paper_method"] == CANNOT
    assert "tables/dtw_summary.csv" in miss["note"]
    spread = _row(df, "iforest_spread")
    assert spread["status_default"] == CANNOT and "measured_runtimes.csv" in spread["note"]


@pytest.mark.parametrize(
    ("rule", "paper", "inside", "outside", "tol"),
    [
        ("close", 0.5, 0.59, 0.61, 0.1),
        ("range", (1.2, 1.4), 1.44, 1.46, 0.05),
        ("range", (1.2, 1.4), 1.16, 1.14, 0.05),
        ("at_least", 0.8, 0.8, 0.79, 0.0),
        ("at_most", 1.0, 1.0, 1.01, 0.0),
        ("above", 700.0, 701.0, 700.0, 0.0),
        ("below", 1.5, 1.49, 1.5, 0.0),
        ("factor", 1.0, 1.99, 2.01, 2.0),
        ("factor", 1.0, 0.51, 0.49, 2.0),
    ],
)
def test_each_rule_at_its_boundary(rule, paper, inside, outside, tol):
    assert claim_status(rule, paper, inside, tol) == REPRODUCED
    assert claim_status(rule, paper, outside, tol) == DIFFERS
    assert claim_status(rule, paper, None, tol) == CANNOT


def test_qualitative_and_unknown_rules():
    assert [claim_status("qualitative", None, 1.0, 0.0, holds=h) for h in (True, False, None)] == [
        REPRODUCED,
        DIFFERS,
        CANNOT,
    ]
    with pytest.raises(ValueError, match="unknown rule"):
        claim_status("nearly", 1.0, 1.0, 0.0)


def test_over_700_channels_is_a_bound_not_a_tolerance(tmp_path):
    rows = {
        "run_id": ["a", "b", "c"],
        "workload": ["w"] * 3,
        "platform": ["lab"] * 3,
        "interval_ms": [100.0] * 3,
    }
    save_table(pl.DataFrame(rows | {"n_metrics": [605, 605, 605]}), tmp_path, "dataset_runs")
    assert _row(paper_vs_reproduced(tmp_path), "channels_over_700")["status_paper_method"] == DIFFERS
    save_table(pl.DataFrame(rows | {"n_metrics": [701, 701, 701]}), tmp_path, "dataset_runs")
    assert _row(paper_vs_reproduced(tmp_path), "channels_over_700")["status_paper_method"] == REPRODUCED


def test_data_and_machine_columns_name_the_data_given(out, tmp_path):
    data = tmp_path / "mydata"
    data.mkdir()
    (data / "recording.json").write_text(
        json.dumps(
            {
                "sessions": [
                    {
                        "machine": {
                            "cpu_model": "Test CPU 9000",
                            "cpu_count": 64,
                            "mem_total_kb": 2**21,
                            "kernel": "6.1-test",
                        }
                    }
                ]
            }
        )
    )
    save_table(
        pl.DataFrame(
            {
                "run_id": ["r"],
                "workload": ["w"],
                "platform": ["lab"],
                "n_metrics": [800],
                "interval_ms": [100.0],
            }
        ),
        out,
        "dataset_runs",
    )
    df = paper_vs_reproduced(out, data=str(data))
    ch = _row(df, "channels_over_700")
    assert ch["data"] == str(data) and ch["machine"].startswith("Test CPU 9000, 64 cores, 2.0 GiB")
    assert _row(df, "cpu_100ms")["machine"] == "cpuX, 2 cores"  # measured here, on this machine
    # a dataset that does not record its machine says so; nothing is made up
    plain = tmp_path / "public"
    plain.mkdir()
    ch = _row(paper_vs_reproduced(out, data=str(plain)), "channels_over_700")
    assert ch["data"] == str(plain) and "no recording.json" in ch["machine"]
    # runs of the paper's CPU platform: the paper's description of its local cluster
    save_table(
        pl.DataFrame(
            {
                "run_id": ["r"],
                "workload": ["w"],
                "platform": ["cpu"],
                "n_metrics": [800],
                "interval_ms": [100.0],
            }
        ),
        out,
        "dataset_runs",
    )
    ch = _row(paper_vs_reproduced(out, data=str(plain)), "channels_over_700")
    assert ch["machine"].startswith("the paper's local cluster") and "EPYC 7443P" in ch["machine"]
    # the paper's dataset counts are checked on the paper's dataset only
    assert _row(paper_vs_reproduced(out, data=str(data)), "runs_per_workload")["status_default"] == CANNOT
    assert _row(paper_vs_reproduced(out, data=str(plain)), "runs_per_workload")["ours_default"] == 1.0


def test_a_claim_about_a_missing_fault_says_which_faults_the_data_has(out, tmp_path):
    data = tmp_path / "lab"
    data.mkdir()
    pl.DataFrame(
        {"fault": ["none", "packet_loss@0.001+packet_loss@0.01", "config_irq_imbalance@1"]}
    ).write_csv(data / "meta_lab.csv")
    df = paper_vs_reproduced(out, data=str(data))
    numa = _row(df, "numa_speedup")
    assert numa["status_paper_method"] == CANNOT and "config_irq_imbalance, packet_loss" in numa["note"]
    loss = _row(df, "loss_rates")
    assert loss["ours_paper_method"] == 1.0 and "0.1/1 %" in loss["note"]


def test_counts_line_per_setting(out):
    df = paper_vs_reproduced(out, data="data/lab")
    lines = counts_line(df, "data/lab")
    c = claim_counts(df)
    assert lines[0].startswith(
        f"{c['paper'][REPRODUCED]} of {sum(c['paper'].values())} claims of the paper "
        f"reproduced on data/lab, {c['paper'][DIFFERS]} differ, {c['paper'][CANNOT]} "
        "cannot be checked here"
    )
    assert "paper's method" in lines[0] and "default" in lines[1]


def test_settings_are_policies():
    from reveal_lab.pipeline import POLICIES

    # the paper's setting is the paper's policy itself, whatever the study's trim
    assert setting_policy("paper") == setting_policy("paper", trim="active") == POLICIES["paper"]
    default = setting_policy("default", trim="active")
    assert default == POLICIES["default"].with_(trim="active")
    assert setting_policy("default", min_agreement=2).min_agreement == 2
    assert setting_policy("default", min_agreement=0).min_agreement is None  # the policy's own
    assert setting_policy("default", trim=False).trim == "none" and setting_policy("default").trim == "auto"
    assert list(setting_policies(["default", "paper"])) == ["default", "paper"]
    with pytest.raises(ValueError, match="unknown setting"):
        setting_policy("nope")


def _status_literals(module) -> list[tuple[int, str]]:
    """String constants equal to a status, outside the one tuple that defines them."""
    tree = ast.parse(Path(module.__file__).read_text())
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in ("CLAIM_STATUSES", "STATUSES") for t in targets):
                allowed |= {id(n) for n in ast.walk(node)}
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and n.value in (*CLAIM_STATUSES, *STATUSES, "cannot be reproduced here")
        and id(n) not in allowed
    ]


@pytest.mark.parametrize(
    "module",
    [claims_module, claim_readers, claim_model, reliability_claims],
    ids=["catalogue", "readers", "model", "reliability"],
)
def test_no_status_is_a_literal(module):
    assert _status_literals(module) == []


def test_reliability_rows_show_their_assumptions_and_follow_one_rule():
    rows = {r["claim_id"]: r for r in paper_claims(simulate=False, restart_min=5.0, write_s=0.0)}
    assert rows["ettr_16k_5min"]["assumptions"] == "u₀ = 5 min, w = 0 s"
    assert rows["ettr_16k_5min"]["status"] == STATUSES[0]
    # a w that the quote does not give moves the row: the assumption decides, and says so
    assert {r["claim_id"]: r for r in paper_claims(simulate=False, write_s=60.0)}["ettr_16k_5min"][
        "status"
    ] == STATUSES[1]
    lemon = rows["lemon_512plus"]
    assert lemon["status"] == STATUSES[2] and "lemon_log" in lemon["note"]
    assert status(1.0, 1.029, 0.03) == STATUSES[0] and status(1.0, 1.031, 0.03) == STATUSES[1]
    assert (
        status(0.05, 0.05, 0.0, "at_most") == STATUSES[0]
        and status(0.05, 0.0501, 0.0, "at_most") == STATUSES[1]
    )
