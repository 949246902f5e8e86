"""The Dask backend on the bundled fixture: a real 2-worker LocalCluster against the
in-process pipeline, failure isolation, the bounded submission window, the CLI."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reveal_lab.config import fixtures_dir, get_preset
from reveal_lab.io import open_dataset
from reveal_lab.pipeline import POLICIES, detect_run
from reveal_lab.scale import INPROCESS, plan_local_cluster, run_refs, scan

distributed = pytest.importorskip("distributed")

# the fixture's all-NaN / all-zero columns are reported by the loader on every read
pytestmark = pytest.mark.filterwarnings("ignore::reveal_lab.telemetry.TelemetryWarning")

FIXTURE = fixtures_dir() / "reveal_sample"
PRESET = "smoke"
#: the fixture is noise without planted faults: no deviation lasts the 4 windows that the default
#: for a run alone asks, so every window over a threshold counts, to give the tables rows to compare
MIN_RUN = 1
SORT = ["run_id", "window_id", "host", "metric", "feature"]


@pytest.fixture(scope="module")
def pipeline_results() -> tuple[pl.DataFrame, dict[str, dict]]:
    """Anomaly tables and summaries from calling the pipeline directly, run by run, in this process."""
    ds = open_dataset(FIXTURE)
    frames, summaries = [], {}
    for run_id in ds.run_ids:
        det = detect_run(ds.load(run_id), preset=get_preset(PRESET), min_run=MIN_RUN)
        frames.append(det.evidence.select(pl.lit(run_id).alias("run_id"), pl.all()))
        summaries[run_id] = det.summary
    return pl.concat(frames, how="vertical").sort(SORT, maintain_order=True), summaries


@pytest.fixture(scope="module")
def reference(pipeline_results) -> pl.DataFrame:
    return pipeline_results[0]


def test_local_cluster_matches_in_process_pipeline(client, reference, pipeline_results):
    res = scan(
        FIXTURE,
        scheduler=client,
        task_kwargs={"preset": PRESET, "policy": POLICIES["default"].with_(min_run=MIN_RUN)},
        progress=False,
        echo=lambda _m: None,
    )
    assert res.backend == "dask" and res.n_workers == 2
    assert not res.failures, [f.error for f in res.failures]
    assert len(res.outcomes) == len(open_dataset(FIXTURE).run_ids) == 11
    got = res.anomalies.select(reference.columns).sort(SORT, maintain_order=True)
    assert got.height > 0
    assert_frame_equal(got, reference)  # identical anomaly tables, row for row
    # both worker processes took part (each worker loads its own runs from the zips)
    assert len({o.worker for o in res.outcomes}) == 2
    # per-run summaries agree with the pipeline's own counts
    for row in res.runs.iter_rows(named=True):
        want = pipeline_results[1][row["run_id"]]
        assert row["n_anomalous_windows"] == want["anomalous"]
        assert row["n_windows"] == want["windows"]
        assert row["n_evidence_rows"] == reference.filter(pl.col("run_id") == row["run_id"]).height


def test_in_process_backend_runs_the_same_code(reference):
    ids = open_dataset(FIXTURE).run_ids[:3]
    local = scan(
        FIXTURE,
        scheduler=INPROCESS,
        run_ids=ids,
        task_kwargs={"preset": PRESET, "policy": POLICIES["default"].with_(min_run=MIN_RUN)},
        progress=False,
    )
    want = reference.filter(pl.col("run_id").is_in(ids))
    assert_frame_equal(local.anomalies.select(want.columns).sort(SORT, maintain_order=True), want)


def _corrupt_copy(tmp_path: Path) -> tuple[Path, str]:
    """The fixture with one GPU member's text replaced by garbage (the zip itself stays valid)."""
    root = tmp_path / "data"
    shutil.copytree(FIXTURE, root)
    src = FIXTURE / "Reveal_GPU.zip"
    dst = root / "Reveal_GPU.zip"
    victim = None
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if victim is None and info.filename.endswith(".txt") and "VGG16" in info.filename:
                victim = info.filename
                data = b"\tPerf:IPC.htc-g003[-]\nnot a time\tnot a number\n"
            zout.writestr(info, data)
    assert victim is not None
    return root, Path(victim).stem


def test_failing_run_is_reported_while_the_others_finish(client, tmp_path):
    root, bad_id = _corrupt_copy(tmp_path)
    res = scan(
        root,
        scheduler=client,
        filters={"platform": "gpu"},
        task_kwargs={"preset": PRESET},
        progress=False,
        echo=lambda _m: None,
    )
    assert [f.run_id for f in res.failures] == [bad_id]
    failure = res.failures[0]
    assert failure.error and "TelemetryError" in failure.error
    assert "VGG16" in failure.error  # the error names the member it could not read
    assert failure.member and failure.member.endswith(bad_id + ".txt")
    assert len(res.succeeded) == 5
    # written out: failures.json names the run and its error; runs.csv has every run
    out = res.write(tmp_path / "out")
    failures = json.loads((out / "failures.json").read_text())
    assert failures[0]["run_id"] == bad_id and "TelemetryError" in failures[0]["error"]
    runs = pl.read_csv(out / "runs.csv")
    assert runs.height == 6 and runs.filter(~pl.col("ok")).get_column("run_id").to_list() == [bad_id]


def test_submission_window_bounds_runs_in_flight(client):
    res = scan(
        FIXTURE,
        scheduler=client,
        run_ids=open_dataset(FIXTURE).run_ids[:4],
        task_kwargs={"preset": PRESET},
        max_in_flight=2,
        progress=False,
        echo=lambda _m: None,
    )
    assert not res.failures
    assert 1 <= res.peak_in_flight <= 2


def test_dashboard_link_printed(client):
    msgs: list[str] = []
    scan(
        FIXTURE,
        scheduler=client,
        run_ids=[run_refs(FIXTURE)[0].run_id],
        task_kwargs={"preset": PRESET},
        progress=False,
        echo=msgs.append,
    )
    assert any(m.startswith("Dask dashboard: http") for m in msgs), msgs


def test_cli_scan_on_a_running_scheduler(client, tmp_path, capsys):
    from reveal_lab.cli import main

    out = tmp_path / "scan"
    rc = main(
        [
            "scan",
            str(FIXTURE),
            "--scheduler",
            client.scheduler.address,
            "--preset",
            PRESET,
            "--platform",
            "cpu",
            "--limit",
            "2",
            "--out",
            str(out),
            "--no-progress",
            "--min-run",
            str(MIN_RUN),
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "2 run(s)" in text and "0 failed" in text
    an = pl.read_csv(out / "anomalies.csv")
    assert {"run_id", "window_id", "subsystem", "metric", "feature", "claim"} <= set(an.columns)
    assert an.get_column("run_id").n_unique() == 2
    meta = json.loads((out / "scan.json").read_text())
    assert meta["n_runs"] == 2 and meta["backend"] == "dask"


def test_cluster_plan_is_bounded_by_cores_and_memory():
    p = plan_local_cluster()
    assert p.n_workers >= 1 and p.threads_per_worker == 1 and p.memory_limit > 0
    with pytest.raises(ValueError):
        plan_local_cluster(0)


def test_no_dashboard_link_when_the_scheduler_serves_none():
    """A scheduler started without a dashboard: ``scan --scheduler`` used to print
    ``Client.dashboard_link`` anyway (it is formatted from the local config and exists
    for every client); now it says there is none. Broken variant: returning
    ``client.dashboard_link`` unconditionally fails here."""
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    from reveal_lab.scale import dashboard_note

    with (
        LocalCluster(n_workers=0, processes=False, scheduler_kwargs={"dashboard": False}) as cluster,
        Client(cluster, timeout=30) as client,
    ):
        note = dashboard_note(client)
    assert note.startswith("Dask dashboard unavailable: the scheduler serves no dashboard"), note
    assert "http" not in note


def test_a_scan_that_flags_nothing_keeps_the_anomalies_columns(tmp_path):
    """No run has an anomalous window (``min_run`` longer than any run): ``anomalies`` and
    ``anomalies.csv`` are empty with every anomalies.csv column (they held only ``run_id``)."""
    from reveal_lab.pipeline import ANOMALIES_COLUMNS

    ids = open_dataset(FIXTURE).run_ids[:2]
    res = scan(
        FIXTURE,
        scheduler=INPROCESS,
        run_ids=ids,
        task_kwargs={"preset": PRESET, "policy": POLICIES["default"].with_(min_run=100_000)},
        progress=False,
    )
    assert len(res.succeeded) == 2 and res.anomalies.height == 0
    assert {"run_id", *ANOMALIES_COLUMNS} <= set(res.anomalies.columns)
    res.write(tmp_path)
    assert {"run_id", *ANOMALIES_COLUMNS} <= set(pl.read_csv(tmp_path / "anomalies.csv").columns)
