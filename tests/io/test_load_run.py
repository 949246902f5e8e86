"""``load_run`` dispatch and the canonical Parquet run format."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.io import PARQUET_META_KEY, load_run, open_dataset, read_parquet_run, write_parquet_run
from reveal_lab.io._sample import sample_dir, unzip_sample
from reveal_lab.telemetry import TelemetryError

pytestmark = pytest.mark.filterwarnings("ignore::reveal_lab.telemetry.TelemetryWarning")


@pytest.fixture(scope="module")
def sample_root() -> Path:
    return sample_dir()


@pytest.fixture(scope="module")
def unzipped_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return unzip_sample(tmp_path_factory.mktemp("unzipped"))


VGG16 = "train_VGG16forImageClassification_CIFAR10_2025-05-11T12-27-13_htc-g003"


def test_load_txt_from_unzipped_tree_uses_meta_csv(unzipped_root: Path, sample_root: Path) -> None:
    path = unzipped_root / "Reveal_GPU" / "train_separated" / f"{VGG16}.txt"
    run = load_run(path)
    ref = open_dataset(sample_root).load(VGG16)
    assert run.frame.equals(ref.frame)
    assert (run.meta.platform, run.meta.phase, run.meta.mode, run.meta.workload) == (
        "gpu",
        "train",
        "nonllm",
        "VGG16__ImageClassification__CIFAR10",
    )
    assert run.meta.extra["meta_file"].endswith("meta_gpu.csv")


def test_load_zip_member_path(sample_root: Path) -> None:
    run = load_run(f"{sample_root / 'Reveal_GPU.zip'}::train_separated/{VGG16}.txt")
    assert run.run_id == VGG16 and run.meta.platform == "gpu" and run.frame.height == 310
    with pytest.raises(TelemetryError, match="no member 'nope.txt'"):
        load_run(f"{sample_root / 'Reveal_GPU.zip'}::nope.txt")


def test_load_parquet_roundtrip_keeps_metadata(sample_root: Path, tmp_path: Path) -> None:
    run = open_dataset(sample_root).load(VGG16)
    p = write_parquet_run(run, tmp_path / f"{VGG16}.parquet")
    back = load_run(p)
    assert back.frame.equals(run.frame)
    assert back.meta.phase == "train" and back.meta.platform == "gpu" and back.meta.hosts == ("htc-g003",)
    assert back.meta.extra["all_null_columns"] == run.meta.extra["all_null_columns"]
    import pyarrow.parquet as pq

    stored = json.loads(pq.read_schema(p).metadata[PARQUET_META_KEY.encode()])
    assert stored["run_id"] == VGG16


def test_parquet_without_metadata_and_odd_dtypes(sample_root: Path, tmp_path: Path) -> None:
    frame = open_dataset(sample_root).load(VGG16).frame.head(20)
    odd = frame.with_columns(
        pl.col("timestamp").cast(pl.Datetime("us")), pl.col("Perf:IPC.htc-g003[-]").cast(pl.Float32)
    )
    p = tmp_path / f"{VGG16}.parquet"
    odd.write_parquet(p)
    run = read_parquet_run(p)
    assert run.meta.model == "VGG16" and run.meta.hosts == ("htc-g003",)  # from the file name
    assert run.frame.schema["timestamp"] == pl.Datetime("ms")
    assert any("converted to Float64" in w for w in run.warnings)
    assert any("converted to datetime[ms]" in w for w in run.warnings)
    frame.drop("timestamp").write_parquet(p)
    with pytest.raises(TelemetryError, match="no 'timestamp' column") as e:
        read_parquet_run(p)
    assert str(p) in str(e.value)
    p.write_bytes(b"PAR1 not really")
    with pytest.raises(TelemetryError, match="not a readable Parquet file"):
        read_parquet_run(p)


def test_load_run_rejects_what_it_cannot_read(sample_root: Path, tmp_path: Path) -> None:
    with pytest.raises(TelemetryError, match="an archive holds many runs"):
        load_run(sample_root / "Reveal_GPU.zip")
    with pytest.raises(TelemetryError, match="not a collector run"):
        load_run(tmp_path)
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(TelemetryError, match="unknown run file type '.csv'"):
        load_run(tmp_path / "x.csv")
    with pytest.raises(FileNotFoundError):
        load_run(tmp_path / "missing.txt")


def test_load_collector_dir_dispatches_to_read_collector_run(tmp_path: Path) -> None:
    """A real (1 s, procfs cpu probe) collector run loads through load_run, both views."""
    from reveal_lab.collect import collect
    from reveal_lab.io import read_collector_run

    out = tmp_path / "run"
    collect(out, interval_s=0.1, duration_s=1.0, probes="cpu", handle_signals=False)
    for view in ("dataset", "raw"):
        got, want = load_run(out, view=view), read_collector_run(out, view=view)
        assert got.frame.equals(want.frame) and got.meta.hosts == want.meta.hosts
    assert load_run(out).frame.height > 0


def test_fixtures_are_reproducible(tmp_path: Path, sample_root: Path) -> None:
    """The committed fixtures are exactly what the script writes (never edited by hand)."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "make_fixtures.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], check=True, capture_output=True)
    for f in sorted(sample_root.iterdir()):
        assert (tmp_path / f.name).read_bytes() == f.read_bytes(), f.name
    assert sum(f.stat().st_size for f in sample_root.iterdir()) < 2_000_000
    with zipfile.ZipFile(sample_root / "Reveal_GPU.zip") as z:
        assert {n.split("/")[0] for n in z.namelist()} == {"train_separated", "infer_separated"}
    shutil.rmtree(tmp_path)
