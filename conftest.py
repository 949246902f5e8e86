"""Suite-wide plumbing: which tests share machine state and so run on one pytest-xdist worker.

``make test`` runs the suite with ``-n auto --dist loadgroup``: tests spread over the workers,
except that every test of one ``xdist_group`` runs on the same worker, one after the other.
A test joins a group by its marker (``pytest.mark.xdist_group("timing")``) or by a rule below.
The groups:

- ``root``: every test marked ``root`` (network namespaces, cgroups, iptables rules, private
  mounts, another user): the lab's namespaces and firewall rules have fixed names, and two at
  once would tear down each other's.
- ``dask``: every test that takes the ``client`` fixture (``tests/scale/conftest.py``), so one
  worker starts the one ``LocalCluster``, open from the first of them to the last, instead of
  each worker starting its own.
- ``timing``: tests that assert how soon something happens (the collector's first sample, its
  gaps, a measured overhead's interval): they run one at a time.
- ``browser``: tests that drive a headless Chromium (memory).
- ``tslearn``: the tests that check the DTW against tslearn's, which numba compiles (seconds
  of CPU, not cached) in each process that calls it: one worker compiles it, not every one.
- ``module:<path>``: the tests of a module that use a fixture of ``scope="module"`` (a
  recording, a detected run, a built dataset), so the fixture is built once, on one worker,
  not once per worker that takes one of its tests.

A test that only writes under its own ``tmp_path`` and sets the environment through
``monkeypatch`` or a child's ``env=`` needs no group.

Under pytest-xdist the tests outside any group that are marked ``slow`` or ``notebook`` are
handed out first, so that no long test starts last while the other workers sit idle.

Each test process, and every child it starts (the CLI, papermill kernels, Dask workers), runs
its native thread pools (OpenMP, OpenBLAS, MKL) on one thread unless the environment says
otherwise: the suite already runs a worker per core (and one more,
``pytest_xdist_auto_num_workers``), and a pool's threads spinning on a core another worker is
using make scikit-learn's t-SNE, for one, many times slower.
"""

from __future__ import annotations

import os

import pytest

#: the thread pools held to one thread per test process (``os.environ.setdefault``)
ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def pytest_configure(config: pytest.Config) -> None:  # noqa: ARG001
    """Before any test module (and so any native library) is imported: one thread per pool."""
    for var in ONE_THREAD:
        os.environ.setdefault(var, "1")

def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:  # noqa: ARG001
    """``-n auto``: one worker more than the cores this process may run on.

    Many tests wait on real time (a collector sampling at 100 ms, a watch polling, a Dask
    scheduler noticing a lost worker, a headless browser): with one worker per core, a core sits
    idle while its worker waits. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides where it is set
    (pytest-xdist's own hook reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0)) + 1


#: test files whose every test joins a group, by path from the repository root
FILE_GROUPS = {
    "tests/collect/test_first_start.py": "timing",
    "tests/collect/test_deferred_start.py": "timing",
    "tests/studies/test_measure.py": "timing",
    "tests/studies/test_dtw.py": "tslearn",
    "tests/notebooks/test_first_look_browser.py": "browser",
    "tests/render/test_index_page_browser.py": "browser",
}
#: fixtures whose every user joins a group
FIXTURE_GROUPS = {"client": "dask"}
#: markers whose every carrier joins a group
MARKER_GROUPS = {"root": "root"}


def group_of(item: pytest.Item) -> str | None:
    """The ``xdist_group`` the rules above give ``item``, or ``None``."""
    for marker, group in MARKER_GROUPS.items():
        if item.get_closest_marker(marker) is not None:
            return group
    for fixture, group in FIXTURE_GROUPS.items():
        if fixture in getattr(item, "fixturenames", ()):
            return group
    path = item.nodeid.split("::", 1)[0]
    if path in FILE_GROUPS:
        return FILE_GROUPS[path]
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    if any(d and d[-1].scope == "module" for d in defs):
        return f"module:{path}"
    return None


#: markers of the tests handed out first under pytest-xdist
LONG_MARKERS = ("slow", "notebook")


def long_first(item: pytest.Item) -> int:
    """0 for a long test outside any group (handed out first), else 1."""
    grouped = item.get_closest_marker("xdist_group") is not None
    return 0 if not grouped and any(item.get_closest_marker(m) for m in LONG_MARKERS) else 1


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):  # noqa: ANN201
    """Before every other plugin (pytest-xdist reads the groups): each test's group by the rules
    above unless it names one itself. After them all, on an xdist worker: the long tests outside a
    group first (a stable sort: the rest keep their order, a group's tests keep theirs)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            group = group_of(item)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))
    yield
    if hasattr(config, "workerinput"):
        if config.getvalue("loadgroup"):
            keep_group_ids(items)
        items.sort(key=long_first)


def keep_group_ids(items: list[pytest.Item]) -> None:
    """Make each grouped test's id the ``ID@GROUP`` pytest-xdist wrote for it.

    pytest-xdist 3.8 marks a test's group by writing ``ID@GROUP`` into ``item._nodeid``; from
    pytest 9.2 the id is read from the structured ``item._id``, so the suffix is lost and every
    group is spread over the workers as if it had none (pytest-dev/pytest-xdist#1386). Where the
    two differ, the structured id is set from the suffixed one (what older pytest reported)."""
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest before 9.2: the suffixed ``_nodeid`` is the id already
        return
    for item in items:
        written = getattr(item, "_nodeid", None)
        if isinstance(written, str) and written != item.nodeid and hasattr(item, "_id"):
            item._id = NodeId.parse(written)
