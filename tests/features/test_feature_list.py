"""One source of truth for the window features: ``reveal_lab.features._kernels.FEATURE_CODES``.

Every feature it lists must be planned for some metric kind (``DYNAMIC_FEATURES`` /
``COUNTER_FEATURES``), worded for evidence (``FEATURE_WORDS``), mapped to a tsfresh
calculator, and computed by every backend (the numba kernel, the numpy backend, tsfresh)
with the same value on a fixed series. Adding a
feature to the list without one of those steps fails here (docs/CONTRIBUTING.md, "Add a
window feature"); ``test_a_forgotten_backend_step_is_caught`` shows it on a throwaway feature.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping

import numpy as np
import pytest

from reveal_lab.features import COUNTER_FEATURES, DYNAMIC_FEATURES, FEATURES, MIN_VALID
from reveal_lab.features._kernels import FEATURE_CODES, N_FEATURES, window_feature_kernel
from reveal_lab.features._numpy import numpy_features

HAVE_TSFRESH = importlib.util.find_spec("tsfresh") is not None

Backend = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int], np.ndarray]


def _series() -> np.ndarray:
    """Two channels, 80 samples: a noisy AR(1) and a noisy ramp (no feature is degenerate)."""
    rng = np.random.default_rng(7)
    e = rng.normal(size=(80, 2))
    x = np.empty((80, 2))
    x[0] = e[0]
    for t in range(1, 80):
        x[t, 0] = 0.6 * x[t - 1, 0] + e[t, 0]
    x[:, 1] = 0.05 * np.arange(80) + e[:, 1]
    return np.asfortranarray(x)


def _numba(values, rs, re_, want, min_valid):
    out = np.full((len(rs), values.shape[1], want.shape[1]), np.nan)
    window_feature_kernel(values, rs, re_, want, min_valid, out)
    return out


def backend_problems(
    codes: Mapping[str, int], backends: Mapping[str, Backend], rtol: float = 1e-7
) -> list[str]:
    """What is wrong with the backends against the feature list ``codes``: a listed feature
    a backend leaves NaN on the fixed series, or a value differing from the first backend's."""
    values = _series()
    rs, re_ = np.array([0, 20], dtype=np.int64), np.array([80, 70], dtype=np.int64)
    want = np.ones((values.shape[1], len(codes)), dtype=np.bool_)
    outs = {name: fn(values, rs, re_, want, int(MIN_VALID)) for name, fn in backends.items()}
    ref_name = next(iter(outs))
    problems = []
    for feature, code in codes.items():
        for name, out in outs.items():
            col = out[:, :, code] if out.shape[2] > code else np.full(out.shape[:2], np.nan)
            if not np.isfinite(col).all():
                problems.append(f"{name}: feature {feature!r} ({code}) not computed")
            elif name != ref_name and not np.allclose(col, outs[ref_name][:, :, code], rtol=rtol, atol=1e-12):
                problems.append(f"{name}: feature {feature!r} ({code}) differs from {ref_name}")
    return problems


def test_the_feature_list_is_one_list():
    assert list(FEATURE_CODES.values()) == list(range(N_FEATURES))
    assert FEATURES == tuple(FEATURE_CODES)
    assert set(DYNAMIC_FEATURES) | set(COUNTER_FEATURES) == set(FEATURES), "a feature no metric kind gets"
    assert set(DYNAMIC_FEATURES) <= set(FEATURES) and set(COUNTER_FEATURES) <= set(FEATURES)
    from reveal_lab.attribution import FEATURE_WORDS

    assert set(FEATURES) <= set(FEATURE_WORDS), "a feature without words for the evidence sentences"


@pytest.mark.skipif(not HAVE_TSFRESH, reason="tsfresh is not installed")
def test_every_feature_has_a_tsfresh_calculator():
    from reveal_lab.features._tsfresh import tsfresh_calculators

    assert set(tsfresh_calculators()) == set(FEATURES)


def test_every_backend_computes_every_listed_feature():
    backends: dict[str, Backend] = {"numba": _numba, "numpy": numpy_features}
    if HAVE_TSFRESH:
        from reveal_lab.features._tsfresh import tsfresh_features

        backends["tsfresh"] = tsfresh_features
    assert backend_problems(FEATURE_CODES, backends) == []


def test_a_forgotten_backend_step_is_caught():
    """A throwaway feature ``range`` (max - min) added to the list and to the numpy backend
    only: the check names the kernel that lacks it; a kernel computing another value is
    caught too."""
    codes = {**FEATURE_CODES, "range": N_FEATURES}

    def with_range(fn: Backend, computed: bool, scale: float = 1.0) -> Backend:
        def run(values, rs, re_, want, min_valid):
            base = fn(values, rs, re_, want[:, :N_FEATURES].copy(), min_valid)
            extra = np.full(base.shape[:2] + (1,), np.nan)
            if computed:
                for w, (a, b) in enumerate(zip(rs, re_, strict=True)):
                    extra[w, :, 0] = scale * np.ptp(values[a:b], axis=0)
            return np.concatenate([base, extra], axis=2)

        return run

    numpy_ = with_range(numpy_features, True)
    forgot = backend_problems(codes, {"numpy": numpy_, "numba": with_range(_numba, False)})
    assert forgot == [f"numba: feature 'range' ({N_FEATURES}) not computed"]
    wrong = backend_problems(codes, {"numpy": numpy_, "numba": with_range(_numba, True, scale=1.01)})
    assert wrong == [f"numba: feature 'range' ({N_FEATURES}) differs from numpy"]
    assert backend_problems(codes, {"numpy": numpy_, "numba": with_range(_numba, True)}) == []
