"""A local cluster's workers each keep to one thread for BLAS, OpenMP and numba's parallel loops
(``scale.WORKER_ENVIRON``): N single-threaded workers use N cores, not N times the cores."""

from __future__ import annotations

from typing import Any


def _threads() -> dict[str, Any]:
    import os

    import numba
    from threadpoolctl import threadpool_info

    from reveal_lab.features import window_features  # noqa: F401 - the package a task imports

    blas = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return {
        "numba": numba.get_num_threads(),
        "blas": blas,
        "env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS")},
    }


def test_workers_single_threaded(client: Any) -> None:
    import os

    from reveal_lab.scale import WORKER_ENVIRON

    per_worker = client.run(_threads)
    assert len(per_worker) == 2
    for info in per_worker.values():
        assert info["numba"] == 1, info
        assert info["blas"] and set(info["blas"]) == {1}, info
        for k in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS"):
            assert info["env"][k] == os.environ.get(k, WORKER_ENVIRON[k]), info
