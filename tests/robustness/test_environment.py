"""The machine around a command: a Latin-1 locale, an ordinary user without a writable HOME,
a checkout only root can read, a full disk and too little memory. Each ends in output or
one clear message, never a traceback or a half-written file."""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from reveal_lab.cli import main
from reveal_lab.cli._environment import resource_message
from reveal_lab.synth import write_public_proxy
from tests.notebooks.notebook_files import write_notebook

from .conftest import ROOT, assert_clean_error, cli

LAB_RUN = ROOT / "data/lab/infer_separated/infer_MLPforImageClassification_synthetic_2026-11-26T08-12-33_labA.parquet"
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


# -- Latin-1 ------------------------------------------------------------------------------------


def test_help_survives_a_latin1_stdout():
    res = cli("synth", "public", "--help", env={"PYTHONIOENCODING": "latin-1"})
    assert res.rc == 0 and "Traceback" not in res.text, res.text
    assert "[range: 1-1,000]" in res.out  # the en dash printed as its ASCII look-alike


@pytest.fixture(scope="module")
def latin1(tmp_path_factory) -> dict[str, str]:
    """The environment of a Latin-1 locale, compiled here (skipped where it cannot be)."""
    where = tmp_path_factory.mktemp("locale")
    if shutil.which("localedef") is None:
        pytest.skip("no localedef to make a Latin-1 locale")
    made = subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(where / "en_US.ISO-8859-1")],
                          capture_output=True, text=True, timeout=120)
    env = {"LOCPATH": str(where), "LC_ALL": "en_US.ISO-8859-1", "PYTHONIOENCODING": "", "PYTHONUTF8": "0"}
    check = subprocess.run([sys.executable, "-c", "import locale; print(locale.getpreferredencoding())"],
                           capture_output=True, text=True, env={**os.environ, **env}, timeout=60)
    if "8859" not in check.stdout:
        pytest.skip(f"cannot make a Latin-1 locale here: {made.stderr[-200:]} {check.stdout}")
    return env


def test_help_under_a_latin1_locale(latin1):
    res = cli("synth", "public", "--help", env=latin1)
    assert res.rc == 0 and "Traceback" not in res.text, res.text


#: a table through the project's table writer (which ``studies.save_table`` calls), without
#: importing every study
TABLE = """
import polars as pl
from reveal_lab.render import write_table
write_table(pl.DataFrame({"claim": ["≈ 3× faster, σ ≥ 2"]}), out_dir + "/tables/first")
"""


def test_reproduce_under_a_latin1_locale_writes_its_tables_and_index_as_utf8(tmp_path, latin1):
    d = tmp_path / "nbs"
    d.mkdir()
    write_notebook(d / "01-first.ipynb", TABLE, 'data = ""\nout_dir = "."\nsmoke = False\n')
    (d / "manifest.yml").write_text(
        "kernel: reveal-lab\npresets: {smoke: {}, full: {}}\nnotebooks:\n  - {notebook: 01-first.ipynb, tables: [first]}\n"
    )
    out = tmp_path / "out"
    res = cli("reproduce", "--manifest", str(d / "manifest.yml"), "--data", "synth", "--out", str(out),
              "--no-cache", env=latin1)
    assert res.rc == 0 and "Traceback" not in res.text, res.text
    assert "≈ 3× faster" in (out / "tables" / "first.md").read_text(encoding="utf-8")
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page and "≈ 3× faster" in page


# -- an ordinary user ----------------------------------------------------------------------------


def _nobody_can_run_python() -> str | None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return "needs root and setpriv to run as nobody"
    probe = subprocess.run([*AS_NOBODY, sys.executable, "-c", "import numpy, polars, reveal_lab.cli"],
                           capture_output=True, text=True, timeout=120, cwd="/",
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    if probe.returncode:
        return f"nobody cannot use this environment: {probe.stderr.strip().splitlines()[-1:]}"
    return None


def test_an_ordinary_user_without_a_writable_home_can_detect():
    why = _nobody_can_run_python()
    if why:
        pytest.skip(why)
    base = Path(tempfile.mkdtemp(prefix="rvl-nobody-", dir="/tmp"))  # pytest's tmp is private to root
    try:
        base.chmod(0o777)
        env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "MPLCONFIGDIR")}
        env.update({"HOME": "/nonexistent", "PYTHONPATH": str(ROOT), "TMPDIR": str(base)})
        res = subprocess.run(
            [*AS_NOBODY, sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())",
             "detect", str(LAB_RUN), "--out", str(base / "report")],
            capture_output=True, text=True, timeout=300, cwd="/", env=env,
        )
        assert res.returncode == 0, res.stderr[-2000:]
        assert "no locator" not in res.stderr
        assert (base / "report" / "report.html").exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_unprivileged_collector_test_skips_saying_why_from_a_private_checkout(tmp_path):
    """A clone in a 0700 directory (``mktemp -d``) as root: nobody cannot read the
    environment, so the test of the collector as an ordinary user skips, saying why."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "venv").symlink_to(Path(sys.prefix))
    python = private / "venv" / "bin" / "python"
    res = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "tests/collect/test_safety.py::test_ordinary_user_gets_reduced_probes"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert res.returncode == 0, res.stdout[-3000:]
    assert "1 skipped" in res.stdout and "the unprivileged user cannot use this environment" in res.stdout


# -- a full disk, too little memory --------------------------------------------------------------


def test_synth_on_a_full_disk_leaves_nothing_behind(small_tmpfs):
    fs = small_tmpfs("1m")
    out = fs / "public"
    with pytest.raises(OSError) as exc:
        write_public_proxy(out, runs_per_workload=2, seconds=20.0)
    assert exc.value.errno == errno.ENOSPC
    assert list(fs.iterdir()) == []  # no truncated zip, no partial folder
    res = cli("synth", "public", str(out))
    assert_clean_error(res, str(out), "free", "--scale", rc=1)  # refused before writing: the estimate
    assert list(fs.iterdir()) == []


def test_a_full_disk_without_a_file_name_names_the_output():
    exc = OSError(errno.ENOSPC, "No space left on device")
    msg = resource_message(exc, argparse.Namespace(out="/mnt/full/report", cache=None))
    assert msg == "No space left on device while writing --out /mnt/full/report: free some space or write elsewhere"
    named = OSError(errno.ENOSPC, "No space left on device", "/mnt/full/report/x.zip")
    assert resource_message(named, argparse.Namespace(out="x")) is None  # its own message names the file


def test_exhausted_memory_is_one_line(tmp_path, monkeypatch, capsys):
    def too_big(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise MemoryError("Unable to allocate 5.15 GiB for an array with shape (864000, 800) and data type float64")

    monkeypatch.setattr("reveal_lab.synth.write_public_proxy", too_big)
    assert main(["synth", "public", str(tmp_path / "p"), "--runs-per-workload", "1", "--seconds", "3"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "out of memory (Unable to allocate 5.15 GiB" in err


def test_synth_longer_than_the_address_space_limit_is_refused_at_once(tmp_path):
    import resource

    limit = 3 * 1024**3

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    res = subprocess.run(
        [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())", "synth", "public",
         str(tmp_path / "big"), "--seconds", "86400"],
        capture_output=True, text=True, timeout=120, preexec_fn=cap, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert "of memory while it is made" in res.stderr and "address-space limit" in res.stderr
    assert not (tmp_path / "big").exists()


def test_synth_larger_than_the_disk_is_refused_with_its_estimate(tmp_path):
    """The issue's ``--scale 1000 --runs-per-workload 10000``: accepted, then nothing written for
    hours while every member was held in memory; now refused at once with the estimate."""
    res = cli("synth", "public", str(tmp_path / "big"), "--scale", "1000", "--runs-per-workload", "10000",
              "--seconds", "600", limit=60)
    assert_clean_error(res, "40,000,000 runs need about", "free", "--scale", rc=1)
    assert not (tmp_path / "big").exists()


@pytest.mark.parametrize(
    "command", [["detect", "RUN", "--out", "OUT"], ["watch", "OUT"], ["reproduce", "--preset", "smoke", "--out", "OUT"]]
)
def test_a_one_gib_address_space_limit_is_refused_with_what_to_raise(tmp_path, command):
    """Under ``ulimit -v`` 1 GiB numba's compiler failed to load ("Could not find/load shared
    object file 'libllvmlite.so'"; before that, an allocator's abort): every command says the limit
    and the least it needs, before any work."""
    import resource

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    res = subprocess.run(
        [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())",
         *[str(tmp_path / "out") if a == "OUT" else a for a in command]],
        capture_output=True, text=True, timeout=120, preexec_fn=cap, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert "address-space limit (ulimit -v) is 1.0 GiB" in res.stderr and "ulimit -v 2097152" in res.stderr
    assert not (tmp_path / "out").exists()
