import pytest

from reveal_lab.config import data_dir, fixtures_dir
from reveal_lab.notebooks import load_manifest


@pytest.fixture(scope="session")
def manifest():
    return load_manifest()


@pytest.fixture(scope="session")
def smoke_data() -> str:
    """The bundled lab dataset when it is there (what `reproduce` uses), else the public-layout fixture."""
    root = data_dir()
    return str(root if (root / "meta_lab.csv").exists() else fixtures_dir() / "reveal_sample")
