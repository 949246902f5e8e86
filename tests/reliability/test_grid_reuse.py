"""agreement_grid keeps the grids it simulated: the same settings read back, others simulated."""

from __future__ import annotations

from collections import OrderedDict

import reveal_lab.reliability._claims as claims
from reveal_lab.reliability import agreement_grid


def test_a_grid_asked_for_again_is_not_simulated_again(monkeypatch):
    monkeypatch.setattr(claims, "_GRIDS", OrderedDict())  # none kept from other tests
    calls = []
    real = claims.simulate_ettr
    monkeypatch.setattr(claims, "simulate_ettr", lambda *a, **k: calls.append(a) or real(*a, **k))
    kw = {"gpus": (1024, 65536), "intervals_min": (5, 60), "restarts_min": (5,), "n_jobs": 300, "seed": 11}
    first = agreement_grid(**kw)
    n = len(calls)
    assert n == 4
    again = agreement_grid(**kw)
    assert len(calls) == n and again.equals(first) and again is not first
    other = agreement_grid(**{**kw, "seed": 12})  # another setting: simulated
    assert len(calls) == 2 * n and not other.equals(first)
    agreement_grid(**{**kw, "n_jobs": 300.0})  # equal but not the same value as given: simulated
    assert len(calls) == 3 * n
