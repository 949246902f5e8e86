"""``reveal-lab detect`` on the public-dataset fixture and on a real collector recording."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.cli import main
from reveal_lab.config import fixtures_dir
from reveal_lab.pipeline import using_cache

CPU_ZIP = fixtures_dir() / "reveal_sample" / "Reveal_CPU.zip"
GPU_ZIP = fixtures_dir() / "reveal_sample" / "Reveal_GPU.zip"
TWO_HOSTS = "train_separated/train_BERTLARGEforTextClassification_imdb_2025-06-05T14-20-31_nserver07.txt"
GPU_RUN = "train_separated/train_VGG16forImageClassification_CIFAR10_2025-05-11T12-27-13_htc-g003.txt"
GPU_BASE = "infer_separated/infer_Resnet18forImageClassification_CIFAR10_2025-05-12T10-00-05_htc-g003.txt"
#: the fast preset: the checks below read what the flags decide (thresholds' rule, cross-host
#: deviation), which the number of trees in the Isolation Forest does not change
SMOKE = ("--preset", "smoke")
COLUMNS = "window_id,start,end,host,methods,agreement,subsystem,metric,feature,score,claim"


@pytest.fixture
def run_cache(tmp_path_factory):
    """One run cache (``$REVEAL_LAB_CACHE``) for the detects of one test: a run's view, pruned
    space and window features are computed once for the test's several detects of it; the
    scores are keyed by every setting that decides them (the calibration, the clip ...)."""
    with using_cache(tmp_path_factory.mktemp("run-cache")) as folder:
        yield folder


def _check_report(out: Path) -> dict:
    assert (out / "anomalies.csv").read_text().splitlines()[0] == COLUMNS
    assert (out / "report.md").exists() and (out / "report.html").exists()
    return json.loads((out / "summary.json").read_text())


@pytest.mark.integration
def test_detect_on_the_public_fixture_two_host_file(tmp_path, capsys):
    out = tmp_path / "rep"
    rc = main(["detect", f"{CPU_ZIP}::{TWO_HOSTS}", "--out", str(out), "--preset", "smoke"])
    assert rc == 0
    s = _check_report(out)
    run = s["runs"][0]
    assert run["hosts"] == ["nserver07", "nserver08"] and set(run["per_host"]) == {"nserver07", "nserver08"}
    assert run["windows"] > 40
    csv = pl.read_csv(out / "anomalies.csv")
    assert set(csv["host"]) <= {"nserver07", "nserver08"}
    assert "windows" in capsys.readouterr().out


@pytest.mark.integration
def test_detect_unzipped_txt_with_baseline_and_window_options(tmp_path):
    with zipfile.ZipFile(GPU_ZIP) as z:
        z.extract(GPU_RUN, tmp_path)
        z.extract(GPU_BASE, tmp_path)
    out = tmp_path / "rep"
    rc = main(
        [
            "detect",
            str(tmp_path / GPU_RUN),
            "--baseline",
            str(tmp_path / GPU_BASE),
            "--window",
            "4s",
            "--stride",
            "2s",
            "--min-agreement",
            "2",
            "--out",
            str(out),
            "--preset",
            "smoke",
        ]
    )
    assert rc == 0
    s = _check_report(out)
    run = s["runs"][0]
    assert (
        run["fit_mode"] == "baseline"
        and run["config"]["window_s"] == 4.0
        and run["config"]["stride_s"] == 2.0
    )
    assert run["min_agreement"] == 2


def test_detect_errors_are_plain(tmp_path, capsys):
    assert main(["detect", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "r")]) == 1
    assert "no such file" in capsys.readouterr().err
    # a window of 0 s is refused at parse time (exit 2), naming the flag and its range
    with pytest.raises(SystemExit) as exc:
        main(["detect", f"{CPU_ZIP}::{TWO_HOSTS}", "--window", "0s", "--out", str(tmp_path / "r")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--window" in err and "expected a duration from 1ms to 1h, got '0s'" in err


@pytest.mark.integration
@pytest.mark.slow
def test_detect_on_a_real_collector_recording(tmp_path):
    """Record 20 s of this machine with ``reveal-lab collect`` (procfs probes, real
    subprocess), then run ``reveal-lab detect`` on the folder as a user would: the collector's
    own start-up is left out of what is scored, and the report says so."""
    rec = tmp_path / "run"
    exe = [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())"]
    r = subprocess.run(
        [*exe, "collect", "--duration", "20s", "--probes", "procfs", "--out", str(rec)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    out = tmp_path / "rep"
    r = subprocess.run(
        [*exe, "detect", str(rec), "--out", str(out), "--preset", "smoke"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    s = _check_report(out)
    run = s["runs"][0]
    assert run["windows"] >= 4
    assert "collector's own start-up" in (out / "report.md").read_text()
    assert run["meta"]["platform"] is None or isinstance(run["meta"]["platform"], str)
    csv = pl.read_csv(out / "anomalies.csv", infer_schema_length=0)
    if csv.height:
        assert set(csv["subsystem"]) <= {"cpu", "gpu", "memory", "network", "storage", "system"}


@pytest.mark.integration
def test_detect_cross_host_over_runs_of_three_hosts(tmp_path, capsys):
    with zipfile.ZipFile(CPU_ZIP) as z:
        members = [m for m in z.namelist() if m.endswith(".txt")]
    runs = [f"{CPU_ZIP}::{m}" for m in members if "nserver15" in m or "Resnet50" in m or "VGG19" in m]
    out = tmp_path / "rep"
    assert main(["detect", *runs, "--cross-host", "--out", str(out), "--preset", "smoke"]) == 0
    text = capsys.readouterr().out
    assert "cross-host: 3 hosts" in text
    xh = pl.read_csv(out / "crosshost.csv")
    assert set(xh["host"]) == {"nserver07", "nserver08", "nserver15"}
    assert "## Cross-host deviation" in (out / "report.md").read_text()
    s = json.loads((out / "summary.json").read_text())
    assert s["crosshost_persistent"] == int(xh["persistent"].sum())


@pytest.mark.integration
def test_detect_defaults_prune_trim_and_robust_thresholds_and_no_prune(tmp_path, capsys):
    run = f"{CPU_ZIP}::{TWO_HOSTS}"
    out = tmp_path / "rep"
    # a run alone scores every metric by default (a space fitted on it drops what its faults
    # move together); --prune fits the space on it and saves it beside the report
    plain = tmp_path / "plain"
    assert main(["detect", run, "--out", str(plain), "--preset", "smoke"]) == 0
    assert not _check_report(plain)["runs"][0]["config"]["pruning"]["applied"]
    assert not (plain / "pruning.json").exists()
    assert main(["detect", run, "--out", str(out), "--preset", "smoke", "--prune"]) == 0
    saved = json.loads((out / "pruning.json").read_text())
    s = _check_report(out)["runs"][0]
    cfg = s["config"]
    assert cfg["pruning"]["applied"] and cfg["pruning"]["n_selected"] == len(saved["selected"])
    # a public-dataset file is one workload run: the default scores it whole and says so
    assert cfg["thresholds"] == "robust" and not cfg["trim"]["applied"] and cfg["trim"]["mode"] == "none"
    printed = capsys.readouterr().out
    assert "robust thresholds" in printed and "Scored the whole" in printed
    assert "nothing left out" in (out / "report.md").read_text()
    # the utilisation rule only when asked, and the report says what it left out
    out_active = tmp_path / "active"
    assert main(["detect", run, "--out", str(out_active), "--preset", "smoke", "--trim", "active"]) == 0
    trim = _check_report(out_active)["runs"][0]["config"]["trim"]
    assert trim["mode"] == "active" and "how" in trim["run"]
    assert trim["run"]["left_out"] in (out_active / "report.md").read_text()
    out2 = tmp_path / "all"
    args = ["--preset", "smoke", "--no-prune", "--thresholds", "self"]
    assert main(["detect", run, "--out", str(out2), *args]) == 0
    s2 = _check_report(out2)["runs"][0]
    assert not s2["config"]["pruning"]["applied"] and s2["fit_mode"] == "self"
    assert not (out2 / "pruning.json").exists()
    # the report's evidence names only metrics of the saved pruned space
    from reveal_lab.telemetry import parse_metric_name

    keys = {parse_metric_name(m).key() for m in pl.read_csv(out / "anomalies.csv")["metric"]}
    assert keys <= set(saved["selected"])



def test_detect_min_run_reaches_the_detection_and_the_report(tmp_path, capsys):
    """``--min-run N`` reaches the detection (the summary's config, a share flagged no larger
    than with 1) and the report says so; ``--min-run 0`` is refused by name. (That every kept
    flag lies in a run of N+ windows is checked on the API in ``test_method.py``.)"""
    run = f"{CPU_ZIP}::{TWO_HOSTS}"
    shares, dropped = {}, {}
    for n in (1, 4, None):  # None: the default, 8 for a run alone
        out = tmp_path / f"rep{n}"
        flag = [] if n is None else ["--min-run", str(n)]
        assert main(["detect", run, "--out", str(out), "--preset", "smoke", *flag]) == 0
        s = _check_report(out)["runs"][0]
        assert s["config"]["min_run_windows"] == (n or 8)
        shares[n], dropped[n] = s["anomalous_share"], s["short_runs_dropped"]
        text = (out / "report.md").read_text()
        assert (f"{n or 8} or more consecutive windows" in text) == (n != 1)
        if n != 1:
            assert f"dropped: {dropped[n]} window(s) here" in text
    assert shares[None] <= shares[4] <= shares[1] and dropped[None] >= dropped[4]
    assert dropped[1] == 0 and dropped[4] == round((shares[1] - shares[4]) * s["windows"])
    with pytest.raises(SystemExit):
        main(["detect", run, "--out", str(tmp_path / "bad"), "--min-run", "0"])
    assert "--min-run" in capsys.readouterr().err


@pytest.mark.slow
def test_detect_calibration_flag_reaches_the_thresholds(tmp_path, run_cache):
    """``--calibration``: with five fault-free baseline runs of a recorded lab workload, the
    trimmed rule (default) leaves the most extreme left-out run out, so its thresholds are
    never above the pooled rule's, and the summary says which rule set them."""
    from reveal_lab.config import data_dir
    from reveal_lab.io import read_labels, read_meta

    root = data_dir()
    meta, labels = read_meta(root / "meta_lab.csv"), read_labels(root / "labels.csv")
    run = labels.filter(pl.col("fault_type") == "storage_read").row(0, named=True)
    row = meta.filter((pl.col("run") == run["run"]) & (pl.col("host") == run["host"])).row(0, named=True)
    base = meta.filter(
        (pl.col("fault") == "none") & (pl.col("workload") == row["workload"]) & (pl.col("phase") == row["phase"])
        & (pl.col("host") == row["host"])
    )["source_file"].to_list()
    assert len(base) >= 5
    paths = [str(root / s.removeprefix("./")) for s in (row["source_file"], *base)]
    summaries = {}
    for rule in ("trimmed", "pooled"):
        out = tmp_path / rule
        args = ["detect", paths[0], "--baseline", *paths[1:], "--out", str(out), "--calibration", rule, *SMOKE]
        assert main(args) == 0
        summaries[rule] = _check_report(out)["runs"][0]
    thr = {rule: s["config"]["thresholds"] for rule, s in summaries.items()}
    assert {s["config"]["calibration"] for s in summaries.values()} == {"trimmed", "pooled"}
    (host,) = summaries["trimmed"]["thresholds"]
    t, p = summaries["trimmed"]["thresholds"][host], summaries["pooled"]["thresholds"][host]
    assert all(t[m] <= p[m] for m in t) and any(t[m] < p[m] for m in t), (t, p)
    assert thr == {"trimmed": "calibrated", "pooled": "calibrated"}
    assert summaries["trimmed"]["config"]["z_clip"] == 10.0
    # --z-clip none: the paper's unbounded z, so the Z-score threshold can only go up
    out = tmp_path / "unclipped"
    assert main(["detect", paths[0], "--baseline", *paths[1:], "--out", str(out), "--z-clip", "none", *SMOKE]) == 0
    s0 = _check_report(out)["runs"][0]
    assert s0["config"]["z_clip"] is None
    assert "each standardized feature counts at most 10 units" in (tmp_path / "trimmed" / "report.md").read_text()
    assert "unclipped z" in (out / "report.md").read_text()
    assert s0["thresholds"][host]["zscore"] >= t["zscore"]


@pytest.mark.slow
def test_detect_cross_host_against_the_jobs_fault_free_runs(tmp_path, capsys):
    """The three host files of a recorded IRQ-steering run (labB's network processing moved
    off its core) with the host files of four fault-free runs of the job as --baseline: the
    baseline files are grouped into runs by their run_group, each host is judged against itself
    in them, and labB alone deviates, in the network."""
    from reveal_lab.config import data_dir
    from reveal_lab.io import read_labels, read_meta

    root = data_dir()
    meta, labels = read_meta(root / "meta_lab.csv"), read_labels(root / "labels.csv")
    lab = labels.filter(pl.col("fault_type") == "config_irq_imbalance").row(0, named=True)

    def files(rows: pl.DataFrame) -> list[str]:
        return [str(root / s.removeprefix("./")) for s in rows["source_file"]]

    runs = files(meta.filter(pl.col("run") == lab["run"]))
    free = meta.filter((pl.col("fault") == "none") & (pl.col("world_size") > 1))
    base = files(free.filter(pl.col("run").is_in(free["run"].unique(maintain_order=True).to_list()[:4])))
    out = tmp_path / "rep"
    assert main(["detect", *runs, "--cross-host", "--baseline", *base, "--out", str(out), *SMOKE]) == 0
    assert "cross-host: 3 hosts against 4 baseline runs of the same hosts" in capsys.readouterr().out
    xh = pl.read_csv(out / "crosshost.csv")
    assert {"excess", "threshold", "cluster_persistent"} <= set(xh.columns)
    hit = xh.filter(pl.col("persistent"))
    assert hit.height >= 1 and set(hit["host"]) == {lab["host"]} == {"labB"}
    assert "network" in set(hit["subsystem"]) and (hit["excess"].abs() > hit["threshold"]).all()
    assert "own fault-free runs" in (out / "report.md").read_text()


@pytest.mark.slow
def test_detect_asks_two_detectors_with_calibrated_thresholds_as_evaluate(tmp_path, capsys, run_cache):
    """With 2+ baseline runs the thresholds are calibrated and a window needs two detectors
    (as `reveal-lab evaluate` measures it); alone, or with --min-agreement, as asked."""
    from reveal_lab.config import data_dir
    from reveal_lab.io import read_meta

    root = data_dir()
    meta = read_meta(root / "meta_lab.csv").filter(
        (pl.col("model") == "CNN") & (pl.col("phase") == "infer") & (pl.col("fault") == "none")
    )
    files = [str(root / s.removeprefix("./")) for s in meta["source_file"].to_list()[:3]]

    def agreement(*extra: str) -> tuple[int, str]:
        out = tmp_path / f"rep{len(list(tmp_path.iterdir()))}"
        assert main(["detect", files[0], *extra, "--out", str(out), "--preset", "smoke"]) == 0
        run = json.loads((out / "summary.json").read_text())["runs"][0]
        return run["min_agreement"], run["fit_mode"]

    assert agreement("--baseline", *files[1:]) == (2, "calibrated")
    assert agreement("--baseline", *files[1:], "--min-agreement", "1") == (1, "calibrated")
    assert agreement() == (1, "robust")
