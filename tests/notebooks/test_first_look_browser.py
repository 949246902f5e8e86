"""`reveal-lab lab` in a real browser: JupyterLab opens ``00-first-look``, its cells run
through the UI (Run → Run All Cells) on the bundled data, and the score timeline appears
on the page as an image, with the verdict table beside it and no error output.

The browser is the system's Chromium (Debian: ``apt-get install chromium``), driven by
Playwright (``pip install playwright``; its own browser download is not used). The test
skips, saying which part is missing, where either is absent. Everything the server and the
browser write (kernel spec, settings, runtime files, the executed copy of the notebook)
stays in the test's temporary folder. Every wait is on a condition with a generous limit,
so a loaded machine makes the test slower, not flaky.

Broken variants caught: a notebook cell that raises (an error output, the figure never
drawn), a kernel JupyterLab cannot find (no kernel starts, nothing runs), a figure cell
that draws nothing (no image)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from reveal_lab.config import data_dir
from reveal_lab.notebooks import notebooks_dir

pytestmark = [pytest.mark.notebook, pytest.mark.slow]

NOTEBOOK = "00-first-look.ipynb"
#: the system Chromium; REVEAL_CHROMIUM overrides
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: a cell's stderr and traceback in JupyterLab's page
STDERR_OUTPUT = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
#: limits (seconds): generous, since each wait ends as soon as its condition holds
SERVER_START_S = 240
PAGE_S = 240
RUN_ALL_S = 900


def _chromium() -> str | None:
    given = os.environ.get("REVEAL_CHROMIUM")
    if given:
        return given if Path(given).exists() else None
    return next((p for p in map(shutil.which, CHROMIUM_CANDIDATES) if p), None)


def _needs() -> tuple[str, str]:
    """(chromium path, token) or a skip naming what is missing and how to install it."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright is not installed (pip install playwright; the system Chromium is used)")
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        pytest.skip("JupyterLab is not installed (the 'lab' extra: pip install -e '.[lab]')")
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium found (Debian: apt-get install chromium; or set REVEAL_CHROMIUM=/path/to/chrome)")
    if not (data_dir() / "meta_lab.csv").exists():
        pytest.skip(f"the bundled lab dataset is not at {data_dir()}")
    return exe, "first-look-" + os.urandom(8).hex()


def _free_port() -> int:
    """A localhost port free now (JupyterLab moves to the next one if it is taken meanwhile;
    the test reads the port it serves on from its runtime file)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_info(runtime: Path, proc: subprocess.Popen, log: Path) -> dict:
    """The running server's ``jpserver-*.json`` (its real port and token), once it answers."""
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"JupyterLab exited with status {proc.returncode}:\n{log.read_text()[-3000:]}")
        for f in sorted(runtime.glob("jpserver-*.json")):
            try:
                info = json.loads(f.read_text())
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{info['port']}/api/status?token={info['token']}", timeout=10
                ) as r:
                    if r.status == 200:
                        return info
            except (ValueError, KeyError, OSError, urllib.error.URLError):
                pass  # written but not serving yet
        time.sleep(0.5)
    pytest.fail(f"JupyterLab did not answer within {SERVER_START_S} s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def jupyterlab(tmp_path):
    """``reveal-lab lab`` on a copy of the notebook, every Jupyter folder inside ``tmp_path``."""
    exe, token = _needs()
    nb_dir = tmp_path / "notebooks"  # the notebook's out_dir "../out/lab" lands in tmp_path/out
    nb_dir.mkdir()
    shutil.copy(notebooks_dir() / NOTEBOOK, nb_dir / NOTEBOOK)
    prefix, runtime, settings = tmp_path / "prefix", tmp_path / "runtime", tmp_path / "lab-settings"
    # the notebook renders every cell (no virtual scrolling), so every output is in the page
    tracker = settings / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    env = {
        **os.environ,
        "JUPYTER_TOKEN": token,
        "JUPYTER_PATH": str(prefix / "share" / "jupyter"),  # where `--prefix` puts the kernel
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "MPLCONFIGDIR": str(tmp_path / "mpl"),
    }
    log = tmp_path / "jupyterlab.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())",
             "lab", "--notebooks", str(nb_dir), "--no-browser", "--prefix", str(prefix), "--port", str(_free_port())],
            env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        info = _server_info(runtime, proc, log)
        yield {"url": f"http://127.0.0.1:{info['port']}", "token": info["token"], "chromium": exe,
               "log": log, "notebooks": nb_dir}
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the server and its kernels: our own process group
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


def test_first_look_runs_in_jupyterlab_and_shows_its_figure(jupyterlab):
    from playwright.sync_api import sync_playwright

    lab = jupyterlab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=lab["chromium"], headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(PAGE_S * 1000)
            page.goto(f"{lab['url']}/lab/tree/{NOTEBOOK}?token={lab['token']}", wait_until="domcontentloaded")
            panel = page.locator(".jp-NotebookPanel").first
            panel.wait_for(state="visible")
            page.locator(".jp-Notebook .jp-CodeCell").first.wait_for(state="attached")
            # the kernel named in the notebook (reveal-lab) has started and is idle
            page.wait_for_function(
                "() => { const s = document.querySelector('.jp-NotebookPanel .jp-Toolbar-kernelName');"
                " return s && s.textContent.includes('reveal-lab'); }"
            )
            page.locator(".jp-NotebookPanel [data-status='idle']").first.wait_for(state="attached")

            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()

            n_code = page.locator(".jp-Notebook .jp-CodeCell").count()
            assert n_code >= 5, f"the notebook shows {n_code} code cells"
            # Run All has finished: no cell is queued or running ("[*]"), the first has run, and the
            # kernel is idle. A cell that raises stops the run: the cells after it stay unrun ("[ ]").
            page.wait_for_function(
                """(n) => {
                    const p = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
                    const idle = document.querySelector(".jp-NotebookPanel [data-status='idle']");
                    return idle && p.length === n && /\\[\\d+\\]/.test(p[0].textContent)
                        && !p.some(e => e.textContent.includes('*'));
                }""",
                arg=n_code,
                timeout=RUN_ALL_S * 1000,
            )
            prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt").all_inner_texts()
            stderr = " | ".join(page.locator(STDERR_OUTPUT).all_inner_texts())[-3000:]
            assert all(re.search(r"\[\d+\]", p) for p in prompts), f"not every cell ran: {prompts}; {stderr}"
            assert not re.search(r"Traceback|\w+(Error|Exception): ", stderr), f"a cell failed: {stderr}"

            img = page.locator(".jp-OutputArea-output img").first
            img.wait_for(state="attached")
            img.scroll_into_view_if_needed()
            size = img.evaluate("e => [e.complete, e.naturalWidth, e.naturalHeight, e.src.slice(0, 22)]")
            assert size[0] and size[1] > 300 and size[2] > 200, f"the figure did not load: {size}"
            assert size[3] == "data:image/png;base64,", size
            # the verdict table (the last cell's output) names the subsystem the fault was injected into
            verdict = page.locator(".jp-Notebook .jp-CodeCell").last.locator(".jp-OutputArea-output table")
            verdict.wait_for(state="attached")
            assert "cpu" in verdict.inner_text()
        finally:
            browser.close()
    # the cells ran in the copy's kernel: the notebook's out_dir is beside the copy
    assert (lab["notebooks"].parent / "out" / "lab" / "figures" / "first_look_timeline.png").exists()
