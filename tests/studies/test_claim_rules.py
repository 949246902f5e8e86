"""Every rule of the claims table can fail: each claim with a number is fed a value its rule
must reject, each qualitative reader touched by issue 44 is fed a table that must not
reproduce, a repeated measurement decides only when its whole interval does, and the "no
change" rows need an equivalence margin, not an interval that includes 0."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from reveal_lab.config import PROJECT_ROOT
from reveal_lab.studies import (
    CLAIM_STATUSES,
    CLAIMS,
    Claim,
    claim_status,
    paper_vs_reproduced,
    policy_table,
    save_table,
)
from reveal_lab.studies._claim_model import APPROX, acceptance
from reveal_lab.studies._claim_readers import NO_CHANGE_MARGIN, compression_reading

REPRODUCED, DIFFERS, CANNOT = CLAIM_STATUSES
LAB = str(PROJECT_ROOT / "data" / "lab")


def _row(df: pl.DataFrame, claim_id: str) -> dict:
    return df.filter(pl.col("claim_id") == claim_id).row(0, named=True)


def _outside(c: Claim) -> float:
    """A value the claim's rule must reject."""
    lo, hi, _ = acceptance(c.rule, c.paper, c.tol)  # type: ignore[arg-type]
    if math.isfinite(lo) and lo > 0:
        return lo / 2  # below the accepted values (a factor rule needs ours > 0)
    return hi + abs(hi) + 1.0


@pytest.mark.parametrize("claim", [c for c in CLAIMS if c.rule != "qualitative"], ids=lambda c: c.claim_id)
def test_every_numeric_rule_rejects_a_value(claim):
    lo, hi, _ = acceptance(claim.rule, claim.paper, claim.tol)  # type: ignore[arg-type]
    assert math.isfinite(lo) or math.isfinite(hi), "the rule accepts every value"
    assert claim_status(claim.rule, claim.paper, _outside(claim), claim.tol) == DIFFERS
    # a tolerance is 0, APPROX of the paper's value, or justified in the row
    assert not claim.tol or claim.tol_why or claim.tolerance_text.startswith(f"±{APPROX:.0%} of the paper")


def test_a_tolerance_without_a_reason_is_refused():
    with pytest.raises(ValueError, match="nor justified"):
        Claim("x", "§0", "q", 0.5, "share", "close", 0.2, lambda ctx: None)  # type: ignore[arg-type,return-value]
    assert Claim("x", "§0", "q", 0.5, "share", "close", APPROX * 0.5, lambda ctx: None).tol  # type: ignore[arg-type]


def test_an_interval_decides_only_when_whole():
    assert claim_status("range", (1.2, 1.4), 1.3, 0.0, lo=1.25, hi=1.35) == REPRODUCED
    assert claim_status("range", (1.2, 1.4), 1.35, 0.0, lo=1.3, hi=1.45) == CANNOT  # across 1.4
    assert claim_status("range", (1.2, 1.4), 0.5, 0.0, lo=0.45, hi=0.55) == DIFFERS
    assert claim_status("factor", 1.0, 1.5, 2.0, lo=0.4, hi=2.5) == CANNOT  # wider than the factor band
    assert claim_status("at_most", 1.0, 0.9, 0.0, lo=0.8, hi=1.0) == REPRODUCED


def _overhead(tmp: Path, lo_100: float, hi_100: float) -> None:
    rows = [(100.0, "collector", (lo_100 + hi_100) / 2, lo_100, hi_100, 4000.0),
            (600.0, "collector", 0.4, 0.35, 0.45, 900.0),
            (100.0, "perf stat", 1.0, 0.95, 1.05, None)]
    save_table(pl.DataFrame([{"interval_ms": i, "process": p, "pct_of_core": m, "pct_lo": a, "pct_hi": b,
                              "bytes_per_s": by, "channels": 600, "seconds": 30.0, "machine": "cpuX",
                              "note": ""} for i, p, m, a, b, by in rows]), tmp, "measured_overhead")


def test_overhead_rows_use_their_interval(tmp_path):
    _overhead(tmp_path, 1.25, 1.35)
    df = paper_vs_reproduced(tmp_path)
    assert _row(df, "cpu_100ms")["status_paper_method"] == REPRODUCED
    _overhead(tmp_path, 1.3, 1.5)  # across the paper's 1.4
    r = _row(paper_vs_reproduced(tmp_path), "cpu_100ms")
    assert r["status_paper_method"] == CANNOT and "not decided" in r["note"]
    # the ratio to perf stat: per window, paired, with its interval
    save_table(pl.DataFrame({"interval_ms": [100.0] * 10, "process": ["collector"] * 5 + ["perf stat"] * 5,
                             "repeat": [1, 2, 3, 4, 5] * 2,
                             "pct_of_core": [1.2, 1.21, 1.19, 1.2, 1.22, 1.0, 1.0, 1.01, 0.99, 1.0]}),
               tmp_path, "measured_overhead_repeats")
    r = _row(paper_vs_reproduced(tmp_path), "cpu_vs_perf_100ms")  # 'slightly higher': 1.2x
    assert r["status_paper_method"] == REPRODUCED and "5 windows' ratios" in r["note"]
    save_table(pl.DataFrame({"interval_ms": [100.0] * 10, "process": ["collector"] * 5 + ["perf stat"] * 5,
                             "repeat": [1, 2, 3, 4, 5] * 2, "pct_of_core": [3.0] * 5 + [1.0] * 5}),
               tmp_path, "measured_overhead_repeats")
    assert _row(paper_vs_reproduced(tmp_path), "cpu_vs_perf_100ms")["status_paper_method"] == DIFFERS


def _cases(tmp: Path, lo: float, hi: float) -> None:
    save_table(pl.DataFrame({"case": ["loss:after"], "policy": ["default"], "level": ["throughput"],
                             "name": ["samples_per_s"], "n_a": [5], "n_b": [5], "rel_change": [(lo + hi) / 2],
                             "rel_lo": [lo], "rel_hi": [hi]}), tmp, "remediation_cases")


def test_no_change_needs_the_equivalence_margin(tmp_path):
    m = NO_CHANGE_MARGIN
    _cases(tmp_path, -m / 2, m / 2)
    assert _row(paper_vs_reproduced(tmp_path), "loss_throughput")["status_paper_method"] == REPRODUCED
    _cases(tmp_path, -0.2, 0.2)  # includes 0, but says nothing: not reproduced
    r = _row(paper_vs_reproduced(tmp_path), "loss_throughput")
    assert r["status_paper_method"] == CANNOT and "across the edge" in r["note"] and "3.1" in r["note"]
    _cases(tmp_path, 0.1, 0.2)
    assert _row(paper_vs_reproduced(tmp_path), "loss_throughput")["status_default"] == DIFFERS


def _anomalous(tmp: Path, rows: list[tuple[str, str, str, str]]) -> None:
    """(run_id, fault, subsystem, family) rows; an ``(any)`` row per run is added."""
    runs = {(r, f) for r, f, _, _ in rows}
    allrows = [(r, f, "(any)", "(any)") for r, f in sorted(runs)] + rows
    df = pl.DataFrame([{"run_id": r, "workload": "w", "fault": f, "host": "h", "subsystem": s, "family": fam,
                        "n_windows": 1, "seconds": 3.0, "longest_s": 3.0, "scored_s": 90.0}
                       for r, f, s, fam in allrows])
    save_table(policy_table({"paper": df, "default": df}), tmp, "anomalous_time")


def test_four_subsystems_counts_fault_free_runs_only(tmp_path):
    faulty = [("f", "packet_loss@0.01", "network", "Nstat:TcpRetransSegs"),
              ("g", "storage_read@1", "storage", "Disk:sectors_read")]
    free = [("a", "none", "cpu", "CPU:Busy%"), ("a", "none", "memory", "Memory:Dirty")]
    _anomalous(tmp_path, faulty + free)
    r = _row(paper_vs_reproduced(tmp_path), "four_subsystems")
    assert r["status_paper_method"] == DIFFERS  # network and storage only where injected
    both = [("a", "none", "network", "Nstat:TcpInSegs"), ("a", "none", "storage", "Disk:x")]
    _anomalous(tmp_path, free + both)
    assert _row(paper_vs_reproduced(tmp_path), "four_subsystems")["status_paper_method"] == REPRODUCED


def test_connection_churn_must_grow_from_01_to_02_percent(tmp_path):
    churn = ("network", "NetworkProtocolCounts:TCP_timewait")
    _anomalous(
        tmp_path,
        [
            ("a", "packet_loss@0.001", *churn),
            ("b", "packet_loss@0.002", *churn),
            ("c", "packet_loss@0.002", "cpu", "CPU:Busy%"),
        ],
    )
    assert _row(paper_vs_reproduced(tmp_path), "loss_02_churn")["status_paper_method"] == DIFFERS  # 1/2 < 1/1
    _anomalous(tmp_path, [("a", "packet_loss@0.001", "cpu", "CPU:Busy%"), ("b", "packet_loss@0.002", *churn)])
    assert _row(paper_vs_reproduced(tmp_path), "loss_02_churn")["status_paper_method"] == REPRODUCED


def _loss_summary(tmp: Path, r_loss: float, r_base: float = 0.0) -> None:
    """notebook 06's packet-loss summary: the correlation of retransmissions with Busy% per bin."""
    save_table(pl.DataFrame({"condition": ["baseline", "loss_episode"], "loss": [0.0, 0.01],
                             "bins": [1500, 99],
                             "corr_retrans_busy": [r_base, r_loss], "corr_retrans_net_rx": [0.0, 0.0]}),
               tmp, "case_packet_loss")


def test_irq_co_occurrence_needs_a_positive_correlation(tmp_path):
    _loss_summary(tmp_path, 0.45)
    r = _row(paper_vs_reproduced(tmp_path), "loss_1_irq")
    assert r["status_paper_method"] == REPRODUCED and r["ours_paper_method"] == pytest.approx(0.45)
    _loss_summary(tmp_path, 0.05)  # its interval includes 0: not decided
    assert _row(paper_vs_reproduced(tmp_path), "loss_1_irq")["status_paper_method"] == CANNOT
    _loss_summary(tmp_path, -0.4)
    assert _row(paper_vs_reproduced(tmp_path), "loss_1_irq")["status_paper_method"] == DIFFERS
    _loss_summary(tmp_path, 0.45, r_base=0.8)  # no stronger under loss than without it
    assert _row(paper_vs_reproduced(tmp_path), "loss_1_irq")["status_paper_method"] == DIFFERS


def test_compression_must_shrink_the_same_bytes():
    noise = np.random.default_rng(0).normal(size=(500, 200))
    assert compression_reading(noise, "noise").holds is False
    flat = np.repeat(np.arange(200, dtype=float)[None, :], 500, axis=0)
    assert compression_reading(flat, "flat counters").holds is True


def test_irq_rows_say_which_setting_computed_them(tmp_path):
    details = pl.DataFrame(
        {
            "case": ["irq:after"],
            "policy": ["default"],
            "level": ["metric"],
            "name": ["Softirqs:NET_RX"],
            "a_mean": [0.004],
            "b_mean": [0.005],
        }
    )
    save_table(details, tmp_path, "remediation_details")
    lab = tmp_path / "lab"
    lab.mkdir()
    pl.DataFrame({"fault": ["none", "config_irq_imbalance@1"]}).write_csv(lab / "meta_lab.csv")
    r = _row(paper_vs_reproduced(tmp_path, data=str(lab)), "irq_irq_share")
    assert r["status_paper_method"] == CANNOT and "default policy only" in r["note"]
    assert r["ours_paper_method"] is None and r["ours_default"] == pytest.approx(0.5)


def test_loss_network_default_is_not_judged_on_the_recording_it_was_tuned_on(tmp_path):
    _anomalous(tmp_path, [("a", "packet_loss@0.01", "network", "Nstat:TcpRetransSegs")])
    on_lab = _row(paper_vs_reproduced(tmp_path, data=LAB), "loss_network_top")
    assert on_lab["status_paper_method"] == REPRODUCED and on_lab["status_default"] == CANNOT
    assert "chosen on this same recording" in on_lab["note"]
    assert (
        _row(paper_vs_reproduced(tmp_path, data=str(tmp_path)), "loss_network_top")["status_default"]
        == REPRODUCED
    )


def test_prune_selected_share_is_the_per_workload_share(tmp_path):
    curve = pl.DataFrame(
        {
            "workload": ["all"],
            "threshold": [0.5],
            "n_metrics": [100],
            "n_selected": [30],
            "selected_ratio": [0.3],
            "avg_multi_r2": [0.9],
            "avg_max_abs_r": [0.9],
        }
    )
    save_table(curve, tmp_path, "fig4_pruning_curve")
    assert _row(paper_vs_reproduced(tmp_path), "prune_selected_share")["status_paper_method"] == DIFFERS
    save_table(curve.with_columns(selected_ratio=pl.lit(0.62)), tmp_path, "fig4_pruning_curve")
    assert _row(paper_vs_reproduced(tmp_path), "prune_selected_share")["status_paper_method"] == REPRODUCED


def test_public_dataset_column_judges_documented_facts(tmp_path):
    df = paper_vs_reproduced(tmp_path)
    assert _row(df, "channels_over_700")["status_public_dataset"] == REPRODUCED  # 764-794 channels
    assert _row(df, "sampling_100hz")["status_public_dataset"] == DIFFERS  # 100 ms steps
    assert _row(df, "channels_about_700")["status_public_dataset"] == CANNOT  # GPU inside, CPU above
    assert "reveal-dataset-format.md" in _row(df, "runs_per_workload")["public_dataset"]
    assert _row(df, "dtw_share")["public_dataset"] == ""


def test_setting_rows_read_what_notebook_03_ran_with(tmp_path):
    assert "not in the output" in _row(paper_vs_reproduced(tmp_path), "window_3s")["note"]
    nb = tmp_path / "notebooks"
    nb.mkdir()
    params = {"preset": "paper", "window_s": 5.0, "stride_s": 1.0}
    (nb / "03-detection.ipynb").write_text(json.dumps({"metadata": {"papermill": {"parameters": params}}}))
    df = paper_vs_reproduced(tmp_path)
    w = _row(df, "window_3s")  # the run's own window, not the code's default
    assert w["ours_paper_method"] == 5.0 and w["status_paper_method"] == DIFFERS
    assert "notebook 03" in w["note"]
    assert _row(df, "pca_variance")["ours_paper_method"] == pytest.approx(0.95)


def _label_table(tmp_path, rows):  # noqa: ANN001, ANN202
    from reveal_lab.studies._claim_model import ClaimContext

    cols = ("policy", "fault_type", "runs", "episodes", "detected", "recall", "anomalous", "in_episode",
            "precision", "space")
    (tmp_path / "tables").mkdir(exist_ok=True)
    pl.DataFrame([dict(zip(cols, r, strict=True)) for r in rows]).write_csv(
        tmp_path / "tables" / "detection_vs_labels.csv")
    return {p: ClaimContext(tmp_path, policy=p) for p in ("paper", "default")}


def test_label_rows_read_each_setting_and_can_fail(tmp_path):
    """The recall rows against labels.csv: 'five issues' needs every labelled fault kind found,
    'pruning improves accuracy' needs F1 in the pruned space above F1 in every metric; each
    setting reads its own rows, and a value that must fail does."""
    from reveal_lab.studies._claim_model import claim_status
    from reveal_lab.studies._claims import CLAIMS

    five = next(c for c in CLAIMS if c.claim_id == "five_issues_found")
    gain = next(c for c in CLAIMS if c.claim_id == "pruning_improves_accuracy")
    assert five.detection and gain.detection
    ctx = _label_table(tmp_path, [
        ("paper", "disk", 1, 2, 1, 0.5, 4, 2, 0.5, "pruned"),
        ("paper", "cpu", 1, 2, 0, 0.0, 3, 0, 0.0, "pruned"),
        ("paper", "(all)", 3, 4, 1, 0.25, 9, 2, 0.22, "pruned"),
        ("paper", "(all)", 3, 4, 2, 0.5, 9, 4, 0.44, "every metric"),
        ("default", "disk", 1, 2, 2, 1.0, 2, 2, 1.0, "pruned"),
        ("default", "cpu", 1, 2, 1, 0.5, 1, 1, 1.0, "pruned"),
        ("default", "(all)", 3, 4, 3, 0.75, 3, 3, 1.0, "pruned"),
        ("default", "(all)", 3, 4, 3, 0.75, 6, 3, 0.5, "every metric"),
    ])
    r = five.read(ctx["paper"])
    assert r.value == 0.5 and "cpu: recall 0 %" in r.note
    assert claim_status(five.rule, five.paper, r.value, five.tol) == "differs"
    r = five.read(ctx["default"])
    assert r.value == 1.0 and claim_status(five.rule, five.paper, r.value, five.tol) == "reproduced"
    g = gain.read(ctx["paper"])
    assert g.holds is False and g.value < 0
    assert claim_status(gain.rule, gain.paper, g.value, gain.tol, holds=g.holds) == "differs"
    g = gain.read(ctx["default"])
    assert g.holds is True
    assert claim_status(gain.rule, gain.paper, g.value, gain.tol, holds=g.holds) == "reproduced"
    # without the every-metric rows the gain cannot be checked, and says why
    ctx = _label_table(tmp_path, [("paper", "(all)", 3, 4, 1, 0.25, 9, 2, 0.22, "pruned")])
    assert gain.read(ctx["paper"]).value is None and "every metric" in gain.read(ctx["paper"]).note
