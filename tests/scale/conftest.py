"""One real 2-worker LocalCluster for the scale tests that run on Dask (workers compile the numba
kernels once), open from the first of them to the last: an idle cluster's heartbeats and
monitors cost its workers and the test process about a tenth of a core, the rest of the session
long otherwise."""

from __future__ import annotations

from typing import Any

import pytest

#: the pytest-xdist group of the tests that run on the cluster (the repository's conftest.py): a
#: parameter that asks for ``client`` only on Dask names it (``pytest.mark.xdist_group``)
GROUP = "dask"
_open: dict[str, Any] = {}  # "cm": the dask_client context, "client": its Client
_done: set[str] = set()  # the node ids of the tests on the cluster that have run
_needed: list[frozenset[str]] = []  # the node ids of this session's tests on the cluster


def on_dask(item: pytest.Item) -> bool:
    """Whether ``item`` runs on the cluster: it takes ``client`` or is in the ``dask`` group."""
    if "client" in getattr(item, "fixturenames", ()):
        return True
    mark = item.get_closest_marker("xdist_group")
    return mark is not None and (mark.args[:1] or (mark.kwargs.get("name"),))[0] == GROUP


def _close() -> None:
    cm = _open.pop("cm", None)
    _open.pop("client", None)
    if cm is not None:
        cm.__exit__(None, None, None)


@pytest.fixture
def client(request: pytest.FixtureRequest) -> Any:
    """A real ``LocalCluster``: 2 worker processes, 1 thread each, 2 GB each; started for the
    first test that takes it and closed after the last of this session's tests on the cluster
    (:func:`pytest_runtest_teardown`), at the end of the session at the latest."""
    pytest.importorskip("distributed")
    if "client" not in _open:
        from reveal_lab.scale import dask_client

        request.config.add_cleanup(_close)
        cm = dask_client(n_workers=2, memory_limit="2GB", quiet=True)
        _open["client"] = cm.__enter__()
        _open["cm"] = cm
        _open["client"].wait_for_workers(2, timeout=60)
    return _open["client"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):  # noqa: ANN201, ARG001
    """After a test on the cluster: close it when every test of this session on it has run (with
    pytest-xdist's ``--dist loadgroup`` they all run on one worker)."""
    yield
    if not on_dask(item):
        return
    _done.add(item.nodeid)
    if not _needed:
        _needed.append(frozenset(it.nodeid for it in item.session.items if on_dask(it)))
    if "cm" in _open and _needed[0] <= _done:
        _close()
