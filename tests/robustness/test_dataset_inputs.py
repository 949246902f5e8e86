"""Malformed datasets and run paths: a message naming the file/member/column, never a
traceback or a silent "matches"; ``info --check-rows`` lists every broken file and goes on."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reveal_lab.io import describe_dataset, load_run, open_dataset
from reveal_lab.io._sample import sample_dir
from reveal_lab.telemetry import TelemetryError

from .conftest import assert_clean_error, cli, in_process

GOOD = "train_Resnet50forImageClassification_CIFAR10_2025-06-03T11-02-44_nserver07.txt"


@pytest.fixture(scope="module")
def good_lines(tmp_path_factory) -> list[str]:
    with zipfile.ZipFile(sample_dir() / "Reveal_CPU.zip") as z:
        return z.read(f"train_separated/{GOOD}").decode().splitlines()


def _name(day: int) -> str:
    return f"train_Resnet50forImageClassification_CIFAR10_2025-06-{day:02d}T11-02-44_nserver07.txt"


@pytest.fixture(scope="module")
def corrupt_zip(tmp_path_factory) -> tuple[Path, list[str]]:
    """The sample CPU archive with corrupt deflate data in one member and a bad CRC in another."""
    d = tmp_path_factory.mktemp("dz")
    p = d / "Reveal_CPU.zip"
    shutil.copy(sample_dir() / "Reveal_CPU.zip", p)
    shutil.copy(sample_dir() / "meta_cpu.csv", d / "meta_cpu.csv")
    infos = [i for i in zipfile.ZipFile(p).infolist() if not i.is_dir()]
    b = bytearray(p.read_bytes())
    for k, (i, how) in enumerate(zip(infos[:2], ("deflate", "crc"), strict=True)):
        off = i.header_offset + 30 + len(i.filename.encode()) + len(i.extra)
        if how == "deflate":
            b[off + 100 : off + 140] = b"\xff" * 40
        else:
            b[off + 2000 + k] ^= 0x55
    p.write_bytes(bytes(b))
    return d, [i.filename for i in infos[:2]]


def test_detect_on_corrupt_members_names_the_member(corrupt_zip, tmp_path):
    d, members = corrupt_zip
    for m in members:
        spec = f"{d / 'Reveal_CPU.zip'}::{m}"
        with pytest.raises(TelemetryError, match="corrupt archive member") as exc:
            load_run(spec)
        assert m in str(exc.value)
    res = cli("detect", f"{d / 'Reveal_CPU.zip'}::{members[0]}", "--out", str(tmp_path / "r"))
    assert_clean_error(res, members[0], "corrupt archive member", rc=1)


def test_check_rows_lists_every_corrupt_member_and_goes_on(corrupt_zip):
    d, members = corrupt_zip
    res = cli("dataset", "info", str(d), "--check-rows")
    assert res.rc == 0 and "Traceback" not in res.text, res.text
    for m in members:
        assert m in res.text
    assert "3 readable, 2 broken" in res.text


def test_check_rows_really_validates_every_file(tmp_path, good_lines):
    split = tmp_path / "train_separated"
    split.mkdir()
    lines = list(good_lines)
    rag = list(lines)
    rag[5] = "\t".join(rag[5].split("\t")[:-3])
    nonnum = list(lines)
    c = nonnum[7].split("\t")
    c[4] = "abc"
    nonnum[7] = "\t".join(c)
    dup = list(lines)
    h = dup[0].split("\t")
    h[3] = h[2]
    dup[0] = "\t".join(h)
    back = list(lines)
    back[10], back[20] = back[20], back[10]
    cases = {
        1: (rag, "fields"),
        2: (nonnum, "non-numeric"),
        3: (dup, "duplicate column"),
        4: (back, "back in time"),
    }
    for day, (ls, _) in cases.items():
        (split / _name(day)).write_text("\n".join(ls) + "\n")
    (split / _name(5)).write_text("\n".join(lines) + "\n")
    d = describe_dataset(open_dataset(tmp_path), check_rows=True)
    assert d["checked_runs"] == {"loaded": 1, "broken": 4}
    text = "\n".join(d["unreadable"])
    for day, (_, why) in cases.items():
        assert _name(day) in text and why in text, text


def test_check_rows_names_a_corrupt_parquet_file(tmp_path):
    from reveal_lab.config import PROJECT_ROOT

    src = sorted((PROJECT_ROOT / "data/lab/train_separated").glob("*.parquet"))[0]
    split = tmp_path / "train_separated"
    split.mkdir()
    b = bytearray(src.read_bytes())
    mid = len(b) // 2
    b[mid : mid + 64] = b"\xab" * 64  # a corrupt data page; the footer stays valid
    (split / src.name).write_bytes(bytes(b))
    res = cli("dataset", "info", str(tmp_path), "--check-rows")
    assert res.rc == 0 and "Traceback" not in res.text, res.text
    assert "0 readable, 1 broken" in res.text and src.name in res.text and "Parquet" in res.text


def test_dataset_ls_and_info_on_dev_null():
    for verb in ("ls", "info"):
        res = cli("dataset", verb, "/dev/null")
        assert_clean_error(res, "/dev/null", "neither a folder nor a .zip", rc=1)


def test_detect_out_is_a_file(tmp_path, good_lines):
    run = tmp_path / GOOD
    run.write_text("\n".join(good_lines) + "\n")
    f = tmp_path / "report"
    f.write_text("x")
    assert_clean_error(cli("detect", str(run), "--out", str(f)), str(f), "is a file", rc=1)


def test_a_fifo_named_txt_does_not_block_detect(tmp_path):
    fifo = tmp_path / GOOD
    os.mkfifo(fifo)
    res = cli("detect", str(fifo), "--out", str(tmp_path / "r"), limit=60)
    assert_clean_error(res, str(fifo), "not a regular file")


def test_backslash_in_a_local_file_name_stays_in_the_run_id(tmp_path, good_lines):
    p = tmp_path / "tr\\ain_x.txt"
    p.write_text("\n".join(good_lines) + "\n")
    assert load_run(p).run_id == "tr\\ain_x"


def test_stride_longer_than_window_is_refused(tmp_path, good_lines):
    run = tmp_path / GOOD
    run.write_text("\n".join(good_lines) + "\n")
    res = cli("detect", str(run), "--stride", "5s", "--out", str(tmp_path / "r"))
    assert_clean_error(res, "--stride 5s", "--window 3s", rc=1)
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_interval_mismatching_the_data_is_warned(tmp_path, good_lines, capsys):
    run = tmp_path / GOOD
    run.write_text("\n".join(good_lines) + "\n")
    res = in_process(capsys, "detect", str(run), "--interval", "1s", "--out", str(tmp_path / "r"))
    assert res.rc == 0, res.text
    assert "--interval 1s does not match the data, sampled every 100 ms" in res.err
    assert "does not match the data" in (tmp_path / "r" / "report.md").read_text()


# -- generated malformed files: load either reads them or says where and why -----------------


@settings(
    derandomize=True,
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=st.data(),
    edit=st.sampled_from(["cut", "junk", "dup", "swap", "blank", "bytes", "extra"]),
)
def test_generated_malformed_tsv_is_read_or_named(tmp_path, good_lines, data, edit):
    lines = list(good_lines[:40])
    n_cols = len(lines[0].split("\t"))
    row = data.draw(st.integers(1, len(lines) - 1), label="row")
    col = data.draw(st.integers(1, n_cols - 1), label="col")
    cells = lines[row].split("\t")
    if edit == "cut":
        lines[row] = "\t".join(cells[: data.draw(st.integers(0, n_cols - 1), label="keep")])
    elif edit == "junk":
        cell = st.text(min_size=1, max_size=8).filter(lambda s: not set(s) & {"\t", "\n", "\r"})
        cells[col] = data.draw(cell, label="cell")
        lines[row] = "\t".join(cells)
    elif edit == "dup":
        h = lines[0].split("\t")
        h[col] = h[1 if col != 1 else 2]
        lines[0] = "\t".join(h)
    elif edit == "swap":
        other = data.draw(st.integers(1, len(lines) - 1), label="other")
        lines[row], lines[other] = lines[other], lines[row]
    elif edit == "blank":
        lines[row] = ""
    elif edit == "extra":
        lines[row] += "\t1.0"
    payload = ("\n".join(lines) + "\n").encode()
    if edit == "bytes":
        pos = data.draw(st.integers(0, len(payload) - 1), label="pos")
        payload = payload[:pos] + data.draw(st.binary(min_size=1, max_size=6)) + payload[pos:]
    p = tmp_path / GOOD
    p.write_bytes(payload)
    try:
        run = load_run(p)
    except TelemetryError as exc:
        msg = str(exc)
        assert str(p) in msg and ("line" in msg or "column" in msg), msg
        return
    # read: the frame is a valid telemetry frame (strictly increasing timestamps)
    ts = run.frame.get_column("timestamp")
    assert ts.is_sorted() and ts.n_unique() == ts.len()
