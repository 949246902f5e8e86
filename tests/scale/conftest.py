"""One real 2-worker LocalCluster for every scale test (workers compile the numba kernels once)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def client():
    """A real ``LocalCluster``: 2 worker processes, 1 thread each, 2 GB each; always closed."""
    pytest.importorskip("distributed")
    from reveal_lab.scale import dask_client

    with dask_client(n_workers=2, memory_limit="2GB", quiet=True) as c:
        c.wait_for_workers(2, timeout=60)
        yield c
