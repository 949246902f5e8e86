"""The public-dataset index: zip and unzipped parity, meta reconciliation, filters, laziness."""

from __future__ import annotations

import datetime as dt
import shutil
import zipfile
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.io import INDEX_SCHEMA, Dataset, open_dataset, parse_run_filename
from reveal_lab.io._sample import sample_dir, unzip_sample
from reveal_lab.telemetry import TIMESTAMP_DTYPE, TelemetryError, validate_frame

GPU_FILES = 6
CPU_FILES = 5
pytestmark = pytest.mark.filterwarnings("ignore::reveal_lab.telemetry.TelemetryWarning")


@pytest.fixture(scope="module")
def sample_root() -> Path:
    return sample_dir()


@pytest.fixture(scope="module")
def unzipped_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return unzip_sample(tmp_path_factory.mktemp("unzipped"))


TWO_HOST = "train_BERTLARGEforTextClassification_imdb_2025-06-05T14-20-31_nserver07"


def test_index_from_zips(sample_root: Path) -> None:
    ds = open_dataset(sample_root)
    idx = ds.index
    assert dict(idx.schema) == INDEX_SCHEMA
    assert len(ds) == GPU_FILES + CPU_FILES
    assert idx.filter(pl.col("platform") == "gpu").height == GPU_FILES
    assert idx.filter(pl.col("platform") == "cpu").height == CPU_FILES
    assert idx.get_column("archive").str.ends_with(".zip").all()
    assert not idx.get_column("run_id").str.contains("DS_Store").any()  # macOS debris ignored
    row = ds.row("infer_ViTB16forImageSemanticSegmentation_scene_parse_150_2025-05-13T08-15-30_htc-g004")
    assert (row["prefix"], row["model"], row["task"], row["dataset"], row["host"]) == (
        "infer",
        "ViTB16",
        "ImageSemanticSegmentation",
        "scene_parse_150",
        "htc-g004",
    )
    assert row["start"] == dt.datetime(2025, 5, 13, 8, 15, 30)
    assert row["workload"] == "ViTB16__ImageSemanticSegmentation__scene_parse_150"
    assert (row["phase"], row["mode"], row["split"], row["in_meta"]) == ("infer", "nonllm", "infer", True)
    assert row["n_rows"] == 320 and row["n_cols"] == 85
    llama = ds.row("data_LLAMAforTextClassification_imdb_2025-05-02T09-10-11_htc-g004")
    # not in meta_gpu.csv: phase and mode derived from the file name, shape unknown
    assert (llama["phase"], llama["mode"], llama["in_meta"], llama["n_rows"]) == (
        "fine-tuning",
        "llm",
        False,
        None,
    )


def test_every_index_row_roundtrips_the_file_name_grammar(sample_root: Path) -> None:
    for r in open_dataset(sample_root).index.iter_rows(named=True):
        name = parse_run_filename(r["member"])
        assert name is not None and name.run_id == r["run_id"]
        assert name.format() == Path(r["member"]).name


def test_zip_and_unzipped_give_identical_frames(sample_root: Path, unzipped_root: Path) -> None:
    zipped, unzipped = open_dataset(sample_root), open_dataset(unzipped_root)
    same_cols = [c for c in INDEX_SCHEMA if c not in ("member", "archive")]
    a = zipped.index.select(same_cols).sort("run_id")
    b = unzipped.index.select(same_cols).sort("run_id")
    assert a.equals(b)
    assert unzipped.index.get_column("archive").is_null().all()
    for run_id in zipped.run_ids:
        rz, ru = zipped.load(run_id), unzipped.load(run_id)
        validate_frame(rz.frame, source=run_id)
        assert rz.frame.equals(ru.frame), run_id
        assert rz.meta.hosts == ru.meta.hosts and rz.meta.workload == ru.meta.workload
        assert [w.split(": ", 1)[1] for w in rz.warnings] == [w.split(": ", 1)[1] for w in ru.warnings]


def test_loaded_run_is_canonical_with_metadata(sample_root: Path) -> None:
    ds = open_dataset(sample_root)
    run = ds.load("train_VGG16forImageClassification_CIFAR10_2025-05-11T12-27-13_htc-g003")
    f = run.frame
    assert f.schema["timestamp"] == TIMESTAMP_DTYPE
    assert all(t == pl.Float64 for c, t in f.schema.items() if c != "timestamp")
    assert f.width == 85 and f.height == 310
    assert run.meta.platform == "gpu" and run.meta.hosts == ("htc-g003",)
    assert run.meta.interval_ms == 100.0
    assert run.meta.source_path.endswith("Reveal_GPU.zip::train_separated/" + run.run_id + ".txt")
    # first row 0.1-0.6 s after the file-name time
    lag = (f.get_column("timestamp")[0] - dt.datetime(2025, 5, 11, 12, 27, 13)).total_seconds()
    assert 0.1 <= lag <= 0.6
    # all-NaN and all-zero columns are kept and reported
    nan_col = "Perf:Mem_trans_retired_load_latency_gt_256.htc-g003[count]"
    assert f.get_column(nan_col).null_count() == f.height
    assert nan_col in run.meta.extra["all_null_columns"]
    assert "Turbostat:SMI.-.htc-g003[count]" in run.meta.extra["all_zero_columns"]
    assert any("hold no value" in w and nan_col in w for w in run.warnings)
    # _diff columns: first difference undefined on the first row
    assert f.get_column("NetworkInterStat_diff:rx_bytes.ib0.htc-g003[Bytes]")[0] is None


def test_two_host_file_splits(sample_root: Path) -> None:
    run = open_dataset(sample_root).load(TWO_HOST)
    assert run.meta.hosts == ("nserver07", "nserver08")
    assert run.frame.width == 1 + 2 * 57
    parts = run.split_hosts()
    assert set(parts) == {"nserver07", "nserver08"}
    for host, part in parts.items():
        assert part.meta.hosts == (host,)
        assert all(c == "timestamp" or c.split("[")[0].endswith("." + host) for c in part.frame.columns)
        validate_frame(part.frame)
    assert parts["nserver07"].frame.height == run.frame.height
    assert parts["nserver08"].frame.height == run.frame.height - 20  # joined 2 s late


def test_meta_gpu_mismatch_is_reported_and_cpu_matches(sample_root: Path) -> None:
    ds = open_dataset(sample_root)
    rec = ds.reconcile(check_cols=True, check_rows=True)
    assert not rec.ok
    per = {r["platform"]: r for r in rec.per_platform.iter_rows(named=True)}
    assert (per["cpu"]["missing"], per["cpu"]["extra"], per["cpu"]["disagreements"]) == (0, 0, 0)
    assert per["cpu"]["matched"] == CPU_FILES
    assert (per["gpu"]["meta_rows"], per["gpu"]["files"], per["gpu"]["matched"]) == (5, GPU_FILES, 4)
    assert rec.missing_files.get_column("run_id").to_list() == [
        "train_Resnet50forImageClassification_CIFAR10_2025-05-09T08-00-00_htc-g003"
    ]
    assert rec.missing_files.get_column("meta_line").to_list() == [3]
    assert sorted(rec.extra_files.get_column("run_id").to_list()) == [
        "data_LLAMAforTextClassification_imdb_2025-05-02T09-10-11_htc-g004",
        "infer_BERTBASEforTextClassification_imdb_2025-05-14T16-42-09_htc-g003",
    ]
    assert rec.disagreements.rows() == [
        (
            "gpu",
            "train_VGG16forImageClassification_CIFAR10_2025-05-11T12-27-13_htc-g003",
            "n_rows",
            "327",
            "310",
        )
    ]
    text = rec.summary()
    assert "gpu" in text and "MISMATCH" in text and "cpu" in text and "matches its files" in text
    # the index comes from the files, not from the meta table
    assert "train_Resnet50forImageClassification_CIFAR10_2025-05-09T08-00-00_htc-g003" not in ds


def test_reconcile_names_meta_vs_file_disagreement(sample_root: Path, tmp_path: Path) -> None:
    shutil.copy(sample_root / "Reveal_CPU.zip", tmp_path)
    meta = (sample_root / "meta_cpu.csv").read_text().replace(",VGG19,", ",VGG11,", 1)
    (tmp_path / "meta_cpu.csv").write_text(meta)
    rec = open_dataset(tmp_path).reconcile()
    assert rec.disagreements.select("field", "meta", "file").rows() == [("model", "VGG11", "VGG19")]


def test_filters(sample_root: Path) -> None:
    ds = open_dataset(sample_root)
    assert len(ds.filter(platform="gpu")) == GPU_FILES
    assert len(ds.filter(platform="cpu", phase="infer")) == 2
    assert ds.filter(model=["LLAMA", "MISTRAL"]).index.get_column("phase").to_list() == ["fine-tuning"] * 2
    assert len(ds.filter(task="TextClassification", host="htc-g003")) == 1
    assert ds.filter(workload="VGG16__ImageClassification__CIFAR10").run_ids == [
        "train_VGG16forImageClassification_CIFAR10_2025-05-11T12-27-13_htc-g003"
    ]
    assert len(ds.filter(platform="gpu", model=None)) == GPU_FILES
    assert len(ds.filter(host="no-such-host")) == 0
    with pytest.raises(ValueError, match="cannot filter on 'colour'"):
        ds.filter(colour="red")
    runs = list(ds.iter_runs(platform="cpu", phase="infer"))
    assert [r.meta.model for r in runs] == ["VGG19", "BARTLARGE"]
    assert all(r.meta.platform == "cpu" and r.meta.phase == "infer" for r in runs)


def test_unknown_run_id_says_so(sample_root: Path) -> None:
    ds = open_dataset(sample_root)
    with pytest.raises(KeyError, match="no run 'VGG16'.*did you mean"):
        ds.load("VGG16")


def test_a_single_zip_and_nested_or_misspelt_folders(sample_root: Path, tmp_path: Path) -> None:
    ds = open_dataset(sample_root / "Reveal_CPU.zip")
    assert len(ds) == CPU_FILES and set(ds.index.get_column("platform")) == {"cpu"}
    assert ds.index.get_column("in_meta").all()  # meta_cpu.csv beside the zip
    # Reveal_GPU/Reveal_GPU/train_seperated (double folder from an unzip tool, misspelt split)
    inner = tmp_path / "Reveal_GPU" / "Reveal_GPU"
    with zipfile.ZipFile(sample_root / "Reveal_GPU.zip") as z:
        z.extractall(inner)
    (inner / "train_separated").rename(inner / "train_seperated")
    (inner / "infer_separated" / "README.md").write_text("not a run")
    ds2 = open_dataset(tmp_path)
    assert len(ds2) == GPU_FILES and set(ds2.index.get_column("platform")) == {"gpu"}
    assert set(ds2.index.get_column("split")) == {"train", "infer"}
    assert any(s.endswith("README.md") for s in ds2.skipped)  # listed, not silently dropped


def test_empty_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TelemetryError, match="no Reveal dataset here"):
        open_dataset(tmp_path)
    with pytest.raises(FileNotFoundError, match="dataset pull"):
        open_dataset(tmp_path / "nope")


def test_corrupt_zip_names_the_archive(sample_root: Path, tmp_path: Path) -> None:
    data = (sample_root / "Reveal_GPU.zip").read_bytes()
    bad = tmp_path / "Reveal_GPU.zip"
    bad.write_bytes(data[: len(data) // 2])  # an interrupted download: no central directory
    with pytest.raises(TelemetryError, match="not a readable zip archive") as e:
        open_dataset(tmp_path)
    assert str(bad) in str(e.value) and e.value.path == str(bad)


def _corrupt_member(src: Path, dst: Path, needle: str) -> str:
    """Copy ``src`` to ``dst`` with garbage in the compressed bytes of one member."""
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        info = next(i for i in z.infolist() if needle in i.filename)
    # local header: 30 bytes + name + extra, then the compressed data
    name_len = int.from_bytes(data[info.header_offset + 26 : info.header_offset + 28], "little")
    extra_len = int.from_bytes(data[info.header_offset + 28 : info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    mid = start + info.compress_size // 2
    data[mid : mid + 64] = bytes(range(64))
    dst.write_bytes(bytes(data))
    return info.filename


def test_index_is_lazy_corrupt_member_fails_only_on_load(sample_root: Path, tmp_path: Path) -> None:
    member = _corrupt_member(sample_root / "Reveal_GPU.zip", tmp_path / "Reveal_GPU.zip", "VGG16")
    shutil.copy(sample_root / "meta_gpu.csv", tmp_path)
    ds = open_dataset(tmp_path)  # reads only the zip directory: works
    assert len(ds) == GPU_FILES
    run_id = Path(member).stem
    assert ds.header(run_id)[1].startswith("Perf:")  # the start of the member is still intact
    with pytest.raises(TelemetryError, match="corrupt archive member") as e:
        ds.load(run_id)
    assert str(tmp_path / "Reveal_GPU.zip") in str(e.value) and member in str(e.value)
    # every other run still loads, and a scan can go on past the bad one, saying so
    others = [r for r in ds.run_ids if r != run_id]
    assert all(ds.load(r).frame.height > 0 for r in others)
    with pytest.raises(TelemetryError):
        list(ds.iter_runs())
    runs = list(ds.iter_runs(on_error="skip"))
    assert [r.run_id for r in runs] == others
    assert any(w.startswith(f"skipped run {run_id}: ") and "corrupt archive member" in w for w in ds.warnings)


def test_dataset_pickles_without_open_handles(sample_root: Path) -> None:
    import pickle

    ds = open_dataset(sample_root)
    ds.load(ds.run_ids[0])  # opens the archive
    clone: Dataset = pickle.loads(pickle.dumps(ds))
    assert clone.load(ds.run_ids[0]).frame.equals(ds.load(ds.run_ids[0]).frame)
    ds.close()


def test_lab_layout_with_parquet_members(sample_root: Path, tmp_path: Path) -> None:
    """Our lab dataset: same layout and names, canonical Parquet members, meta_lab.csv."""
    from reveal_lab.io import write_parquet_run

    src = open_dataset(sample_root).filter(platform="cpu")
    lab = tmp_path / "lab"
    rows = ["source_file,n_rows,n_cols,phase,mode,model,task,dataset,model_task,workload"]
    for run in src.iter_runs():
        split = run.meta.extra["split"] + "_separated"
        write_parquet_run(run, lab / split / f"{run.run_id}.parquet")
        m = run.meta
        rows.append(
            f"./{split}/{run.run_id}.parquet,{run.frame.height},{run.frame.width},{m.phase},{m.mode},"
            f"{m.model},{m.task},{m.dataset},{m.model}__{m.task},{m.workload}"
        )
    (lab / "meta_lab.csv").write_text("\n".join(rows) + "\n")
    (lab / "labels.csv").write_text("run_id,start,end,fault\nx,0,1,cpu_hog\n")
    ds = open_dataset(lab)
    assert set(ds.index.get_column("platform")) == {"lab"}
    assert set(ds.index.get_column("format")) == {"parquet"}
    assert ds.index.get_column("in_meta").all()
    assert ds.reconcile(check_cols=True, check_rows=True).ok
    assert ds.labels().columns == ["run_id", "start", "end", "fault"]
    for run_id in ds.run_ids:
        a, b = ds.load(run_id), src.load(run_id)
        assert a.frame.equals(b.frame)
        assert (a.meta.hosts, a.meta.phase, a.meta.workload) == (b.meta.hosts, b.meta.phase, b.meta.workload)
        assert len(ds.header(run_id)) == a.frame.width


def test_meta_numbers_written_as_floats_are_read(sample_root: Path, tmp_path: Path) -> None:
    import re

    shutil.copy(sample_root / "Reveal_CPU.zip", tmp_path)
    text = (sample_root / "meta_cpu.csv").read_text()
    (tmp_path / "meta_cpu.csv").write_text(re.sub(r"\.txt,(\d+),(\d+),", r".txt,\1.0,\2.0,", text))
    a = open_dataset(tmp_path).index.select("n_rows", "n_cols")
    b = open_dataset(sample_root).filter(platform="cpu").index.select("n_rows", "n_cols")
    assert a.equals(b) and a.null_count().row(0) == (0, 0)
