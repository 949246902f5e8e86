from __future__ import annotations

import os
from pathlib import Path

import pytest

from reveal_lab.config import PROJECT_ROOT


def _shared_dir() -> Path | None:
    env = os.environ.get("REVEAL_LABELLED_DIR")
    for cand in ([Path(env)] if env else []) + [PROJECT_ROOT.parent / "shared" / "data" / "labelled-servers"]:
        if (cand / "omi-1_train.csv.gz").is_file():
            return cand
    return None


needs_shared = pytest.mark.skipif(
    _shared_dir() is None, reason="labelled-servers data not found (set REVEAL_LABELLED_DIR)"
)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    d = _shared_dir()
    assert d is not None
    return d
