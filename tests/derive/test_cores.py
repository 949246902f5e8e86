"""Per-core families folded into host-level metrics (``reveal_lab.derive.fold_cores``) and
synthetic copies of a recording with more or fewer cores (``with_cores``)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from reveal_lab.derive import FOLDS, core_families, fold_cores, folded_family, with_cores


def _frame(cores: int, rows: int = 50, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    cols = {"timestamp": np.arange(rows)}
    for c in range(cores):
        cols[f"Softirqs_diff:SCHED.{c}.h[count]"] = rng.poisson(3, rows).astype(float)
        cols[f"CPU:Busy%.{c}.h[%]"] = rng.uniform(0, 100, rows)
    cols["CPU:Busy%.-.h[%]"] = rng.uniform(0, 100, rows)
    cols["Memory:Dirty.h[kB]"] = rng.normal(1000, 5, rows)
    return pl.DataFrame(cols)


def test_fold_replaces_each_family_by_three_host_level_metrics_whatever_the_cores():
    for cores in (2, 16, 64):
        f = _frame(cores)
        folded = fold_cores(f)
        fams = core_families(f.columns)
        assert len(fams) == 2 and all(len(x.columns) == cores for x in fams)
        assert folded.width == 1 + 2 * len(FOLDS) + 2  # same width on 2 cores and on 64
        x = f.select(r"^Softirqs_diff:SCHED\.\d+\.h\[count\]$").to_numpy()
        np.testing.assert_allclose(folded["Softirqs_diff:SCHED.cores.h[count]"], x.sum(axis=1))
        np.testing.assert_allclose(folded["Softirqs_diff:SCHED.max.h[count]"], x.max(axis=1))
        np.testing.assert_allclose(folded["Softirqs_diff:SCHED.spread.h[count]"], x.std(axis=1))
        b = f.select(r"^CPU:Busy%\.\d+\.h\[%\]$").to_numpy()
        np.testing.assert_allclose(folded["CPU:Busy%.cores.h[%]"], b.mean(axis=1))  # a percentage: the mean
        # what is not per core is kept as it is, in place
        assert folded["CPU:Busy%.-.h[%]"].equals(f["CPU:Busy%.-.h[%]"])
        assert folded.columns[-1] == "Memory:Dirty.h[kB]"
        assert folded_family("Softirqs_diff:SCHED.max.h[count]", f.columns) == fams[0].columns


def test_fold_ignores_missing_cores_and_keeps_them_when_asked():
    f = _frame(4).with_columns(pl.lit(None, dtype=pl.Float64).alias("Softirqs_diff:SCHED.3.h[count]"))
    folded = fold_cores(f)
    x = f.select([f"Softirqs_diff:SCHED.{c}.h[count]" for c in range(3)]).to_numpy()
    np.testing.assert_allclose(folded["Softirqs_diff:SCHED.cores.h[count]"], x.sum(axis=1))
    kept = fold_cores(f, keep_cores=True)
    assert "Softirqs_diff:SCHED.2.h[count]" in kept.columns and "Softirqs_diff:SCHED.max.h[count]" in kept.columns
    # one core is its own total: nothing to fold
    one = _frame(1)
    assert fold_cores(one).columns == one.columns


def test_with_cores_copies_families_to_any_core_count_keeping_levels():
    f = _frame(16)
    for n in (2, 64, 192):
        g = with_cores(f, n, seed=1)
        fams = core_families(g.columns)
        assert sorted(len(x.columns) for x in fams) == [n, n]
        src = f["Softirqs_diff:SCHED.3.h[count]"].to_numpy()
        if n > 19:  # core 19 copies core 3, shifted by at most 5 samples: the same values
            assert sorted(g["Softirqs_diff:SCHED.19.h[count]"].to_list()) == sorted(src.tolist())
        assert g["Memory:Dirty.h[kB]"].equals(f["Memory:Dirty.h[kB]"])
    with pytest.raises(ValueError, match="n must be"):
        with_cores(f, 0)
