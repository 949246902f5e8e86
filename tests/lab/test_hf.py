"""Hugging Face sharing: export loads with the real `datasets` library "
"(offline); push fails fast and clearly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.config import data_dir
from reveal_lab.io import read_labels, read_meta
from reveal_lab.lab import HubError, export_hf, hf_column_name, push_hf
from reveal_lab.telemetry import TelemetryError


def _small_copy(tmp: Path) -> Path:
    """Three runs of the bundled lab dataset (a faulted train run, a baseline infer run, a DDP host)."""
    src = data_dir()
    meta, labels = read_meta(src / "meta_lab.csv"), read_labels(src / "labels.csv")
    faulted = labels.filter(pl.col("scope") == "episode")["run"][0]
    pick = pl.concat(
        [
            meta.filter(pl.col("run") == faulted).head(1),
            meta.filter((pl.col("fault") == "none") & (pl.col("phase") == "infer")).head(1),
            meta.filter(pl.col("world_size") > 1).head(1),
        ]
    ).unique(subset="source_file", maintain_order=True)
    out = tmp / "lab"
    for sf in pick["source_file"]:
        rel = sf.removeprefix("./")
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, out / rel)
    pick.write_csv(out / "meta_lab.csv")
    (
        labels.filter(pl.col("run").is_in(pick["run"].to_list()))
        .with_columns(pl.col("start", "end").dt.strftime("%Y-%m-%d %H:%M:%S%.3f"))
        .write_csv(out / "labels.csv")
    )
    return out


def test_export_loads_with_datasets(tmp_path, monkeypatch):
    # imported here, not at collection: every pytest-xdist worker collects this module
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    src = _small_copy(tmp_path)
    repo = export_hf(src, tmp_path / "hf", runs_per_shard=1)
    card = (repo / "README.md").read_text()
    assert card.startswith("---\n") and "configs:" in card and "dataset_info:" in card and "features:" in card
    meta = read_meta(src / "meta_lab.csv")
    cache = tmp_path / "cache"
    ds = datasets.load_dataset(str(repo), cache_dir=str(cache))
    by_phase = meta.group_by("phase").agg(pl.col("n_rows").sum())
    for phase, n in by_phase.iter_rows():
        assert ds[phase].num_rows == n  # every sample of every run, nothing lost
    feats = ds[meta["phase"][0]].features
    assert str(feats["timestamp"].dtype).startswith("timestamp[ms")
    assert feats["Memory:Dirty[kB]"].dtype == "float64"  # host-free metric names
    assert {"run_id", "run", "host", "fault"} <= set(feats)
    # one schema for all shards, values equal to the source files
    row = meta.row(0, named=True)
    one = ds[row["phase"]].filter(lambda r: r["run_id"] == Path(row["source_file"]).stem)
    src_frame = pl.read_parquet(src / row["source_file"].removeprefix("./"))
    col = next(c for c in src_frame.columns if c.startswith("CPU:Busy%.-."))
    assert one[hf_column_name(col)] == pytest.approx(src_frame[col].to_list(), nan_ok=True)
    labels = datasets.load_dataset(str(repo), "labels", cache_dir=str(cache))["labels"]
    assert labels.num_rows == read_labels(src / "labels.csv").height > 0
    assert datasets.load_dataset(str(repo), "meta", cache_dir=str(cache))["meta"].num_rows == meta.height
    with pytest.raises(FileExistsError):
        export_hf(src, repo)


def test_push_without_token_fails_fast(tmp_path):
    src = _small_copy(tmp_path)
    repo = export_hf(src, tmp_path / "hf")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hfhome"), "HF_TOKEN": "", "HF_HUB_OFFLINE": "0"}
    env.pop("HF_TOKEN")
    cli = [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main(sys.argv[1:]))"]
    r = subprocess.run(
        [*cli, "dataset", "push", str(repo), "--repo-id", "u/x"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )  # time-bounded: fails fast
    assert r.returncode == 1 and "no Hugging Face token" in r.stderr


def test_push_errors_are_clear(tmp_path, monkeypatch):
    src = _small_copy(tmp_path)
    repo = export_hf(src, tmp_path / "hf")
    with pytest.raises(HubError, match="not an exported dataset folder"):
        push_hf(src, "u/x", token="hf_x")
    with pytest.raises(HubError, match="user/name"):
        push_hf(repo, "noslash", token="hf_x")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubError, match="HF_HUB_OFFLINE"):
        push_hf(repo, "u/x", token="hf_x")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(HubError, match="cannot reach"):
        push_hf(repo, "u/x", token="hf_x", timeout_s=5)


def test_export_refuses_a_run_outside_the_splits(tmp_path):
    """A run whose phase is neither train nor infer would fall out of every shard: an error, not a drop."""
    src = _small_copy(tmp_path)
    meta = read_meta(src / "meta_lab.csv")
    meta.with_columns(
        pl.when(pl.int_range(pl.len()) == 1).then(pl.lit("eval")).otherwise("phase").alias("phase")
    ).write_csv(src / "meta_lab.csv")
    with pytest.raises(TelemetryError, match=r"meta_lab\.csv, line 3, column 'phase': phase 'eval'"):
        export_hf(src, tmp_path / "hf")
