"""`reveal-lab lab`: the kernel it installs runs this interpreter, and a missing JupyterLab is explained."""

import importlib.util
import json
import subprocess
import sys

import pytest

from reveal_lab.cli import main
from reveal_lab.notebooks import install_kernel


def test_installed_kernel_runs_this_python_and_imports_reveal_lab(tmp_path):
    kdir = install_kernel(prefix=str(tmp_path))
    spec = json.loads((kdir / "kernel.json").read_text())
    assert kdir.name == "reveal-lab" and str(kdir).startswith(str(tmp_path))
    exe = spec["argv"][0]
    assert exe == sys.executable  # this venv's python, whichever python is first on PATH
    out = subprocess.run(
        [exe, "-c", "import reveal_lab.studies, reveal_lab.plots; print('ok')"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "ok"


@pytest.mark.skipif(importlib.util.find_spec("jupyterlab") is not None, reason="JupyterLab is installed")
def test_lab_without_jupyterlab_says_how_to_install(tmp_path, capsys):
    assert main(["lab", "--prefix", str(tmp_path), "--no-browser"]) == 1
    err = capsys.readouterr().err
    assert "JupyterLab is not installed" in err and ".[lab]" in err


def test_lab_kernel_only(tmp_path, capsys):
    assert main(["lab", "--kernel-only", "--prefix", str(tmp_path)]) == 0
    assert "kernel 'reveal-lab'" in capsys.readouterr().out
    assert (tmp_path / "share" / "jupyter" / "kernels" / "reveal-lab" / "kernel.json").exists()


def test_jupyterlab_gets_allow_root_only_as_root():
    """JupyterLab exits at once as root unless told --allow-root (containers and lab
    VMs run as root). Broken variant: never adding the flag fails the first assert;
    adding it always fails the second."""
    from reveal_lab.cli._lab import jupyterlab_command

    as_root = jupyterlab_command("nb", port=8899, no_browser=True, euid=0)
    assert as_root[1:] == ["-m", "jupyterlab", "--notebook-dir=nb", "--port=8899", "--no-browser", "--allow-root"]
    assert "--allow-root" not in jupyterlab_command("nb", port=None, no_browser=False, euid=1000)
