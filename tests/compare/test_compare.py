"""The remediation comparison on synthetic runs whose difference is known."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from reveal_lab.compare import COMPARE_COLUMNS, RunSpec, bootstrap_compare, compare_runs, table_markdown
from reveal_lab.pipeline import POLICIES
from reveal_lab.synth import Anomaly, make_run


def test_bootstrap_finds_a_known_difference_and_no_difference():
    rng = np.random.default_rng(1)
    a = rng.normal(0.02, 0.005, size=(6, 1))
    b = rng.normal(0.06, 0.005, size=(5, 1))
    r = bootstrap_compare(a, b, n_boot=2000, seed=3)
    assert r["diff_lo"][0] > 0.03 and r["diff_hi"][0] < 0.05  # the true difference is 0.04
    assert r["a_lo"][0] <= r["a_mean"][0] <= r["a_hi"][0]
    assert r["rel_lo"][0] > 1.0  # B about three times A
    same = bootstrap_compare(a, a + rng.normal(0, 0.001, size=a.shape), n_boot=2000, seed=3)
    assert same["diff_lo"][0] < 0 < same["diff_hi"][0]
    again = bootstrap_compare(a, b, n_boot=2000, seed=3)
    assert again["diff_lo"][0] == r["diff_lo"][0]  # seeded: the same intervals every time
    zero = bootstrap_compare(np.zeros((3, 1)), np.ones((3, 1)), n_boot=200)
    assert np.isnan(zero["rel_change"][0]) and np.isnan(zero["rel_lo"][0])  # no relative change from 0
    with pytest.raises(ValueError, match="equal features"):
        bootstrap_compare(np.zeros((3, 2)), np.zeros((3, 1)))


def _spec(i: int, anomaly: bool, thr: float) -> RunSpec:
    an = [Anomaly("network", 15.0, 45.0, kind="level", magnitude=12.0, n_columns=6)] if anomaly else []
    run, _ = make_run(60, n_channels=120, seed=100 + i, profile_seed=7, anomalies=an, run_id=f"r{i}")
    return RunSpec(f"r{i}", f"r{i}", thr, run=run)


@pytest.mark.slow
def test_compare_runs_sees_the_planted_network_fault(tmp_path):
    a = [_spec(i, False, 100.0 + i) for i in range(4)]
    b = [_spec(10 + i, True, 80.0 + i) for i in range(4)]
    # the utilisation rule (trim active, asked: synthetic runs have no recorded span) keeps the healthy
    # side near the false-alarm rate (whole runs: 0.16 of A's windows flagged by any one detector)
    active = POLICIES["default"].with_(trim="active")
    # the smoke preset (fewer trees): the shares checked below are the paper preset's
    kw = {"a_label": "healthy", "b_label": "network fault", "policy": active, "preset": "smoke"}
    cmp = compare_runs(a, b, n_boot=1000, **kw)
    t = cmp.table
    assert t.columns == list(COMPARE_COLUMNS)
    row = {(r["level"], r["name"]): r for r in t.iter_rows(named=True)}
    net = row[("subsystem", "network")]
    assert net["n_a"] == 4 and net["n_b"] == 4
    assert net["diff_lo"] > 0.1  # half of B's windows lie in the fault, A's are near the false-alarm rate
    assert row[("any", "any")]["a_mean"] < 0.1
    thr = row[("throughput", "samples_per_s")]
    assert thr["diff"] == pytest.approx(-20.0) and thr["diff_hi"] < 0
    metrics = t.filter(pl.col("level") == "metric").sort("diff", descending=True)
    assert metrics.height and metrics["diff"][0] > 0
    md = table_markdown(t, config=cmp.config)
    assert "| subsystem | network |" in md and "healthy" in md
    paths = cmp.write(tmp_path)
    assert paths["csv"].exists() and paths["figure_png"].stat().st_size > 1000
    assert pl.read_csv(paths["runs"])["side"].to_list() == ["a"] * 4 + ["b"] * 4


def test_compare_rejects_bad_input(tmp_path):
    a = [RunSpec("x", "x", run=None)]
    with pytest.raises(ValueError, match="reference"):
        compare_runs(a, a, reference="b")
    with pytest.raises(ValueError, match="both sides"):
        compare_runs(a, a)
    from reveal_lab.compare import resolve_runs

    with pytest.raises(FileNotFoundError, match="neither a file"):
        resolve_runs(["no_such_run"], tmp_path)
    from reveal_lab.io import META_COLUMNS
    from reveal_lab.telemetry import TelemetryError

    row = ["./train_separated/a.parquet"] + ["1"] * (len(META_COLUMNS) - 1)
    (tmp_path / "meta_lab.csv").write_text(",".join(META_COLUMNS) + "\n" + ",".join(row) + "\n")
    with pytest.raises(TelemetryError, match="no column 'case'"):
        resolve_runs(["case=irq:after"], tmp_path)
    with pytest.raises(TelemetryError, match="matches no run"):
        resolve_runs(["phase=infer"], tmp_path)
    assert resolve_runs(["n_rows=1"], tmp_path)[0].path.endswith("train_separated/a.parquet")


def test_case_study_runs_fall_back_to_the_v1_pairs():
    from reveal_lab.compare import case_study_runs
    from reveal_lab.config import data_dir
    from reveal_lab.io import read_meta

    meta = read_meta(data_dir() / "meta_lab.csv")
    pairs = case_study_runs(max_runs_per_side=3)
    if "case" in meta.columns and meta["case"].cast(pl.String).str.ends_with(":after").any():
        assert pairs and all(k.startswith("case=") for k in pairs)  # v2 data: its own case studies
    else:  # v1 data: fault-free DDP runs against the packet-loss and quota runs
        assert set(pairs) == {"fault^=packet_loss", "fault^=config_cpu_quota"}
    for a, b in pairs.values():
        assert len({s.group for s in a}) == 3 and len({s.group for s in b}) == 3
        assert all(s.throughput and s.span for s in a + b)
        assert not {s.path for s in a} & {s.path for s in b}


def test_compare_cli_says_what_is_wrong(capsys):
    from reveal_lab.cli import main

    assert main(["compare", "no_such_run", "--vs", "case=irq:after"]) == 1
    assert "neither a file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["compare", "a"])  # --vs is required


@pytest.mark.slow
def test_compare_cases_scores_shared_runs_once_with_equal_tables(tmp_path, monkeypatch):
    import reveal_lab.compare._compare as cmp_mod
    from reveal_lab.compare import compare_cases
    from reveal_lab.io import write_parquet_run

    def spec(i: int, anomaly: bool) -> RunSpec:
        s = _spec(i, anomaly, 100.0 + i)
        path = write_parquet_run(s.run, tmp_path / f"r{i}.parquet")
        return RunSpec(str(path), s.group, s.throughput)

    a = [spec(i, False) for i in range(3)]
    cases = {"x": (a, [spec(10, True), spec(11, True)]), "y": (a, [spec(20, True), spec(21, False)])}
    # the smoke preset (fewer trees): what is checked is that sharing gives the tables scoring alone gives
    kw = {"n_boot": 200, "preset": "smoke", "policy": POLICIES["default"].with_(trim="active")}
    alone = {c: compare_runs(sa, sb, a_label="A", b_label=c, **kw) for c, (sa, sb) in cases.items()}
    calls = []
    real = cmp_mod.run_shares
    monkeypatch.setattr(cmp_mod, "run_shares", lambda det, group: calls.append(group) or real(det, group))
    shared = compare_cases(cases, a_label="A", **kw)
    assert len(calls) == 3 + 2 + 2  # side A's three runs once, each case's B runs
    for c in cases:
        assert shared[c].table.equals(alone[c].table)
        assert shared[c].shares.sort(pl.all()).equals(alone[c].shares.sort(pl.all()))  # rows in any order
        assert shared[c].config == alone[c].config and shared[c].failures == alone[c].failures
