"""Table 4 (``studies.detection_summary``) against values counted here, in plain Python,
from the same windows and evidence."""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl

from reveal_lab import studies


def _windows_and_evidence():
    rng = np.random.default_rng(7)
    n = 240
    workload = rng.choice(["BERT", "VGG16", "Resnet50"], n)
    run_id = [f"{w}-{rng.integers(3)}" for w in workload]
    agreement = rng.choice([0, 0, 0, 1, 2, 3], n)
    windows = pl.DataFrame(
        {"workload": workload, "run_id": run_id, "agreement": agreement, "anomalous": agreement > 0}
    )
    m = 90
    evidence = pl.DataFrame(
        {
            "workload": rng.choice(["BERT", "VGG16", "Resnet50"], m),
            "subsystem": rng.choice(["cpu", "memory", "network"], m, p=[0.5, 0.3, 0.2]),
            "metric": rng.choice(["CPU:a.h[-]", "Memory:b.h[kB]", "Net:c.h[B]"], m),
        }
    )
    return windows, evidence


def test_table4_matches_independent_counts():
    """Broken variants: ``anomalous_pct`` scaled by 0.1 (or any other factor), windows
    with agreement 1 counted as agreeing, the top subsystem/metric taken from another
    workload or by the wrong order."""
    windows, evidence = _windows_and_evidence()
    table = studies.detection_summary(windows, evidence)
    rows = {r["workload"]: r for r in table.iter_rows(named=True)}
    assert sorted(rows) == ["BERT", "Resnet50", "VGG16"]
    for wl, row in rows.items():
        mine = [r for r in windows.iter_rows(named=True) if r["workload"] == wl]
        n_anom = sum(r["anomalous"] for r in mine)
        assert row["n_runs"] == len({r["run_id"] for r in mine})
        assert row["n_windows"] == len(mine) and row["n_anomalous"] == n_anom
        assert row["anomalous_pct"] == 100.0 * n_anom / len(mine)
        assert row["n_agree2"] == sum(r["agreement"] >= 2 for r in mine)
        ev = [r for r in evidence.iter_rows(named=True) if r["workload"] == wl]
        for col, key in (("top_subsystem", "subsystem"), ("top_metric", "metric")):
            counts = Counter(r[key] for r in ev)
            best = max(counts.values())
            assert row[col] == min(k for k, v in counts.items() if v == best)
