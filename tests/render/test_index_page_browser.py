"""index.html in a real browser, 1,300 px wide: the top of the page shows the counts per
setting, statuses are coloured, the sections are folded so the page is a few screens tall,
and nothing is wider than the window. A screenshot of the top is written beside the page.

The browser is the system's Chromium driven by Playwright, found as the JupyterLab browser
test finds it (``REVEAL_CHROMIUM``, else ``chromium`` and its usual names on PATH); the test
skips, saying what is missing, where either is absent."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from reveal_lab.notebooks import NotebookResult, write_index
from reveal_lab.studies import paper_vs_reproduced, save_table

pytestmark = pytest.mark.slow

WIDTH, HEIGHT = 1300, 900
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _browser() -> str:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright is not installed (pip install playwright; the system Chromium is used)")
    given = os.environ.get("REVEAL_CHROMIUM")
    found = (given if given and Path(given).exists() else None) or next(
        (p for p in map(shutil.which, BROWSERS) if p), None)
    if found is None:
        pytest.skip(
            "no Chromium found (Debian: apt-get install chromium; or set REVEAL_CHROMIUM=/path/to/chrome)"
        )
    return found


def _page(out: Path) -> Path:
    save_table(
        pl.DataFrame(
            {
                "run_id": ["r"],
                "workload": ["w"],
                "platform": ["lab"],
                "n_metrics": [606],
                "interval_ms": [100.0],
            }
        ),
        out,
        "dataset_runs",
    )
    claims = paper_vs_reproduced(out, data="data/lab")
    results = [NotebookResult("01-x.ipynb", "First notebook", "ok")]
    return write_index(
        out, results, preset="smoke", data="data/lab", started=dt.datetime(2026, 1, 1), claims=claims
    )


def test_top_of_the_page_in_a_1300px_window(tmp_path):
    exe = _browser()
    from playwright.sync_api import sync_playwright

    index = _page(tmp_path)
    shot = tmp_path / "index_top.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=exe, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(index.as_uri(), wait_until="load", timeout=120_000)
            widest = page.evaluate("document.documentElement.scrollWidth")
            tall = page.evaluate("document.documentElement.scrollHeight")
            counts = page.locator("table.counts").bounding_box()
            colours = page.evaluate("""() => Object.fromEntries(['reproduced', 'differs', 'cannot'].map(c => {
                const e = document.querySelector('table.counts .b.' + c);
                return [c, e ? getComputedStyle(e).backgroundColor : null]; }))""")
            groups = page.locator("details.group").count()
            page.screenshot(path=str(shot), clip={"x": 0, "y": 0, "width": WIDTH, "height": HEIGHT})
            # a group opens and its table still fits the window
            page.locator("details.group > summary").first.click()
            opened = page.evaluate("document.documentElement.scrollWidth")
        finally:
            browser.close()
    assert widest <= WIDTH and opened <= WIDTH, (widest, opened)
    assert counts is not None and counts["y"] + counts["height"] <= HEIGHT  # the counts on the first screen
    assert len(set(colours.values())) == 3 and None not in colours.values(), colours
    assert groups >= 10 and tall <= 4 * HEIGHT, (groups, tall)  # sections folded: a few screens, not ten
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
