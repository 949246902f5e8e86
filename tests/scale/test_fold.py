"""A study folds its pieces as they come: ``each_run(consume=)`` hands each run over in reference
order (on a real LocalCluster too, where an early run finishes last) and keeps no value, the
window counts the runs waiting for their turn, and the pruning study's fold gives the numbers of
its reduce over the list."""

from __future__ import annotations

import dataclasses
import sys
import time

import cloudpickle
import numpy as np
import pytest

from reveal_lab import studies
from reveal_lab.config import fixtures_dir
from reveal_lab.scale import map_runs, study_refs
from reveal_lab.scale._engine import close_clients, each_run

pytest.importorskip("distributed")
pytestmark = pytest.mark.filterwarnings("ignore::reveal_lab.telemetry.TelemetryWarning")
#: in this process, and on the LocalCluster (``client``, taken only there: the parameter joins
#: the cluster's xdist group, so it runs where the cluster is and while it is open)
ENGINES = ["in process", pytest.param("dask", marks=pytest.mark.xdist_group("dask"))]
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this file

SAMPLE = fixtures_dir() / "reveal_sample"


def _timed(ref, delay):  # noqa: ANN001, ANN202 - a per-run function: (run id, start, end)
    start = time.time()
    time.sleep(delay)
    return ref.run_id, start, time.time()


@pytest.mark.parametrize("engine", ENGINES)
def test_runs_are_consumed_in_reference_order_and_not_kept(engine, request):
    client = request.getfixturevalue("client") if engine == "dask" else None
    refs = study_refs(SAMPLE)[:4]
    seen = []
    # on Dask the first run ends last; in this process the runs go one after the other whatever they take
    delays = [(1.5,), (0.0,), (0.0,), (0.0,)] if client is not None else [(0.0,)] * 4
    res = each_run(
        _timed, refs, per_run=delays, client=client, window=2, progress=False,
        consume=lambda i, d: seen.append((i, d.value)),
    )
    assert [i for i, _ in seen] == [0, 1, 2, 3]
    assert [v[0] for _, v in seen] == [r.run_id for r in refs]
    assert all(d.ok and d.value is None for d in res.done) and [d.ref for d in res.done] == refs
    if client is not None:
        # window 2: the second run waits for the first, so the third starts only after the first ends
        first_end, third_start = seen[0][1][2], seen[2][1][1]
        assert third_start >= first_end - 0.05, (third_start, first_end)
        assert res.peak_in_flight <= 2


@pytest.mark.parametrize("engine", ENGINES)
def test_the_pruning_fold_gives_the_numbers_of_the_reduce(engine, request):
    client = request.getfixturevalue("client") if engine == "dask" else None
    refs = study_refs(SAMPLE)
    where = {"scheduler": client.scheduler.address} if client is not None else {}
    listed = map_runs(studies.pruning_piece, refs, progress=False, **where)
    fold = studies.PruningFold()
    folded = map_runs(studies.pruning_piece, refs, progress=False, fold=fold, **where)
    close_clients()
    assert folded.pieces == [] and folded.run_ids == listed.run_ids and len(listed.pieces) >= 4
    _same(fold.result(0.5), studies.reduce_pruning(listed.pieces, 0.5))


def test_the_fold_fits_on_the_fault_free_runs_or_on_every_run_when_none_is():
    pieces = map_runs(studies.pruning_piece, study_refs(SAMPLE), progress=False).pieces
    faulty = [dataclasses.replace(p, fault_free=False) for p in pieces]
    late_free = [*faulty[:2], *pieces[2:]]  # the fault-free runs come after faulty ones
    for case in (faulty, late_free):
        fold = studies.PruningFold()
        for p in case:
            fold(p)
        _same(fold.result(0.5), studies.reduce_pruning(case, 0.5))
    fold = studies.PruningFold()
    for p in late_free:
        fold(p)
    assert fold.fit_any is None  # every run's fit sums are dropped once a fault-free run is in
    with pytest.raises(ValueError, match="at least one run"):
        studies.PruningFold().result()


def _same(a, b) -> None:  # noqa: ANN001
    (r1, s1), (r2, s2) = a, b
    assert r1.union == r2.union and r1.selected == r2.selected and s1.to_dict() == s2.to_dict()
    assert list(r1.spaces) == list(r2.spaces)
    for w in r1.spaces:
        assert np.array_equal(r1.spaces[w].corr, r2.spaces[w].corr, equal_nan=True)
    assert r1.clusters.equals(r2.clusters)
