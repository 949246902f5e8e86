"""``reveal-lab reliability``: the number first, JSON, and errors that name the flag."""

import json
import subprocess
import sys

import pytest

from reveal_lab.cli import main
from reveal_lab.reliability import expected_ettr, mttf_hours


def test_mttf_first_line_is_hours(capsys):
    assert main(["reliability", "mttf", "--gpus", "16384"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert float(lines[0]) == pytest.approx(mttf_hours(16384), rel=1e-3)
    assert "2048 nodes" in lines[1]


def test_mttf_json_with_named_cluster(capsys):
    assert main(["reliability", "mttf", "--gpus", "1024", "--failure-rate", "rsc2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mttf_hours"] == pytest.approx(1000 * 24 / (128 * 2.34))
    assert out["failure_rate_per_1000_node_days"] == 2.34 and out["nodes"] == 128


def test_ettr_json_in_a_subprocess():
    cmd = [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())",
           "reliability", "ettr", "--gpus", "16384", "--checkpoint-interval", "5m", "--restart", "300s",
           "--checkpoint-write", "0.5m", "--json", "--simulate", "--jobs", "3000", "--work", "12h"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["ettr"] == pytest.approx(expected_ettr(16384, 5 / 60, 5 / 60, 0.5 / 60))
    lo, hi = out["ci95"]
    assert lo < out["ettr_simulated"] < hi and abs(out["ettr_simulated"] - out["ettr"]) < 0.02
    assert out["jobs"] == 3000 and out["work_h"] == 12.0


def test_ettr_text_first_line_is_the_ratio(capsys):
    argv = ["reliability", "ettr", "--gpus", "8192", "--checkpoint-interval", "30m", "--restart", "5m"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert float(lines[0]) == pytest.approx(expected_ettr(8192, 0.5, 5 / 60), abs=1e-4)
    assert "ettr_simulated" not in lines[1]


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["mttf", "--gpus", "0"], "--gpus"),
        (["mttf", "--gpus", "eight"], "--gpus"),
        (["mttf", "--gpus", "8", "--failure-rate", "0"], "--failure-rate"),
        (["mttf", "--gpus", "8", "--failure-rate", "rsc9"], "--failure-rate"),
        (["mttf", "--gpus", "8", "--gpus-per-node", "0"], "--gpus-per-node"),
        (["ettr", "--gpus", "8", "--checkpoint-interval=-5m", "--restart", "5m"], "--checkpoint-interval"),
        (["ettr", "--gpus", "8", "--checkpoint-interval", "0s", "--restart", "5m"], "--checkpoint-interval"),
        (["ettr", "--gpus", "8", "--checkpoint-interval", "5m", "--restart=-1m"], "--restart"),
        (["ettr", "--gpus", "8", "--checkpoint-interval", "5m", "--restart", "5 parsecs"], "--restart"),
        (["ettr", "--gpus", "8", "--checkpoint-interval", "5m", "--restart", "5m",
          "--checkpoint-write=-2s"], "--checkpoint-write"),
    ],
)
def test_invalid_input_names_the_flag(argv, flag, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reliability", *argv])
    assert exc.value.code == 2
    assert f"argument {flag}" in capsys.readouterr().err


def test_hopeless_simulation_is_a_clear_error(capsys):
    argv = ["reliability", "ettr", "--gpus", "10000000", "--checkpoint-interval", "5h", "--restart", "5m",
            "--simulate"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "--simulate: a segment of 5 h" in err and "almost never" in err


def test_ettr_simulate_fixed_wall_budget(capsys):
    argv = ["reliability", "ettr", "--gpus", "16384", "--checkpoint-interval", "15m", "--restart", "5m",
            "--simulate", "--wall", "48h", "--jobs", "2000", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["wall_h"] == 48.0 and "work_h" not in out
    assert abs(out["ettr_simulated"] - out["ettr"]) < 0.02
    with pytest.raises(SystemExit):
        main([*argv, "--work", "10h"])
