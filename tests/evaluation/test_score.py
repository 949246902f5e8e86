"""Scoring on hand-made detections whose answers are known."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from reveal_lab.evaluation import false_alarms, score_episodes, summarize, table_markdown
from reveal_lab.telemetry import TelemetryError

T0 = dt.datetime(2026, 11, 21, 20, 0, 0)


def t(s: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=s)


def windows(
    run: str,
    host: str,
    flagged: list[int],
    *,
    n: int = 20,
    shares: dict[int, dict] | None = None,
    baseline: bool = False,
) -> pl.DataFrame:
    """3 s windows every 1 s; ``flagged`` are window ids; ``shares`` their subsystem shares."""
    shares = shares or {}
    rows = []
    for i in range(n):
        s = shares.get(i, {})
        rows.append(
            {
                "run": run,
                "host": host,
                "window_id": i,
                "start": t(i),
                "end": t(i + 3),
                "flagged": i in flagged,
                "baseline": baseline,
                **{f"share_{k}": s.get(k) for k in ("cpu", "memory", "network", "storage")},
                "top_subsystem": max(s, key=s.get) if s else None,
            }
        )
    return pl.DataFrame(
        rows, schema_overrides={f"share_{k}": pl.Float64 for k in ("cpu", "memory", "network", "storage")}
    )


def labels(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "run": r,
                "host": h,
                "fault_type": f,
                "start": t(a),
                "end": t(b),
                "expected_subsystem": e,
                "scope": sc,
            }
            for r, h, f, a, b, e, sc in rows
        ],
        schema_overrides={"start": pl.Datetime("ms"), "end": pl.Datetime("ms")},
    )


@pytest.fixture
def case():
    w = pl.concat(
        [
            # r1/labA: cpu episode 5-10 s caught by windows 4 and 7 (cpu first), false alarm at 15
            windows(
                "r1",
                "labA",
                [4, 7, 15],
                shares={4: {"cpu": 0.7, "memory": 0.3}, 7: {"cpu": 0.6, "network": 0.4}, 15: {"memory": 1.0}},
            ),
            # r2/labA: memory episode 10-14 s caught, attributed storage > memory (top-1 wrong, top-3 right)
            windows("r2", "labA", [11], shares={11: {"storage": 0.6, "memory": 0.4}}),
            # r3/labB: network episode 2-4 s missed; its windows flagged elsewhere on the *other* host only
            windows("r3", "labB", []),
            windows("r3", "labA", [2, 3], shares={2: {"network": 1.0}, 3: {"network": 1.0}}),
            # baselines: 1 of 40 windows flagged
            windows("b1", "labA", [5], baseline=True),
            windows("b2", "labA", [], baseline=True),
        ],
        how="diagonal_relaxed",
    )
    lab = labels(
        [
            ("r1", "labA", "cpu_contention", 5, 10, "cpu", "episode"),
            ("r2", "labA", "memory_pressure", 10, 14, "memory", "episode"),
            ("r3", "labB", "packet_loss", 2, 4, "network", "episode"),
        ]
    )
    return w, lab


def test_episodes(case):
    w, lab = case
    ep = score_episodes(w, lab)
    assert ep["detected"].to_list() == [True, True, False]  # r3's hit on the other host does not count
    assert ep["top1"].to_list() == [True, False, None]
    assert ep["top3"].to_list() == [True, True, None]
    assert ep["ranking"].to_list() == ["cpu>network>memory", "storage>memory", ""]
    # windows [2,5),[3,6),...,[9,12) overlap [5,10): ids 3..9 -> 7 windows; 2 flagged
    assert ep.filter(pl.col("run") == "r1").select("n_windows", "n_flagged").row(0) == (7, 2)


def test_summary_table(case):
    w, lab = case
    ep = score_episodes(w, lab)
    tab = summarize(ep, w, lab)
    row = {r["fault_type"]: r for r in tab.iter_rows(named=True)}
    assert row["overall"]["episodes"] == 3 and row["overall"]["detected"] == 2
    assert row["overall"]["episode_recall"] == pytest.approx(2 / 3)
    assert row["cpu_contention"]["window_precision"] == pytest.approx(2 / 3)  # window 15 is a false alarm
    assert row["memory_pressure"]["window_precision"] == 1.0
    assert row["packet_loss"]["flagged_windows"] == 0 and row["packet_loss"]["window_precision"] is None
    assert row["overall"]["window_precision"] == pytest.approx(3 / 4)
    assert row["overall"]["top1_accuracy"] == 0.5 and row["overall"]["top3_accuracy"] == 1.0
    assert row["overall"]["baseline_windows"] == 40
    assert row["overall"]["false_alarm_share"] == pytest.approx(1 / 40)
    md = table_markdown(tab, title="t")
    assert md.count("\n|") == tab.height + 2 and "0.667" in md
    # false alarms per repeat (b1 is repeat 0 with its one flagged window, b2 repeat 1)
    rep = w.with_columns(repeat=pl.when(pl.col("run") == "b1").then(0).otherwise(1))
    by = false_alarms(rep, by="repeat")
    assert by.rows() == [(0, 20, 1, 0.05), (1, 20, 0, 0.0)]
    md = table_markdown(tab, title="t", by_repeat=by)
    assert "False alarms by repeat of the workload: 0: 0.050 (1/20), 1: 0.000 (0/20)" in md


def test_grace_counts_after_effects(case):
    w, lab = case
    ep = score_episodes(w, lab)
    # window 11 = [11,14) overlaps r2's episode already; window 15 = [15,18) starts 5 s after r1's end
    assert (
        summarize(ep, w, lab, grace_s=5.5).filter(pl.col("fault_type") == "cpu_contention")[
            "window_precision"
        ][0]
        == 1.0
    )


def test_run_scope_needs_a_persistent_share():
    w = pl.concat([windows("q", "labB", list(range(12))), windows("q2", "labB", [3])])
    lab = labels(
        [
            ("q", "labB", "config_cpu_quota", 0, 23, "cpu", "run"),
            ("q2", "labB", "config_cpu_quota", 0, 23, "cpu", "run"),
        ]
    )
    ep = score_episodes(w, lab, run_min_share=0.5)
    assert ep["detected"].to_list() == [True, False]  # 12/20 flagged vs 1/20



def test_overall_by_method_scores_each_label_once_by_its_own_method(case):
    """Whole-run labels missed by windows but found by cross-host deviation count once, as found,
    in the by-method row; ``overall`` is unchanged (the cross-host rows stay out of it)."""
    from reveal_lab.evaluation import OVERALL_BY_METHOD, evaluation_json

    w, lab = case
    w = pl.concat([w, windows("q", "labB", [3]), windows("q2", "labB", [])], how="diagonal_relaxed")
    run_labs = labels(
        [
            ("q", "labB", "config_cpu_quota", 0, 23, "cpu", "run"),
            ("q2", "labB", "config_cpu_quota", 0, 23, "cpu", "run"),
        ]
    )
    lab = pl.concat([lab, run_labs])
    ep = score_episodes(w, lab).with_columns(method=pl.lit("windows"))
    cross = pl.DataFrame(  # cross-host deviation found q (cpu first) and missed q2
        {
            "run": ["q", "q2"],
            "host": ["labB", "labB"],
            "fault_type": ["config_cpu_quota [cross-host]"] * 2,
            "scope": ["run", "run"],
            "expected_subsystem": ["cpu", "cpu"],
            "detected": [True, False],
            "top1": [True, None],
            "top3": [True, None],
            "method": ["crosshost", "crosshost"],
            "in_overall": [False, False],
        }
    )
    tab = summarize(pl.concat([ep, cross], how="diagonal_relaxed"), w, lab)
    row = {r["fault_type"]: r for r in tab.iter_rows(named=True)}
    assert row["overall"]["episodes"] == 5 and row["overall"]["detected"] == 2  # windows find neither q
    by = row[OVERALL_BY_METHOD]
    assert (by["episodes"], by["detected"]) == (5, 3)
    assert by["top1_accuracy"] == pytest.approx(2 / 3)  # r1 right, r2 wrong, q right
    assert by["false_alarm_share"] == row["overall"]["false_alarm_share"]
    assert tab["fault_type"].to_list()[-2:] == ["overall", OVERALL_BY_METHOD]
    js = evaluation_json(pl.concat([ep, cross], how="diagonal_relaxed"), w, tab)
    assert js["overall_by_method"]["episode_recall"] == pytest.approx(3 / 5)
    assert OVERALL_BY_METHOD not in js["fault_types"]
    # no cross-host rows: no by-method row
    assert OVERALL_BY_METHOD not in summarize(ep, w, lab)["fault_type"].to_list()

def test_false_alarms_by_workload():
    w = pl.concat(
        [
            windows("b1", "labA", [1, 2], baseline=True).with_columns(workload=pl.lit("A")),
            windows("b2", "labA", [], baseline=True).with_columns(workload=pl.lit("B")),
            windows("r", "labA", [1, 2, 3]).with_columns(workload=pl.lit("A")),
        ]
    )
    fa = false_alarms(w, by="workload")
    assert fa.select("workload", "baseline_windows", "flagged").rows() == [("A", 20, 2), ("B", 20, 0)]
    assert fa["false_alarm_share"].to_list() == [0.1, 0.0]


def test_bad_input_names_the_missing_column(case):
    w, lab = case
    with pytest.raises(TelemetryError, match="flagged"):
        score_episodes(w.drop("flagged"), lab)
    with pytest.raises(TelemetryError, match="expected_subsystem"):
        score_episodes(w, lab.drop("expected_subsystem"))


def test_score_auc_is_threshold_free(case):
    w, lab = case
    # combined score: high exactly on the windows overlapping r1's episode [5, 10)
    w = w.with_columns(
        combined=pl.when((pl.col("run") == "r1") & (pl.col("start") < t(10)) & (pl.col("end") > t(5)))
        .then(2.0)
        .otherwise(1.0)
    )
    lab1 = lab.filter(pl.col("run") == "r1")
    tab = summarize(score_episodes(w, lab1), w, lab1)
    assert tab["score_auc"].to_list() == [1.0, 1.0]
    w = w.with_columns(combined=pl.lit(1.0))  # no signal at all
    assert summarize(score_episodes(w, lab1), w, lab1)["score_auc"][0] == 0.5
    assert (
        summarize(score_episodes(w.drop("combined"), lab1), w.drop("combined"), lab1)["score_auc"][0] is None
    )


def test_persistent_keeps_only_runs_of_k_consecutive_flagged_windows():
    from reveal_lab.evaluation import persistent

    # host a: ids 0-5 with a gap after id 2 (ids 0,1,2, then 4,5,6); host b interleaved, shuffled order
    w = pl.DataFrame(
        {
            "run": ["r"] * 10,
            "host": ["a", "b", "a", "b", "a", "b", "a", "a", "a", "b"],
            "window_id": [0, 0, 1, 1, 2, 2, 4, 5, 6, 3],
            "flagged": [False, True, True, True, True, False, True, False, True, True],
        }
    )
    out = persistent(w, 2)
    assert out["window_id"].to_list() == w["window_id"].to_list()  # row order kept
    # a: 1,2 consecutive -> kept; 4 alone (5 unflagged), 6 alone -> dropped
    # b: 0,1 kept; 3 alone after the unflagged 2 -> dropped
    assert out["flagged"].to_list() == [False, True, True, True, True, False, False, False, False, False]
    # ids 2 and 4 of host a are not consecutive: the jump breaks a run
    gap = pl.DataFrame({"run": ["r"] * 2, "host": ["a"] * 2, "window_id": [2, 4], "flagged": [True, True]})
    assert persistent(gap, 2)["flagged"].to_list() == [False, False]
    assert persistent(w, 1).equals(w)
    assert persistent(w, 3)["flagged"].sum() == 0
    with pytest.raises(ValueError, match="at least 1"):
        persistent(w, 0)


def test_recall_at_matched_false_alarms_known_answer():
    """100 fault-free windows scored 0..99 and a fault run: at 1 % the threshold is the
    99th of them (98.01 → higher: 99), so only windows above 99 are flagged."""
    from reveal_lab.evaluation import recall_at_false_alarms

    t0 = dt.datetime(2025, 1, 1)
    ts = [t0 + dt.timedelta(seconds=i) for i in range(103)]
    w = pl.DataFrame(
        {
            "run": ["base"] * 100 + ["fault"] * 3,
            "host": "h",
            "start": ts,
            "end": ts,
            "baseline": [True] * 100 + [False] * 3,
            "combined": [float(i) for i in range(100)] + [50.0, 99.0, 150.0],
        }
    )
    ep = pl.DataFrame(
        {
            "run": ["fault"] * 3,
            "host": "h",
            "scope": "episode",
            "start": ts[100:],
            "end": ts[100:],
            "method": "windows",
        }
    )
    at = recall_at_false_alarms(w, ep, 0.01)
    assert at["threshold"] == 99.0 and at["false_alarm_share"] == 0.0
    assert at["recall"] == pytest.approx(1 / 3) and at["episodes"] == 3
    assert recall_at_false_alarms(w, ep, 0.6)["threshold"] == 40.0  # 60 % may be flagged: all found
    assert recall_at_false_alarms(w, ep, 0.6)["recall"] == 1.0
