"""scan's per-run task scores the pruned space by default; --no-prune / prune=False every metric."""

from __future__ import annotations

from reveal_lab.pipeline import POLICIES, fit_pruning
from reveal_lab.scale._tasks import detect_task
from reveal_lab.synth import Anomaly, make_run
from reveal_lab.telemetry import parse_metric_name


def test_detect_task_scores_the_pruned_space_unless_told_not_to():
    # a CPU shift the Z-score by family flags on its own (a run alone counts another detector's
    # flag only where a second one agrees): the evidence has rows to say which space it is in
    run = make_run(60, 80, seed=4, anomalies=[Anomaly("cpu", 30, 38, "level", magnitude=8)]).run
    space = fit_pruning([run])

    def keys(res):  # noqa: ANN001, ANN202
        return {parse_metric_name(m).key() for m in res.evidence["metric"].unique()}

    # every window over a threshold (min_run=1): the evidence needs rows to say which space it is in
    every_window = POLICIES["default"].with_(min_run=1)
    pruned = detect_task(run, preset="smoke", policy=every_window.with_(prune=True))
    assert keys(pruned) and keys(pruned) <= set(space.selected)
    alone = detect_task(run, preset="smoke", policy=every_window)  # a run alone: every metric by default
    assert not keys(alone) <= set(space.selected)
    given = detect_task(run, preset="smoke", policy=every_window.with_(prune=space))
    assert keys(given) <= set(space.selected)
    every = detect_task(run, preset="smoke", policy=every_window.with_(prune=False))
    assert not keys(every) <= set(space.selected)
