"""The evaluation tests detect the same lab runs under overlapping settings: they share one
per-run cache (``reveal_lab.pipeline.memoize``) per test process, so a host scored (or a pruned
space fitted) under the same settings by an earlier test, of this module or another, is read
back (``tests/pipeline/test_cache.py`` checks that a value read back equals the one computed).
The folder is in the process's own temporary folder (one per pytest-xdist worker); the fixture
that sets it is module-scoped, so pytest-xdist keeps a module's tests on one worker (the
repository's ``conftest.py``)."""

from __future__ import annotations

import pytest

from reveal_lab.pipeline import using_cache


@pytest.fixture(scope="module", autouse=True)
def shared_run_cache(tmp_path_factory):
    """``$REVEAL_LAB_CACHE`` set to the process's one folder for the module's tests (child
    processes too)."""
    with using_cache(tmp_path_factory.getbasetemp() / "evaluation-run-cache") as folder:
        yield folder
