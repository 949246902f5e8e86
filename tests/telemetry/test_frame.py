"""The canonical frame: validation, wide <-> long, per-host splitting (DataFrame and LazyFrame)."""

from __future__ import annotations

import datetime as dt
import warnings

import polars as pl
import pytest

from reveal_lab.telemetry import (
    TIMESTAMP_DTYPE,
    Run,
    RunMeta,
    TelemetryError,
    frame_hosts,
    metric_columns,
    split_hosts,
    to_long,
    to_wide,
    validate_frame,
)


@pytest.fixture(scope="module")
def two_host_run() -> Run:
    from reveal_lab.io import open_dataset
    from reveal_lab.io._sample import sample_dir
    from reveal_lab.telemetry import TelemetryWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        return open_dataset(sample_dir()).load(
            "train_BERTLARGEforTextClassification_imdb_2025-06-05T14-20-31_nserver07"
        )


def _frame(n: int = 5) -> pl.DataFrame:
    t0 = dt.datetime(2025, 4, 26, 13, 38, 18, 600000)
    return pl.DataFrame(
        {
            "timestamp": [t0 + dt.timedelta(milliseconds=100 * i) for i in range(n)],
            "Perf:IPC.h1[-]": [float(i) for i in range(n)],
            "GPU: power.draw.0.h1[W]": [None, *[200.0 + i for i in range(1, n)]],
            "Perf:IPC.h2[-]": [0.5] * n,
        },
        schema_overrides={"timestamp": TIMESTAMP_DTYPE},
    )


@pytest.mark.parametrize("lazy", [False, True])
def test_validate_accepts_canonical(lazy: bool) -> None:
    f = _frame().lazy() if lazy else _frame()
    assert validate_frame(f, strict_names=True) is f


@pytest.mark.parametrize("lazy", [False, True])
def test_validate_schema_errors_name_the_column(lazy: bool) -> None:
    f = _frame()
    cases = [
        (f.rename({"timestamp": "time"}), "no 'timestamp' column", None),
        (f.with_columns(pl.col("timestamp").cast(pl.Datetime("us"))), "timestamp must be", "timestamp"),
        (f.with_columns(pl.col("Perf:IPC.h1[-]").cast(pl.Int64)), "must be Float64", "Perf:IPC.h1[-]"),
        (f.with_columns(pl.lit(1.0).alias("free text")), "does not follow", "free text"),
    ]
    for bad, msg, col in cases:
        with pytest.raises(TelemetryError, match=msg) as e:
            validate_frame(bad.lazy() if lazy else bad, source="run.txt", strict_names=True)
        assert e.value.column == col and "run.txt" in str(e.value)


def test_validate_time_order_errors() -> None:
    f = _frame()
    ts = f.get_column("timestamp")
    dup = f.with_columns(pl.Series("timestamp", [ts[0], ts[1], ts[1], ts[3], ts[4]], dtype=TIMESTAMP_DTYPE))
    with pytest.raises(TelemetryError, match="duplicate timestamp at row 2"):
        validate_frame(dup)
    back = f.with_columns(pl.Series("timestamp", [ts[0], ts[2], ts[1], ts[3], ts[4]], dtype=TIMESTAMP_DTYPE))
    with pytest.raises(TelemetryError, match="non-monotonic timestamp at row 2"):
        validate_frame(back)
    nul = f.with_columns(pl.Series("timestamp", [ts[0], None, ts[2], ts[3], ts[4]], dtype=TIMESTAMP_DTYPE))
    with pytest.raises(TelemetryError, match="null timestamp at row 1"):
        validate_frame(nul)


@pytest.mark.parametrize("lazy", [False, True])
def test_wide_long_roundtrip(lazy: bool) -> None:
    f = _frame()
    long = to_long(f.lazy() if lazy else f)
    assert isinstance(long, pl.LazyFrame) is lazy
    long_df = long.collect() if lazy else long
    assert long_df.columns == ["timestamp", "metric", "value"]
    assert long_df.height == f.height * len(metric_columns(f))
    assert long_df.get_column("value").null_count() == 1  # nulls are kept
    back = to_wide(long)
    assert back.equals(f)


def test_wide_long_roundtrip_on_fixture_run(two_host_run) -> None:
    f = two_host_run.frame
    assert to_wide(to_long(f)).equals(f)
    assert to_wide(to_long(f.lazy())).equals(f)


def test_split_hosts_on_a_frame() -> None:
    f = _frame()
    assert frame_hosts(f) == ["h1", "h2"]
    assert frame_hosts(f.lazy()) == ["h1", "h2"]
    parts = split_hosts(f)
    assert list(parts) == ["h1", "h2"]
    assert parts["h1"].columns == ["timestamp", "Perf:IPC.h1[-]", "GPU: power.draw.0.h1[W]"]
    assert parts["h2"].columns == ["timestamp", "Perf:IPC.h2[-]"]
    single = split_hosts(parts["h2"])
    assert list(single) == ["h2"] and single["h2"].equals(parts["h2"])


def test_split_hosts_on_the_two_host_fixture(two_host_run) -> None:
    parts = two_host_run.split_hosts()
    assert list(parts) == ["nserver07", "nserver08"]
    for host, run in parts.items():
        validate_frame(run.frame, strict_names=True)
        assert frame_hosts(run.frame) == [host]
        assert run.run_id == f"{two_host_run.run_id}@{host}"
        assert run.meta.model == "BERTLARGE"
    n07, n08 = parts["nserver07"].frame, parts["nserver08"].frame
    assert len(metric_columns(n07)) == len(metric_columns(n08)) == 57
    # rows where a host has no data at all are dropped for that host only
    assert n07.height == two_host_run.frame.height and n08.height == two_host_run.frame.height - 20
    assert n08.get_column("timestamp")[0] == two_host_run.frame.get_column("timestamp")[20]


def test_run_meta_dict_roundtrip() -> None:
    m = RunMeta("r1", hosts=("h1", "h2"), model="VGG16", platform="gpu", extra={"prefix": "train"})
    d = m.to_dict()
    assert d["hosts"] == ["h1", "h2"]
    back = RunMeta.from_dict({**d, "unknown_field": 3})
    assert back.hosts == ("h1", "h2") and back.extra == {"prefix": "train", "unknown_field": 3}
    assert Run(m, _frame()).run_id == "r1"
