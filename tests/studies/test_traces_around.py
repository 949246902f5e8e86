"""Raw traces around a window read the metrics the evidence names, derived ones included (the
evidence comes from the detection view, which adds ``Derived:...`` and ``_diff`` metrics)."""

from __future__ import annotations

import datetime as dt

import pytest

from reveal_lab import studies
from reveal_lab.derive import add_derived
from reveal_lab.synth import make_run


def test_a_derived_metric_is_read_from_the_derived_run():
    run = make_run(n_seconds=20.0, n_channels=120, seed=0).run
    raw = set(run.frame.columns)
    derived = [c for c in add_derived(run.frame).columns if c not in raw]
    assert derived, "the synthetic run has metrics the derivation adds"
    kept = next(c for c in run.frame.columns if c != "timestamp")
    t0 = run.frame["timestamp"][50]
    tr = studies.traces_around(run, t0, t0 + dt.timedelta(seconds=3), [derived[0], kept], pad_s=2)
    assert set(tr["metric"].unique()) == {derived[0], kept}
    assert tr["in_window"].any() and tr.height > 0


def test_an_unknown_metric_is_named():
    run = make_run(n_seconds=20.0, n_channels=120, seed=0).run
    t0 = run.frame["timestamp"][50]
    with pytest.raises(ValueError, match="No:such"):
        studies.traces_around(run, t0, t0, ["No:such.metric[-]"])
