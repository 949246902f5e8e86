"""reveal-lab synth public: the public layout with its quirks, read back by the loader."""

from __future__ import annotations

import zipfile

import polars as pl
import pytest

from reveal_lab.cli import main
from reveal_lab.io import open_dataset
from reveal_lab.scale import dataset_problems, map_runs, study_refs
from reveal_lab.studies import overview_piece
from reveal_lab.synth import write_public_proxy


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    root = tmp_path_factory.mktemp("proxy")
    summary = write_public_proxy(root, runs_per_workload=4, seconds=8.0, seed=3)
    return root, summary


def test_layout_and_quirks(proxy):
    root, s = proxy
    assert s["runs"] == 16 and s["two_host_files"] == 2 and s["planted"] == 4
    names = {z: zipfile.ZipFile(root / z).namelist() for z in ("Reveal_GPU.zip", "Reveal_CPU.zip")}
    assert any(n.endswith(".DS_Store") for n in names["Reveal_GPU.zip"])
    assert any(n.startswith("infer_seperated/") for n in names["Reveal_CPU.zip"])
    assert any(n.startswith("data_") or "/data_" in n for n in names["Reveal_GPU.zip"])
    truth = pl.read_csv(root / "truth.csv")
    assert truth["file"].n_unique() == 4


def test_loader_reads_it_and_names_what_it_cannot(proxy):
    root, _ = proxy
    ds = open_dataset(root)
    assert set(ds.index["platform"]) == {"gpu", "cpu"}
    rc = ds.reconcile()
    assert rc.missing_files.height == 1 and not rc.ok  # meta_gpu.csv names a file that is not there
    res = map_runs(overview_piece, study_refs(root), 50, progress=False)
    table = pl.concat([t for t, _ in res.pieces])
    widths = dict(zip(table["platform"], table["n_metrics"], strict=False))
    assert 740 <= min(table.filter(pl.col("hosts").str.contains(",").not_())["n_metrics"]) <= 800
    assert widths and table.filter(pl.col("hosts").str.contains(","))["n_metrics"].min() > 1400  # two hosts
    errors = " ".join(res.skipped["error"].to_list())
    assert res.skipped.height == 2 and "first column must hold the timestamps" in errors and "CRC" in errors
    problems = dataset_problems(root)
    assert problems.height == 1 and "meta_gpu.csv, line" in problems["error"][0]
    assert "missing" in problems["file"][0]


def test_cli(tmp_path, capsys):
    assert main(["synth", "public", str(tmp_path / "p"), "--runs-per-workload", "1", "--seconds", "3",
                 "--no-bad-inputs"]) == 0
    assert "4 runs" in capsys.readouterr().out
    assert not dataset_problems(tmp_path / "p").height
