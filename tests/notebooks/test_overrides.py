"""reproduce --param / --resume / the shared cache folder, on small real notebooks."""

import polars as pl
import pytest

from reveal_lab.cli import main
from reveal_lab.notebooks import NotebookFailed, load_manifest, notebook_overrides, parse_param, run_manifest
from tests.notebooks.test_runner import BAD, _manifest

pytestmark = pytest.mark.notebook
ONLY = ["01-good", "02-second"]

SECOND = """
import os
from pathlib import Path
import polars as pl
from reveal_lab.render import write_table
cache = pl.DataFrame({"cache": [os.environ.get("REVEAL_LAB_CACHE", "")]})
write_table(cache, Path(out_dir) / "tables" / "second")
"""


def _values(out):
    return pl.read_csv(out / "tables" / "values.csv")["value"].to_list()


def test_param_reaches_the_notebooks_that_declare_it(tmp_path):
    m = load_manifest(_manifest(tmp_path, SECOND))
    out = tmp_path / "out"
    run_manifest(preset="full", data="synth", out=out, manifest=m, log=lambda s: None, params={"value": 5},
                 only=ONLY)
    assert _values(out) == [5.0]  # an int given for a float parameter is converted
    assert pl.read_csv(out / "tables" / "second.csv")["cache"].to_list() == [str(out.resolve() / "cache")]


def test_unknown_or_mistyped_parameter_is_an_error_naming_the_known_ones(tmp_path):
    m = load_manifest(_manifest(tmp_path, SECOND))
    with pytest.raises(ValueError, match="no notebook run here declares it; known parameters: value"):
        notebook_overrides(m, m.notebooks, {"valeu": 1.0})
    with pytest.raises(ValueError, match="01-good.ipynb declares value = 1.0 .float."):
        notebook_overrides(m, m.notebooks, {"value": "high"})
    with pytest.raises(ValueError, match="set by reproduce itself"):
        notebook_overrides(m, m.notebooks, {"data": "x"})
    assert notebook_overrides(m, m.notebooks[:1], {"value": "2"})["01-good.ipynb"] == {"value": 2.0}
    assert parse_param("workloads=a,b") == ("workloads", "a,b")


def test_cli_reports_an_unknown_parameter(tmp_path, capsys):
    path = _manifest(tmp_path, SECOND)
    rc = main(["reproduce", "--manifest", str(path), "--out", str(tmp_path / "o"), "--data", "synth",
               "--param", "nope=1"])
    assert rc == 2
    assert "nope" in capsys.readouterr().err


def test_resume_keeps_complete_notebooks_and_runs_from_the_first_incomplete(tmp_path):
    path = _manifest(tmp_path, BAD)
    out = tmp_path / "out"
    with pytest.raises(NotebookFailed):
        run_manifest(preset="smoke", data="synth", out=out, manifest=load_manifest(path), log=lambda s: None,
                     only=ONLY)
    first = out / "notebooks" / "01-good.ipynb"
    stamp = first.stat().st_mtime_ns
    (path.parent / "02-second.ipynb").unlink()
    (tmp_path / "nbs2").mkdir()
    good = _manifest(tmp_path / "nbs2", SECOND)  # the same notebooks with a working second one
    (path.parent / "02-second.ipynb").write_bytes((good.parent / "02-second.ipynb").read_bytes())
    lines = []
    res = run_manifest(preset="smoke", data="synth", out=out, manifest=load_manifest(path), log=lines.append,
                       resume=True, cache=False, only=ONLY)
    assert [r.status for r in res] == ["ok", "ok"]
    assert first.stat().st_mtime_ns == stamp  # kept, not run again
    assert any("01-good.ipynb: complete, kept" in s for s in lines)
    assert pl.read_csv(out / "tables" / "second.csv")["cache"].fill_null("").to_list() == [""]
    # other parameters: nothing is complete any more
    run_manifest(preset="smoke", data="synth", out=out, manifest=load_manifest(path), log=lambda s: None,
                 resume=True, params={"value": 7.0}, only=ONLY)
    assert first.stat().st_mtime_ns != stamp and _values(out) == [7.0]
