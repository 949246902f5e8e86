"""The metric registry: every fixture column gets a known subsystem and kind."""

from __future__ import annotations

import polars as pl
import pytest

from reveal_lab.io._sample import sample_columns
from reveal_lab.telemetry import (
    KINDS,
    SUBSYSTEMS,
    UNSCORED_KINDS,
    MetricRegistry,
    MetricRule,
    catalogue,
    classify,
    register_metric,
)

FIXTURE_COLUMNS = {"gpu": sample_columns("gpu"), "cpu": sample_columns("cpu")}
ALL_COLUMNS = FIXTURE_COLUMNS["gpu"] + FIXTURE_COLUMNS["cpu"]


@pytest.mark.parametrize("platform", ["gpu", "cpu"])
def test_catalogue_assigns_every_fixture_column(platform: str) -> None:
    cat = catalogue(["timestamp", *FIXTURE_COLUMNS[platform]])
    assert cat.height == len(FIXTURE_COLUMNS[platform])  # the timestamp is not a metric
    assert cat.get_column("parsed").all() and cat.get_column("known").all()
    assert set(cat.get_column("subsystem")) <= set(SUBSYSTEMS)
    assert set(cat.get_column("kind")) <= set(KINDS)
    assert cat.null_count().select("subsystem", "kind").row(0) == (0, 0)


def test_subsystems_cover_the_column_families() -> None:
    cat = catalogue(ALL_COLUMNS)
    sub = dict(zip(cat.get_column("column"), cat.get_column("subsystem"), strict=True))
    kind = dict(zip(cat.get_column("column"), cat.get_column("kind"), strict=True))
    assert sub["GPU: power.draw.0.htc-g004[W]"] == "gpu"
    assert sub["Turbostat:Busy%.-.nserver07[%]"] == "cpu"
    assert sub["Perf:Mem-loads.htc-g003[count]"] == "memory"
    assert sub["Meminfo_diff:MemAvailable.nserver07[kB]"] == "memory"
    assert sub["Storage_diff:sectors_read.nserver15[sectors]"] == "storage"
    assert sub["Storage:sectors_read.htc-g004[sectors]"] == "storage"
    assert sub["NetworkInterStat_diff:rx_bytes.ib0.htc-g004[Bytes]"] == "network"
    assert sub["NetworkProtocolCounts:TCP.nserver08[count]"] == "network"
    assert kind["NetworkTCPRetrans_diff:TcpRetransSegs.nserver08[count]"] == "counter"
    assert kind["GPU: ecc.errors.corrected.volatile.dram.1.htc-g003[count]"] == "counter"
    assert kind["Memory:MemTotal.nserver07[kB]"] == "static"
    assert kind["Turbostat:TSC_MHz.-.htc-g004[MHz]"] == "static"
    assert kind["GPU: utilization.gpu.0.htc-g004[%]"] == "dynamic"
    assert set(cat.get_column("subsystem")) == {"cpu", "gpu", "memory", "network", "storage"}


def test_the_collectors_own_telemetry_is_an_instrument_and_gets_no_features() -> None:
    """``Collector:lag`` (it grows when a storage burst or a full run queue stalls the collector),
    ``missed_ticks`` and ``cpu_time`` describe the instrument: kind ``instrument``, no window
    features, so no anomaly is ever attributed to them."""
    from reveal_lab.features import feature_plan

    cols = ["Collector:lag.h[us]", "Collector_diff:missed_ticks.h[count]", "Collector_diff:cpu_time.h[us]",
            "Storage_diff:sectors_read.h[sectors]"]  # fmt: skip
    cat = catalogue(cols)
    assert cat["kind"].to_list() == ["instrument", "instrument", "instrument", "dynamic"]
    assert "instrument" in KINDS and set(UNSCORED_KINDS) == {"static", "instrument", "smoothed"}
    pairs, excluded = feature_plan(cat)
    assert set(pairs["metric"]) == {"Storage_diff:sectors_read.h[sectors]"}
    assert set(excluded["metric"]) == set(cols[:3])
    assert set(excluded["reason"]) == {"the collector's own telemetry: data quality, not the host's state"}
    # every kind left unscored gets features from nobody, with its reason
    unscored = ["Memory:MemTotal.h[kB]", "Collector:lag.h[us]", "System:loadavg5.h[-]"]
    _, both = feature_plan(catalogue(unscored))
    assert set(both["kind"]) == set(UNSCORED_KINDS) and both["reason"].null_count() == 0


def test_load_averages_are_smoothed_not_scored() -> None:
    """The kernel's 1-, 5- and 15-minute load averages carry minutes of the past: after a busy
    hour they drift down through a calm run, and after any change they keep deviating for
    minutes, so they are left out of window scoring (``smoothed``); the run queue they average
    and the 10-second pressure averages are scored."""
    from reveal_lab.features import feature_plan

    cols = ["System:loadavg1.h[-]", "System:loadavg5.h[-]", "System:loadavg15.h[-]",
            "System:threads_runnable.h[count]", "PSI:cpu_some_avg10.h[%]"]  # fmt: skip
    assert catalogue(cols)["kind"].to_list() == ["smoothed"] * 3 + ["dynamic", "dynamic"]
    pairs, excluded = feature_plan(catalogue(cols))
    assert set(pairs["metric"]) == set(cols[3:])
    assert set(excluded["metric"]) == set(cols[:3])


def test_unknown_names_fall_back_without_crashing() -> None:
    info = classify("Habana:utilization.0.h1[%]")
    assert (info.subsystem, info.kind, info.known) == ("system", "dynamic", False)
    cat = catalogue(["free text", "Perf:IPC.h1[-]"])
    assert cat.filter(pl.col("column") == "free text").select("parsed", "known", "subsystem").row(0) == (
        False,
        False,
        "system",
    )


def test_registry_is_extensible_for_new_hardware() -> None:
    rule = register_metric("Habana", subsystem="gpu", description="Gaudi hl-smi")
    try:
        assert classify("Habana:utilization.0.h1[%]").subsystem == "gpu"
        assert classify("Habana:utilization.0.h1[%]").known
    finally:
        from reveal_lab.telemetry import DEFAULT_REGISTRY

        DEFAULT_REGISTRY.rules.remove(rule)
    assert not classify("Habana:utilization.0.h1[%]").known
    reg = MetricRegistry([MetricRule("Perf", subsystem="cpu")])
    assert classify("Perf:IPC.h[-]", registry=reg).subsystem == "cpu"
    assert classify("GPU: power.draw.0.h[W]", registry=reg).known is False
    with pytest.raises(ValueError, match="unknown subsystem"):
        MetricRule("X", subsystem="disk")
