"""Table 4 as the paper's (one row per anomalous window, its strongest pair), the §5.6
subsystem shares and Fig. 2's flag frame, checked against values worked out here."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from reveal_lab.studies import evidence_by_subsystem, flag_timelines, labelled_episodes, paper_table4

T0 = dt.datetime(2026, 1, 1, 10, 32, 5)


def _evidence() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "run_id": ["r"] * 5,
            "host": ["h"] * 5,
            "window_id": [37, 37, 38, 400, 400],
            "start": [T0, T0, T0 + dt.timedelta(seconds=1), T0 + dt.timedelta(seconds=369)] * 1
            + [T0 + dt.timedelta(seconds=369)],
            "methods": ["zscore", "zscore", "iforest,mahalanobis", "mahalanobis", "mahalanobis"],
            "agreement": [1, 1, 2, 1, 1],
            "subsystem": ["cpu", "memory", "cpu", "storage", "cpu"],
            "metric": ["Busy%", "Dirty", "Bzy_MHz", "sectors_read", "IRQ"],
            "feature": ["var", "mean", "acf1", "max", "sum"],
            "score": [0.6, 0.4, 0.9, 0.7, 0.3],
            "claim": ["c1", "c2", "c3", "c4", "c5"],
        }
    )


def test_table4_one_row_per_window_with_its_strongest_pair():
    """Broken variant: every evidence row kept (no per-window top pair)."""
    t = paper_table4(_evidence())
    assert t["window"].to_list() == [37, 38, 400]
    assert t["metric_feature"].to_list() == ["Busy% · var", "Bzy_MHz · acf1", "sectors_read · max"]
    assert t["timestamp"].to_list() == ["10:32:05", "10:32:06", "10:38:14"]
    assert t["methods"].to_list() == ["zscore", "iforest+mahalanobis", "mahalanobis"]
    assert paper_table4(_evidence(), agreement_at_least=2)["window"].to_list() == [38]


def test_evidence_shares():
    e = evidence_by_subsystem(_evidence())
    assert e.select("subsystem", "pairs").rows() == [("cpu", 3), ("memory", 1), ("storage", 1)]
    assert e["share"].to_list() == pytest.approx([0.6, 0.2, 0.2])


def test_flag_timelines_and_episodes():
    w = pl.DataFrame(
        {
            "run_id": ["r_h", "r_h"],
            "host": ["h", "h"],
            "start": [T0, T0 + dt.timedelta(seconds=1)],
            "end": [T0 + dt.timedelta(seconds=3), T0 + dt.timedelta(seconds=4)],
            "score_zscore": [1.0, 5.0],
            "label_zscore": [0, 1],
        }
    )
    f = flag_timelines(w)
    assert f.columns == ["run", "host", "start", "end", "score_zscore", "flag_zscore"]
    assert f["flag_zscore"].to_list() == [False, True]
    labels = pl.DataFrame(
        {"run": ["r", "x"], "host": ["h", "h"], "fault_type": ["cpu", "cpu"], "start": [T0, T0], "end": [T0, T0]}
    )
    ep = labelled_episodes(labels, ["r_h"])
    assert ep["run"].to_list() == ["r_h"] and ep["fault_type"].to_list() == ["cpu"]
