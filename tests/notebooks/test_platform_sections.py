"""Studies in platform sections (``platform="each"``, the default): on a dataset of GPU and
CPU hosts each platform is studied apart, its rows under a ``platform`` column and its
figures as ``NAME--PLATFORM``; the GPU section equals a study of the GPU hosts alone; on one
platform ``each`` gives what ``all`` gives, so the bundled lab dataset's outputs are kept.

Broken variants caught: sections pooled again (CPU rows in the GPU section, or one figure
for both), a ``platform`` column added on a one-platform dataset, a section selecting
other runs than ``--platform gpu``, claims reading the sum of both sections' shares."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reveal_lab.notebooks import expected_outputs, run_notebook
from reveal_lab.scale import study_platforms
from reveal_lab.studies import ClaimContext, by_platform, section_figure, section_file
from reveal_lab.synth import write_public_proxy

pytestmark = pytest.mark.filterwarnings("ignore::reveal_lab.telemetry.TelemetryWarning")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    root = tmp_path_factory.mktemp("proxy")
    write_public_proxy(root, runs_per_workload=2, seconds=8.0, seed=3)
    return root


def test_each_names_every_platform_of_the_selection_and_one_platform_is_all(proxy):
    from reveal_lab.io import open_dataset

    assert study_platforms(proxy) == ["gpu", "cpu"]
    index = open_dataset(proxy).index
    gpu_workloads = sorted(set(index.filter(pl.col("platform") == "gpu")["workload"].to_list()))
    assert study_platforms(proxy, "each", workloads=",".join(gpu_workloads)) == ["all"]
    assert study_platforms(proxy, "cpu") == ["cpu"] and study_platforms("synth") == ["all"]
    with pytest.raises(ValueError, match="each, gpu, cpu, all"):
        study_platforms(proxy, "tpu")


def test_one_section_keeps_its_outputs_and_several_say_their_platform(tmp_path):
    one = pl.DataFrame({"x": [1, 2]})
    assert by_platform({"all": one}) is one
    both = by_platform({"gpu": one, "cpu": one.with_columns(pl.col("x") * 10)})
    assert both.columns == ["platform", "x"] and both.rows() == [("gpu", 1), ("gpu", 2), ("cpu", 10), ("cpu", 20)]
    assert section_file("pruning.json", "all", ["all"]) == "pruning.json"
    # a figure of one layout replaces the other's files left by an earlier run
    figs = tmp_path / "figures"
    figs.mkdir()
    (figs / "f.png").write_bytes(b"x")
    assert section_figure(tmp_path, "f", "gpu", ["gpu", "cpu"]) == "f--gpu" and not (figs / "f.png").exists()
    (figs / "f--cpu.png").write_bytes(b"x")
    assert section_figure(tmp_path, "f", "all", ["all"]) == "f" and not (figs / "f--cpu.png").exists()


def test_a_claim_reads_its_platform_section(tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    pl.DataFrame({"platform": ["gpu", "gpu", "cpu", "cpu"], "policy": ["paper"] * 4,
                  "subsystem": ["cpu", "memory"] * 2, "share": [0.7, 0.3, 0.2, 0.8]}
                 ).write_csv(tables / "evidence_by_subsystem.csv")
    pl.DataFrame({"platform": ["gpu", "cpu"], "workload": ["a", "b"]}).write_csv(tables / "dataset_runs.csv")

    def share(platform):
        ctx = ClaimContext(tmp_path, policy="paper", platform=platform)
        df = ctx.table("evidence_by_subsystem")
        return df.filter(pl.col("subsystem") == "cpu")["share"].sum(), ctx.sections_read

    assert share("gpu") == (0.7, {"gpu"}) and share("cpu") == (0.2, {"cpu"})
    assert share(None) == (0.7, {"gpu"})  # the whole dataset's claims read the HPC (GPU) cluster's section
    assert ClaimContext(tmp_path).table("dataset_runs").height == 2  # runs: every platform's
    assert ClaimContext(tmp_path, platform="cpu").table("dataset_runs")["workload"].to_list() == ["b"]


@pytest.mark.notebook
@pytest.mark.slow
def test_notebook_01_writes_each_platform_apart_and_its_gpu_section_equals_gpu_alone(proxy, manifest, tmp_path):
    from reveal_lab.io import open_dataset

    entry = manifest.entry("01-dataset-overview")
    gpu_workloads = ",".join(sorted(set(
        open_dataset(proxy).index.filter(pl.col("platform") == "gpu")["workload"].to_list())))
    outs = {}
    for name, overrides in {"each": {"platform": "each"}, "gpu": {"platform": "gpu"},
                            "one": {"platform": "each", "workloads": gpu_workloads}}.items():
        outs[name] = tmp_path / name
        run_notebook(manifest, entry, preset="full", data=str(proxy), out=outs[name], overrides=overrides)

    def table(name, which):
        return pl.read_csv(outs[name] / "tables" / f"{which}.csv")

    runs = table("each", "dataset_runs")
    assert sorted(set(runs["platform"])) == ["cpu", "gpu"]
    assert_frame_equal(runs.filter(pl.col("platform") == "gpu"), table("gpu", "dataset_runs"))
    usage = table("each", "usage_summary")
    assert usage.columns[0] == "platform" and sorted(set(usage["platform"])) == ["cpu", "gpu"]
    assert_frame_equal(usage.filter(pl.col("platform") == "gpu").drop("platform"), table("gpu", "usage_summary"))
    figs = {p.name for p in expected_outputs(entry, outs["each"]) if p.parent.name == "figures"}
    assert figs == {f"usage_cdfs--{p}.{e}" for p in ("gpu", "cpu") for e in ("png", "pdf")}
    # one platform selected: what `all` (here: the GPU hosts alone) gives, file for file
    for which in entry.tables:
        assert (outs["one"] / "tables" / f"{which}.csv").read_bytes() == \
            (outs["gpu"] / "tables" / f"{which}.csv").read_bytes(), which
    assert (outs["one"] / "figures" / "usage_cdfs.png").exists()


@pytest.mark.notebook
@pytest.mark.slow
def test_notebook_03_on_a_dataset_without_labels_writes_its_label_table_and_the_claims_cannot(
        proxy, manifest, tmp_path):
    """The public dataset has no ``labels.csv``: notebook 03 still writes every table of the
    manifest (a reproduction must not fail on it); ``detection_vs_labels`` holds the ``(all)``
    rows only, with no recall and no precision (nothing says which windows are false), and the
    claims read from it come out as "cannot", not as a figure."""
    from reveal_lab.studies._claims import CLAIMS

    entry = manifest.entry("03-detection")
    out = tmp_path / "o3"
    run_notebook(manifest, entry, preset="smoke", data=str(proxy), out=out,
                 overrides={"pruning": "", "unpruned": False})
    missing = [p for p in expected_outputs(entry, out) if not p.exists()]
    assert not missing, missing
    table = pl.read_csv(out / "tables" / "detection_vs_labels.csv")
    assert set(table["fault_type"]) == {"(all)"} and table.height >= 1
    assert table["recall"].null_count() == table.height and table["precision"].null_count() == table.height
    assert table["episodes"].sum() == 0
    for claim in (c for c in CLAIMS if c.claim_id in ("five_issues_found", "pruning_improves_accuracy")):
        for policy in ("paper", "default"):
            assert claim.read(ClaimContext(out, policy=policy, platform="gpu")).value is None, claim.claim_id
