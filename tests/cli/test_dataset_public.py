"""``reveal-lab dataset ls | info | pull`` on the bundled sample, and pull's fast failure."""

from __future__ import annotations

import http.server
import io
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.cli import main
from reveal_lab.cli._dataset_public import REPO_ID, hub_unreachable
from reveal_lab.io import open_dataset
from reveal_lab.io._sample import sample_dir

pytestmark = pytest.mark.filterwarnings("ignore::reveal_lab.telemetry.TelemetryWarning")
ROOT = str(sample_dir())
CLI = [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main(sys.argv[1:]))"]


def test_ls_table_with_filters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dataset", "ls", ROOT, "--platform", "gpu", "--phase", "infer"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "platform",
        "phase",
        "model",
        "task",
        "dataset",
        "host",
        "start",
        "n_rows",
        "run_id",
    ]
    assert out[-1] == "3 runs"
    body = out[1:-1]
    assert [line.split()[2] for line in body] == ["Resnet18", "ViTB16", "BERTBASE"]  # sorted by start
    assert all(line.startswith("gpu") and " infer " in line for line in body)


def test_ls_csv_is_the_filtered_index(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dataset", "ls", ROOT, "--model", "LLAMA", "--model", "MISTRAL", "--format", "csv"]) == 0
    got = pl.read_csv(io.StringIO(capsys.readouterr().out))
    want = open_dataset(ROOT).filter(model=["LLAMA", "MISTRAL"]).index
    assert sorted(got.get_column("run_id").to_list()) == sorted(want.get_column("run_id").to_list())
    assert set(got.get_column("phase")) == {"fine-tuning"}


def test_ls_default_root_from_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("REVEAL_PUBLIC_DIR", ROOT)
    assert main(["dataset", "ls", "--limit", "2"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 of 11 runs"
    monkeypatch.setenv("REVEAL_PUBLIC_DIR", str(tmp_path / "none"))
    assert main(["dataset", "ls"]) == 1
    assert "dataset pull --dest" in capsys.readouterr().err


def test_info_reports_counts_columns_and_the_gpu_mismatch(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dataset", "info", ROOT, "--check-rows"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{ROOT}: 11 runs (cpu 5, gpu 6)")
    assert "gpu: 85 columns × 6 files; 84 distinct metrics" in out
    assert "cpu: 58 columns × 4 files, 115 columns × 1 files" in out
    assert "multi-host files: 1: train_BERTLARGEforTextClassification" in out
    assert "meta_cpu.csv: 5 rows, 5 files, 5 matched" in out and "matches its files" in out
    assert "meta_gpu.csv: 5 rows, 6 files, 4 matched, 1 listed without a file, 2 files not listed" in out
    assert "MISMATCH" in out
    assert "n_rows  327  310" in out  # checked with --check-rows


def test_info_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dataset", "info", ROOT, "--json", "--platform", "cpu"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["runs"] == 5 and d["per_platform"] == {"cpu": 5}
    assert d["columns"]["cpu"]["metrics_per_subsystem"] == {
        "cpu": 33,
        "memory": 8,
        "network": 12,
        "storage": 4,
    }
    assert d["reconcile"]["per_platform"][0]["platform"] == "cpu"


# settings of the machine running the tests (a CI runner behind a proxy, or one that sets
# HF_HUB_OFFLINE): the tests that talk to a local endpoint must reach it directly and online,
# or "refused" / "silent" / "503" becomes whatever the proxy answers, or "offline"
OUTSIDE_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "hf_hub_offline")


def _direct(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.lower() not in OUTSIDE_VARS}


@pytest.fixture
def direct(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in list(os.environ):
        if k.lower() in OUTSIDE_VARS:
            monkeypatch.delenv(k)


def _pull(dest: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**_direct(dict(os.environ)), **env_extra}
    cmd = [*CLI, "dataset", "pull", "--dest", str(dest), "--timeout", "5", "--pattern", "meta_*.csv"]
    # the timeout bounds the test: a pull that hangs fails it instead of blocking CI
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def _assert_manual_instructions(err: str, dest: Path) -> None:
    assert "Place the files by hand" in err
    for name in ("Reveal_GPU.zip", "Reveal_CPU.zip", "meta_gpu.csv", "meta_cpu.csv", REPO_ID):
        assert name in err
    assert f"into {dest}/" in err and "need NOT be unzipped" in err
    assert f"reveal-lab dataset info {dest}" in err


def test_pull_fails_fast_when_the_hub_refuses(tmp_path: Path) -> None:
    # port 9 (discard) on localhost: connection refused on any machine, network or not
    r = _pull(tmp_path / "public", {"HF_ENDPOINT": "http://127.0.0.1:9"})
    assert r.returncode == 1, r.stderr
    assert "cannot download from http://127.0.0.1:9" in r.stderr
    _assert_manual_instructions(r.stderr, tmp_path / "public")
    assert not (tmp_path / "public").exists()


def test_pull_fails_fast_offline_mode(tmp_path: Path) -> None:
    r = _pull(tmp_path, {"HF_HUB_OFFLINE": "1"})
    assert r.returncode == 1 and "HF_HUB_OFFLINE is set" in r.stderr
    _assert_manual_instructions(r.stderr, tmp_path)


def test_pull_against_the_real_hub_without_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    # the reachability check sees what the pull below sees: the default hub (no HF_ENDPOINT),
    # online, through this machine's proxies; with HF_HUB_OFFLINE set here it would report
    # "unreachable" and the pull would then download the whole dataset on a networked runner
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    if hub_unreachable(constants._HF_DEFAULT_ENDPOINT, 5) is None:
        pytest.skip("the hub is reachable from here: the no-network path cannot be exercised")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_ENDPOINT", "HF_HUB_OFFLINE")}
    r = subprocess.run(
        [*CLI, "dataset", "pull", "--dest", str(tmp_path), "--timeout", "5"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1
    _assert_manual_instructions(r.stderr, tmp_path)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET

    def log_message(self, *args: object) -> None:
        pass


def test_hub_reachable_but_failing_gives_the_same_instructions(tmp_path: Path, direct: None) -> None:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{srv.server_address[1]}"
        assert hub_unreachable(endpoint, 5) is None  # the TCP check passes...
        r = _pull(tmp_path, {"HF_ENDPOINT": endpoint, "HF_HUB_DISABLE_PROGRESS_BARS": "1"})
    finally:
        srv.shutdown()
    assert r.returncode == 1  # ...and the hub's error still ends in the instructions
    _assert_manual_instructions(r.stderr, tmp_path)


def test_hub_unreachable_times_out_on_a_silent_peer(direct: None) -> None:
    # a listening socket that never accepts: the connection may complete (backlog) or hang;
    # either way the check returns within its timeout
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(0)
    try:
        res = hub_unreachable(f"http://127.0.0.1:{s.getsockname()[1]}", 1.0)
        assert res is None or "within 1 s" in res
    finally:
        s.close()


def test_hub_check_goes_through_a_configured_proxy(monkeypatch: pytest.MonkeyPatch, direct: None) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{s.getsockname()[1]}")
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        # the hub itself is unresolvable here; the proxy is what must answer
        assert hub_unreachable("https://hub.invalid", 5) is None
    finally:
        s.close()
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    assert (hub_unreachable("https://hub.invalid", 5) or "").startswith("ConnectionRefusedError")
