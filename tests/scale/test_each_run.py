"""The one engine of the per-run work (``scale._engine.each_run``): ``scan`` and ``map_runs``
go through it; the same per-run function gives equal results in this process and on a real
2-worker LocalCluster; a failing run is kept with its error while the others complete."""

from __future__ import annotations

import pytest
from polars.testing import assert_frame_equal

from reveal_lab import studies
from reveal_lab.config import fixtures_dir
from reveal_lab.pipeline import POLICIES
from reveal_lab.scale import INPROCESS, RunRef, _engine, _scan, map_runs, run_refs, scan, study_refs
from reveal_lab.scale._engine import _apply, close_clients, each_run
from reveal_lab.scale._tasks import detect_task, outcome_of, run_task

pytest.importorskip("distributed")

# the fixture's all-NaN / all-zero columns are reported by the loader on every read
pytestmark = pytest.mark.filterwarnings("ignore::reveal_lab.telemetry.TelemetryWarning")
#: in this process, and on the LocalCluster (``client``, taken only there: the parameter joins
#: the cluster's xdist group, so it runs where the cluster is and while it is open)
ENGINES = ["in process", pytest.param("dask", marks=pytest.mark.xdist_group("dask"))]

FIXTURE = fixtures_dir() / "reveal_sample"
#: every window over a threshold counts (min_run 1), so the evidence tables have rows to compare
TASK = (detect_task, {"preset": "smoke", "policy": POLICIES["default"].with_(min_run=1)}, None)
#: a study's per-run arguments for ``_apply``: the overview piece of each run's first minute
STUDY = (studies.overview_piece, (300,), 60.0, False)


def _missing() -> RunRef:
    return RunRef(str(FIXTURE.resolve()), "no-such-run")


def test_scan_and_map_runs_go_through_the_one_engine(monkeypatch):
    seen = []

    def spy(fn, refs, *args, **kwargs):  # noqa: ANN001, ANN202
        seen.append(fn)
        return each_run(fn, refs, *args, **kwargs)

    monkeypatch.setattr(_scan, "each_run", spy)
    monkeypatch.setattr(_engine, "each_run", spy)
    refs = run_refs(FIXTURE)[:1]
    scan(FIXTURE, refs=refs, scheduler=INPROCESS, task_kwargs=TASK[1], progress=False)
    map_runs(studies.overview_piece, study_refs(FIXTURE)[:1], 300, progress=False)
    assert seen == [run_task, _apply]


@pytest.mark.slow
def test_the_same_per_run_function_gives_equal_results_here_and_on_a_local_cluster(client):
    refs = run_refs(FIXTURE)[:3]
    # a scan: scan's per-run function
    here = [outcome_of(d) for d in each_run(run_task, refs, *TASK, progress=False).done]
    there = [outcome_of(d) for d in each_run(run_task, refs, *TASK, client=client, progress=False).done]
    assert [o.run_id for o in here] == [o.run_id for o in there] == [r.run_id for r in refs]
    assert all(o.ok for o in here + there), [o.error for o in here + there]
    assert sum(o.evidence.height for o in here) > 0
    for a, b in zip(here, there, strict=True):
        assert a.summary == b.summary
        assert_frame_equal(a.evidence, b.evidence)
    # a study map: the studies' per-run function
    srefs = study_refs(FIXTURE)[:3]
    per_run = [STUDY] * len(srefs)
    p1 = each_run(_apply, srefs, per_run=per_run, progress=False).done
    p2 = each_run(_apply, srefs, per_run=per_run, client=client, progress=False).done
    assert [d.ref for d in p1] == [d.ref for d in p2] == srefs
    for a, b in zip(p1, p2, strict=True):
        assert a.ok and b.ok, (a.error, b.error)
        for fa, fb in zip(a.value, b.value, strict=True):
            assert_frame_equal(fa, fb)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failing_run_is_kept_and_the_others_complete(engine, request):
    client = request.getfixturevalue("client") if engine == "dask" else None
    good = run_refs(FIXTURE)[:2]
    refs = [good[0], _missing(), good[1]]
    # the engine itself, with a window of one run in flight
    res = each_run(run_task, refs, *TASK, client=client, window=1, progress=False)
    assert [d.ref for d in res.done] == refs and res.peak_in_flight == 1
    assert [d.ref.run_id for d in res.failed] == ["no-such-run"]
    assert "KeyError" in res.failed[0].error and res.failed[0].traceback
    # scan: a failure record with its run and error, the others detected
    sres = scan(
        FIXTURE,
        refs=refs,
        scheduler=client if client is not None else INPROCESS,
        task_kwargs=TASK[1],
        progress=False,
        echo=lambda _m: None,
    )
    assert [o.run_id for o in sres.outcomes] == [r.run_id for r in refs]
    assert [f.run_id for f in sres.failures] == ["no-such-run"] and len(sres.succeeded) == 2
    assert "KeyError" in sres.failures[0].error and sres.failures[0].peak_rss_mb
    # map_runs: the run skipped with its file and error, the others' pieces in order
    srefs = study_refs(FIXTURE)[:2]
    mres = map_runs(
        studies.overview_piece,
        [srefs[0], _missing(), srefs[1]],
        300,
        max_seconds=60.0,
        progress=False,
        scheduler=client.scheduler.address if client is not None else "",
    )
    close_clients()  # before the session's cluster goes away
    assert mres.run_ids == [r.run_id for r in srefs]
    assert mres.skipped["run_id"].to_list() == ["no-such-run"]
    assert mres.skipped["file"][0].endswith("no-such-run") and "KeyError" in mres.skipped["error"][0]
