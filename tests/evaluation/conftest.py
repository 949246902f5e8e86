"""The evaluation tests detect the same lab runs under overlapping settings: they share one
per-run cache (``reveal_lab.pipeline.memoize``) per module, so a host scored under the same
settings by an earlier test is read back (``tests/pipeline/test_cache.py`` checks that a value
read back equals the one computed). Module-scoped, so pytest-xdist keeps a module's tests on
one worker (the repository's ``conftest.py``)."""

from __future__ import annotations

import pytest

from reveal_lab.pipeline import using_cache


@pytest.fixture(scope="module", autouse=True)
def shared_run_cache(tmp_path_factory):
    """``$REVEAL_LAB_CACHE`` set to one folder for the module's tests (child processes too)."""
    with using_cache(tmp_path_factory.mktemp("run-cache")) as folder:
        yield folder
