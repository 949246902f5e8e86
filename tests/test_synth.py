"""The synthetic telemetry generator: grammar, determinism, planted anomalies."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from reveal_lab.synth import Anomaly, make_run
from reveal_lab.telemetry import catalogue, validate_frame


def test_frame_is_canonical_and_classified():
    run, truth = make_run(30, n_channels=700, seed=3)
    validate_frame(run.frame, strict_names=True)
    assert run.frame.height == 300 and run.frame.width == 701
    cat = catalogue(run.frame.columns)
    assert cat["known"].all(), cat.filter(~pl.col("known"))["column"].to_list()
    assert set(cat["subsystem"]) == {"cpu", "gpu", "memory", "network", "storage"}
    assert set(cat["kind"]) == {"dynamic", "counter", "static"}
    # per-core channels exist, static channels are constant, counters are sparse
    assert cat.filter(pl.col("instance") == "40").height > 0
    for c in cat.filter(pl.col("kind") == "static")["column"]:
        assert run.frame[c].n_unique() == 1
    counters = cat.filter(pl.col("kind") == "counter")["column"].to_list()
    assert np.mean(run.frame.select(counters).to_numpy() == 0) > 0.9
    assert truth.height == 0


def test_small_channel_count_covers_every_subsystem():
    run, _ = make_run(5, n_channels=40, seed=0)
    assert run.frame.width == 41
    assert set(catalogue(run.frame.columns)["subsystem"]) >= {"cpu", "gpu", "memory", "network", "storage"}


def test_seeded_and_periodic():
    a, _ = make_run(20, n_channels=100, seed=7)
    b, _ = make_run(20, n_channels=100, seed=7)
    c, _ = make_run(20, n_channels=100, seed=8)
    assert a.frame.equals(b.frame)
    assert not a.frame.equals(c.frame)
    # the training-step period shows in GPU utilization's autocorrelation
    x = a.frame["GPU: utilization.gpu.0.nserver07[%]"].to_numpy()
    lag = int(round(a.meta.extra["step_period_s"] / 0.1))
    x = x - x.mean()
    assert np.corrcoef(x[:-lag], x[lag:])[0, 1] > 0.5


@pytest.mark.parametrize("kind", ["level", "variance", "trend", "oscillation"])
def test_anomaly_perturbs_only_its_span(kind):
    clean, _ = make_run(40, n_channels=200, seed=5)
    run, truth = make_run(40, n_channels=200, seed=5, anomalies=[Anomaly("storage", 10, 20, kind=kind)])
    assert set(truth["subsystem"]) == {"storage"} and truth.height == 4
    for col in truth["column"]:
        d = np.abs(run.frame[col].to_numpy() - clean.frame[col].to_numpy())
        assert d[:100].max() == 0 and d[200:].max() == 0
        assert d[100:200].max() > 0
    untouched = [c for c in clean.frame.columns if c not in set(truth["column"]) and c != "timestamp"]
    assert run.frame.select(untouched).equals(clean.frame.select(untouched))


def test_multi_host_static_gaps_and_jitter():
    run, truth = make_run(
        30,
        n_channels=120,
        hosts=["h1", "h2", "h3"],
        seed=2,
        gaps=[(10, 12)],
        jitter_ms=20,
        anomalies=[Anomaly("memory", 0, 0, kind="static", host="h2", n_columns=1)],
    )
    validate_frame(run.frame, strict_names=True)
    assert run.meta.hosts == ("h1", "h2", "h3") and run.frame.width == 1 + 3 * 120
    assert run.frame.height == 300 - 20
    col = truth["column"][0]
    assert col.endswith(".h2[" + col.split("[")[-1]) and run.frame[col].n_unique() == 1
    other = col.replace(".h2[", ".h1[")
    assert run.frame[col][0] != run.frame[other][0]


def test_bad_anomalies_raise():
    with pytest.raises(ValueError, match="subsystem"):
        Anomaly("disk", 0, 1)
    with pytest.raises(ValueError, match="end_s"):
        Anomaly("cpu", 5, 5)
    with pytest.raises(ValueError, match="host"):
        make_run(5, n_channels=50, anomalies=[Anomaly("cpu", 1, 2, host="nohost")])
