"""The manifest and the notebooks on disk agree: names, parameters and their types,
paired .py twins, no committed outputs."""

import json

import jupytext
import pytest

from reveal_lab.notebooks import (
    INJECTED,
    PRESET_NAMES,
    discover_notebooks,
    load_manifest,
    notebook_parameters,
)

NOTEBOOKS = discover_notebooks()


def test_notebooks_exist_and_are_numbered_in_run_order(manifest):
    assert NOTEBOOKS, "no study notebooks found"
    on_disk = [p.name for p in NOTEBOOKS]
    listed = [e.notebook for e in manifest.notebooks]
    assert sorted(listed) == on_disk, "manifest and notebooks/ disagree"
    assert listed == sorted(listed), "the manifest runs notebooks out of their numbered order"
    assert len({p.name[:2] for p in NOTEBOOKS}) == len(NOTEBOOKS), "two notebooks share a number"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_match_manifest(path, manifest):
    declared = notebook_parameters(path)
    entry = manifest.entry(path.name)
    for name in INJECTED:
        assert name in declared, f"{path.name} does not declare injected parameter {name!r}"
    assert (
        type(declared["smoke"]) is bool and type(declared["data"]) is str and type(declared["out_dir"]) is str
    )
    for preset in PRESET_NAMES:
        params = manifest.parameters(entry, preset)
        for k, v in params.items():
            assert k in declared, (
                f"{path.name}: manifest sets {k!r} ({preset}) but the notebook does not declare it"
            )
            assert type(v) is type(declared[k]), (
                f"{path.name}: {k!r} is {type(declared[k]).__name__} in the notebook, "
                f"{type(v).__name__} in the manifest ({preset})"
            )
    undeclared = set(declared) - set(INJECTED) - set(entry.parameters)
    assert not undeclared, f"{path.name}: parameters {sorted(undeclared)} are missing from the manifest"
    assert entry.figures or entry.tables, f"{path.name} makes no listed figure or table"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_paired_twin_in_sync_and_no_outputs(path):
    twin = path.with_suffix(".py")
    assert twin.exists(), f"{path.name} has no jupytext percent twin"
    nb = json.loads(path.read_text())
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] == "code":
            assert not c.get("outputs") and c.get("execution_count") is None, (
                f"{path.name} cell {i} has outputs"
            )
    a = [(c.cell_type, c.source.strip()) for c in jupytext.read(path).cells]
    b = [(c.cell_type, c.source.strip()) for c in jupytext.read(twin).cells]
    assert a == b, f"{path.name} and {twin.name} differ; run `jupytext --sync {twin}`"
    assert nb["metadata"]["kernelspec"]["name"] == "reveal-lab"


def test_manifest_rejects_non_scalar_and_missing_notebook(tmp_path):
    (tmp_path / "01-a.ipynb").write_text("{}")
    bad = tmp_path / "manifest.yml"
    bad.write_text(
        "presets: {smoke: {}, full: {}}\nnotebooks:\n  - notebook: 01-a.ipynb\n    parameters: {x: [1, 2]}\n"
    )
    with pytest.raises(ValueError, match="must be a scalar"):
        load_manifest(bad)
    bad.write_text("presets: {smoke: {}, full: {}}\nnotebooks:\n  - notebook: 02-missing.ipynb\n")
    with pytest.raises(ValueError, match="does not exist"):
        load_manifest(bad)
    bad.write_text("presets: {smoke: {}}\nnotebooks: []\n")
    with pytest.raises(ValueError, match="missing"):
        load_manifest(bad)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_papermill_sees_every_parameter(path):
    """papermill parses the parameters cell itself (an `=` in a comment hides a parameter from it)."""
    import nbformat
    from papermill.translators import PythonTranslator

    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert {p.name for p in PythonTranslator.inspect(cell)} == set(notebook_parameters(path))
