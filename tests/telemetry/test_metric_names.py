"""The metric-name grammar on every fixture column and on the spellings the dataset uses."""

from __future__ import annotations

import pytest

from reveal_lab.io._sample import sample_columns
from reveal_lab.telemetry import MetricName, format_metric_name, parse_metric_name, sanitize_host

FIXTURE_COLUMNS = {"gpu": sample_columns("gpu"), "cpu": sample_columns("cpu")}
ALL_COLUMNS = FIXTURE_COLUMNS["gpu"] + FIXTURE_COLUMNS["cpu"]


def test_fixture_has_the_expected_column_sets() -> None:
    assert len(FIXTURE_COLUMNS["gpu"]) == 2 * 84  # two GPU hosts, 84 metrics each
    assert len(FIXTURE_COLUMNS["cpu"]) == 3 * 57  # three CPU hosts
    assert any(c.startswith("GPU: ") for c in FIXTURE_COLUMNS["gpu"])
    assert any(c.startswith("Storage_diff:") for c in FIXTURE_COLUMNS["cpu"])


@pytest.mark.parametrize("column", ALL_COLUMNS)
def test_every_fixture_column_roundtrips(column: str) -> None:
    m = parse_metric_name(column)
    assert m is not None, column
    assert m.format() == column
    assert parse_metric_name(m.format()) == m
    assert m.host in {"htc-g003", "htc-g004", "nserver07", "nserver08", "nserver15"}


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        ("GPU: utilization.gpu.0.htc-g004[%]", ("GPU", "utilization.gpu", "0", "htc-g004", "%", False)),
        (
            "GPU: ecc.errors.corrected.volatile.dram.1.htc-g003[count]",
            ("GPU", "ecc.errors.corrected.volatile.dram", "1", "htc-g003", "count", False),
        ),
        ("Turbostat:Busy%.-.nserver07[%]", ("Turbostat", "Busy%", "-", "nserver07", "%", False)),
        ("Turbostat:Bzy_MHz.23.nserver15[MHz]", ("Turbostat", "Bzy_MHz", "23", "nserver15", "MHz", False)),
        (
            "NetworkInterStat_diff:rx_bytes.ib0.htc-g004[Bytes]",
            ("NetworkInterStat", "rx_bytes", "ib0", "htc-g004", "Bytes", True),
        ),
        (
            "NetworkInterStat_diff:NetworkUtilization.enp1s0f0np0.nserver07[%]",
            ("NetworkInterStat", "NetworkUtilization", "enp1s0f0np0", "nserver07", "%", True),
        ),
        (
            "Storage:time_spent_reading_(ms).htc-g004[ms]",
            ("Storage", "time_spent_reading_(ms)", None, "htc-g004", "ms", False),
        ),
        (
            "Meminfo_diff:MemAvailable.nserver07[kB]",
            ("Meminfo", "MemAvailable", None, "nserver07", "kB", True),
        ),
        ("Perf:IPC.nserver07[-]", ("Perf", "IPC", None, "nserver07", "-", False)),
    ],
)
def test_parts(column: str, expected: tuple) -> None:
    m = parse_metric_name(column)
    assert (m.source, m.field, m.instance, m.host, m.unit, m.diff) == expected
    assert m.full_source == expected[0] + ("_diff" if expected[5] else "")


def test_key_is_host_free() -> None:
    a = parse_metric_name("NetworkInterStat_diff:rx_bytes.ib0.htc-g004[Bytes]")
    b = parse_metric_name("NetworkInterStat_diff:rx_bytes.ib0.htc-g003[Bytes]")
    assert a.key() == b.key() == "NetworkInterStat_diff:rx_bytes.ib0"
    assert a.with_host("htc-g003") == b


@pytest.mark.parametrize(
    "bad", ["", "timestamp", "no colon here", "Perf:", ":x.h[-]", "Perf:IPC[-]", None, 3]
)
def test_unparsable_names_return_none(bad) -> None:
    assert parse_metric_name(bad) is None


def test_format_refuses_dotted_host_and_sanitize_fixes_it() -> None:
    with pytest.raises(ValueError, match="contains a dot"):
        format_metric_name(MetricName("Perf", "IPC", host="a.b"))
    assert sanitize_host(" node1.cluster[0] ") == "node1-cluster-0"
    with pytest.raises(ValueError, match="empty"):
        sanitize_host("...")
