"""Every study notebook runs in smoke mode with papermill and writes what the manifest lists."""

import polars as pl
import pytest

from reveal_lab.notebooks import discover_notebooks, expected_outputs, run_notebook

pytestmark = pytest.mark.notebook


@pytest.mark.parametrize("path", discover_notebooks(), ids=lambda p: p.stem)
def test_notebook_runs_in_smoke_mode(path, manifest, smoke_data, tmp_path):
    entry = manifest.entry(path.name)
    executed = run_notebook(manifest, entry, preset="smoke", data=smoke_data, out=tmp_path)
    assert executed.exists() and executed.parent == tmp_path / "notebooks"
    for f in expected_outputs(entry, tmp_path):
        assert f.stat().st_size > 0, f
        if f.suffix == ".png":
            assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        elif f.suffix == ".pdf":
            assert f.read_bytes()[:5] == b"%PDF-"
        elif f.suffix == ".csv":
            pl.read_csv(f, infer_schema_length=0)
        elif f.suffix == ".md":
            assert f.read_text().startswith("|")
