"""The bundled sample of the public dataset's layout (``data/fixtures/reveal_sample``),
for tests, doctests and demos. Made by ``scripts/make_fixtures.py``; values are synthetic."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

from reveal_lab.config import fixtures_dir

__all__ = ["sample_dir", "unzip_sample", "sample_columns"]


def sample_dir() -> Path:
    """``data/fixtures/reveal_sample``: ``Reveal_GPU.zip``, ``Reveal_CPU.zip``, ``meta_*.csv``."""
    return fixtures_dir() / "reveal_sample"


def unzip_sample(dest: str | Path) -> Path:
    """Unzip the sample the way a user would (``dest/Reveal_GPU/``, ``dest/Reveal_CPU/`` beside
    the meta CSVs) and return ``dest``."""
    dest = Path(dest)
    src = sample_dir()
    for z in sorted(src.glob("Reveal_*.zip")):
        with zipfile.ZipFile(z) as f:
            f.extractall(dest / z.stem)
    for m in src.glob("meta_*.csv"):
        shutil.copy(m, dest / m.name)
    return dest


def sample_columns(platform: str) -> list[str]:
    """Metric column names of the sample's ``platform`` ("gpu" or "cpu"), from the headers,
    in order of first appearance.

    >>> len(sample_columns("gpu")), sample_columns("gpu")[0]
    (168, 'Perf:Branches.htc-g004[count]')
    """
    cols: dict[str, None] = {}
    with zipfile.ZipFile(sample_dir() / f"Reveal_{platform.upper()}.zip") as z:
        for n in z.namelist():
            if n.endswith(".txt"):
                with z.open(n) as f:
                    for c in f.readline().decode().rstrip("\r\n").split("\t")[1:]:
                        cols.setdefault(c, None)
    return list(cols)
