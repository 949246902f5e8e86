"""Bad input to the public TSV reader: every case names the file and the line and/or column."""

from __future__ import annotations

import warnings
import zipfile

import polars as pl
import pytest

from reveal_lab.io import read_public_tsv
from reveal_lab.io._sample import sample_dir
from reveal_lab.telemetry import TelemetryError, TelemetryWarning, catalogue

pytestmark = pytest.mark.filterwarnings("ignore::reveal_lab.telemetry.TelemetryWarning")


@pytest.fixture(scope="module")
def gpu_file_bytes() -> tuple[str, bytes]:
    """Name and bytes of one GPU-host run file."""
    with zipfile.ZipFile(sample_dir() / "Reveal_GPU.zip") as z:
        name = next(n for n in z.namelist() if n.endswith(".txt") and "VGG16" in n)
        return name.split("/")[-1], z.read(name)


def _lines(data: bytes) -> list[bytes]:
    return data.rstrip(b"\n").split(b"\n")


def _join(lines: list[bytes]) -> bytes:
    return b"\n".join(lines) + b"\n"


def _set_cell(data: bytes, line: int, field: int, value: bytes) -> bytes:
    lines = _lines(data)
    cells = lines[line - 1].split(b"\t")
    cells[field] = value
    lines[line - 1] = b"\t".join(cells)
    return _join(lines)


def test_reads_the_fixture_file(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    run = read_public_tsv(data, name=name)
    assert run.frame.height == len(_lines(data)) - 1
    assert run.meta.model == "VGG16" and run.meta.hosts == ("htc-g003",)
    # a value written in scientific notation, as the real files do
    assert run.frame.get_column("Perf:Cycles.htc-g003[count]").min() > 1e8


def test_path_source_and_warning_emitted(gpu_file_bytes: tuple[str, bytes], tmp_path) -> None:
    name, data = gpu_file_bytes
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.warns(TelemetryWarning, match=str(p).replace("[", r"\[")):
        run = read_public_tsv(p)
    assert run.meta.source_path == str(p)


def test_empty_file(tmp_path) -> None:
    p = tmp_path / "train_VGG16forImageClassification_CIFAR10_2025-05-11T12-27-13_h.txt"
    p.write_bytes(b"")
    with pytest.raises(TelemetryError, match="the file is empty") as e:
        read_public_tsv(p)
    assert str(p) in str(e.value)
    p.write_bytes(b"\n\n")
    with pytest.raises(TelemetryError, match="the file is empty"):
        read_public_tsv(p)


def test_header_only() -> None:
    with pytest.raises(TelemetryError, match="x.txt, line 2: the file has a header but no data rows"):
        read_public_tsv(b"\tPerf:IPC.h[-]\n", name="x.txt")


@pytest.mark.parametrize("sep", [b",", b";"])
def test_wrong_delimiter(gpu_file_bytes: tuple[str, bytes], sep: bytes) -> None:
    name, data = gpu_file_bytes
    with pytest.raises(TelemetryError) as e:
        read_public_tsv(data.replace(b"\t", sep), name=name)
    msg = str(e.value)
    assert msg.startswith(f"{name}, line 1:") and "not tab-separated" in msg and repr(sep.decode()) in msg
    assert e.value.line == 1


def test_truncated_last_line_is_a_recorded_warning(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    n_lines = len(_lines(data))
    cut = data.rstrip(b"\n")[:-40]  # an interrupted copy: the last row stops mid-way
    with pytest.warns(TelemetryWarning, match=f"line {n_lines} has"):
        run = read_public_tsv(cut, name=name)
    assert run.frame.height == n_lines - 2  # header and the partial row
    assert any(f"{name}: line {n_lines} has" in w and "not loaded" in w for w in run.warnings)
    with pytest.raises(TelemetryError, match=f"line {n_lines}: .*fewer than the 85") as e:
        read_public_tsv(cut, name=name, strict=True)
    assert e.value.line == n_lines and e.value.path == name


def test_short_row_in_the_middle(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    lines = _lines(data)
    lines[9] = b"\t".join(lines[9].split(b"\t")[:40])
    with pytest.raises(TelemetryError) as e:
        read_public_tsv(_join(lines), name=name)
    assert e.value.line == 10 and "40 fields, fewer than the 85" in str(e.value) and name in str(e.value)


def test_long_row_and_blank_line(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    lines = _lines(data)
    lines[4] += b"\t1.0"
    with pytest.raises(TelemetryError, match=r"line 5: 86 fields, more than the 85"):
        read_public_tsv(_join(lines), name=name)
    lines = _lines(data)
    lines.insert(6, b"")
    with pytest.raises(TelemetryError, match=r"line 7: 1 fields, fewer .* \(a blank line\?\)"):
        read_public_tsv(_join(lines), name=name)


def test_non_numeric_cell(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    header = _lines(data)[0].decode().split("\t")
    bad = _set_cell(data, 7, 12, b"12,5")
    bad = _set_cell(bad, 30, 3, b"n/a")  # a later one: the first is reported
    with pytest.raises(TelemetryError) as e:
        read_public_tsv(bad, name=name)
    assert (e.value.path, e.value.line, e.value.column) == (name, 7, header[12])
    assert f"{name}, line 7, column {header[12]!r}: non-numeric value '12,5'" in str(e.value)


def test_nan_spellings_are_missing_values(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    d = _set_cell(_set_cell(data, 3, 5, b"NaN"), 4, 5, b"nan")
    col = _lines(data)[0].decode().split("\t")[5]
    s = read_public_tsv(d, name=name).frame.get_column(col)
    assert s[1] is None and s[2] is None and s[3] is not None


def test_bad_and_empty_timestamp(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    with pytest.raises(
        TelemetryError, match=r"line 8, column 'timestamp': cannot read timestamp '2025-13-45"
    ):
        read_public_tsv(_set_cell(data, 8, 0, b"2025-13-45 10:00:00.000"), name=name)
    with pytest.raises(TelemetryError, match=r"line 4, column 'timestamp': empty timestamp"):
        read_public_tsv(_set_cell(data, 4, 0, b""), name=name)


def test_duplicate_timestamp_errors_or_is_repaired(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    ts4 = _lines(data)[3].split(b"\t")[0]
    dup = _set_cell(data, 5, 0, ts4)
    with pytest.raises(TelemetryError, match="duplicate timestamp") as e:
        read_public_tsv(dup, name=name)
    assert (e.value.line, e.value.column, e.value.path) == (5, "timestamp", name)
    run = read_public_tsv(dup, name=name, repair_time=True)
    assert run.frame.height == len(_lines(data)) - 2
    assert any("duplicate timestamps on lines [5]" in w for w in run.warnings)
    assert run.frame.get_column("timestamp").is_unique().all()


def test_non_monotonic_timestamp_errors_or_is_sorted(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    lines = _lines(data)
    lines[9], lines[10] = lines[10], lines[9]  # file lines 10 and 11 swapped
    swapped = _join(lines)
    with pytest.raises(TelemetryError, match="goes back in time") as e:
        read_public_tsv(swapped, name=name)
    assert (e.value.line, e.value.column, e.value.path) == (11, "timestamp", name)
    assert str(e.value).startswith(f"{name}, line 11, column 'timestamp': ")
    run = read_public_tsv(swapped, name=name, repair_time=True)
    assert run.frame.equals(read_public_tsv(data, name=name).frame)
    assert any("go back in time on lines [11]" in w and "sorted" in w for w in run.warnings)


def test_unknown_column_names_are_kept_and_warned(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    lines = _lines(data)
    cells = lines[0].split(b"\t")
    cells[2] = b"some free text"
    cells[3] = b"Habana:utilization.0.htc-g003[%]"
    lines[0] = b"\t".join(cells)
    run = read_public_tsv(_join(lines), name=name)
    assert "some free text" in run.frame.columns and "Habana:utilization.0.htc-g003[%]" in run.frame.columns
    ours = [w for w in run.warnings if w.startswith(f"{name}: ")]  # each warning names the file
    assert any("do not follow" in w and "'some free text'" in w for w in ours)
    assert any("not in the metric registry" in w and "Habana" in w for w in ours)
    assert set(run.meta.extra["unknown_columns"]) == {"some free text", "Habana:utilization.0.htc-g003[%]"}
    cat = catalogue(run.frame.columns).filter(~pl.col("known"))
    assert cat.select("subsystem", "kind").unique().rows() == [("system", "dynamic")]


def test_duplicate_column_and_metric_in_first_header(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    lines = _lines(data)
    cells = lines[0].split(b"\t")
    cells[5] = cells[4]
    with pytest.raises(
        TelemetryError, match=r"line 1, column .*duplicate column name \(header fields 5 and 6\)"
    ):
        read_public_tsv(_join([b"\t".join(cells), *lines[1:]]), name=name)
    cells = lines[0].split(b"\t")
    cells[0] = b"Perf:IPC.x[-]"
    with pytest.raises(TelemetryError, match="first column must hold the timestamps"):
        read_public_tsv(_join([b"\t".join(cells), *lines[1:]]), name=name)


def test_crlf_and_named_timestamp_header(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    ref = read_public_tsv(data, name=name).frame
    assert read_public_tsv(data.replace(b"\n", b"\r\n"), name=name).frame.equals(ref)
    run = read_public_tsv(b"timestamp" + data, name=name)  # our own spelling: taken silently
    assert run.frame.equals(ref) and not any("first header" in w for w in run.warnings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        run = read_public_tsv(b"Zeit" + data, name=name)
    assert run.frame.equals(ref)
    assert any("first header 'Zeit' is taken as the timestamp" in w for w in run.warnings)


def test_infinite_values_are_kept_and_warned(gpu_file_bytes: tuple[str, bytes]) -> None:
    name, data = gpu_file_bytes
    col = _lines(data)[0].decode().split("\t")[7]
    run = read_public_tsv(_set_cell(data, 6, 7, b"inf"), name=name)
    assert run.frame.get_column(col)[4] == float("inf")
    assert any("hold infinite values" in w and col in w for w in run.warnings)


def test_registry_change_reaches_the_reader(gpu_file_bytes: tuple[str, bytes]) -> None:
    """Column status is cached per registry version: a newly registered metric is known at once."""
    from reveal_lab.telemetry import DEFAULT_REGISTRY, register_metric

    name, data = gpu_file_bytes
    lines = _lines(data)
    cells = lines[0].split(b"\t")
    cells[3] = b"Habana:utilization.0.htc-g003[%]"
    lines[0] = b"\t".join(cells)
    odd = _join(lines)
    assert any("not in the metric registry" in w for w in read_public_tsv(odd, name=name).warnings)
    rule = register_metric("Habana", subsystem="gpu")
    try:
        assert not any("not in the metric registry" in w for w in read_public_tsv(odd, name=name).warnings)
    finally:
        DEFAULT_REGISTRY.rules.remove(rule)
    assert any("not in the metric registry" in w for w in read_public_tsv(odd, name=name).warnings)
