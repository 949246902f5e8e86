"""Every study notebook runs in smoke mode with papermill and writes what the manifest lists,
with data in it: a figure that only says why it has nothing to show (``plots.plot_message``,
an empty panel) or a table that is only a ``note`` is a placeholder, and a placeholder the
bundled data should not produce fails the test.

Broken variant caught: a study that raises inside the notebook's ``try`` and falls back to
its placeholder figure or note table (e.g. ``packet_loss_study`` failing in notebook 06)
used to pass, since only the files' existence and headers were checked."""

import polars as pl
import pytest
from PIL import Image

from reveal_lab.notebooks import discover_notebooks, expected_outputs, run_notebook
from reveal_lab.plots import CONTENT_KEY

pytestmark = pytest.mark.notebook

#: outputs that may hold only a placeholder on the bundled data in smoke mode, and why
MAY_BE_EMPTY: dict[str, dict[str, str]] = {
    "06-case-studies": {
        # smoke mode: 3 runs cut to 40 s; the three DDP hosts' memory metrics do not deviate
        # persistently there (the CPU panel of Fig. 9 does)
        "fig9_crosshost_memory.png": "no persistent memory deviation across hosts in the smoke cut",
    },
    "09-evaluation": {
        # smoke mode scores 2 single-host runs with cross-host deviation off (manifest preset)
        "evaluation_crosshost_false_alarms.csv": "cross-host deviation is off in smoke mode",
    },
}


def placeholders(files) -> dict[str, str]:
    """``{file name: what it says instead of data}`` for the placeholder figures and tables."""
    found = {}
    for f in files:
        if f.suffix == ".png":
            content = Image.open(f).text.get(CONTENT_KEY)
            assert content is not None, f"{f}: not written by plots.save_figure (no {CONTENT_KEY} text)"
            if content != "data":
                found[f.name] = content
        elif f.suffix == ".csv":
            df = pl.read_csv(f, infer_schema_length=0)
            if df.columns == ["note"]:
                found[f.name] = "note: " + "; ".join(df["note"].to_list())
    return found


@pytest.mark.parametrize("path", discover_notebooks(), ids=lambda p: p.stem)
@pytest.mark.slow
def test_notebook_runs_in_smoke_mode(path, manifest, smoke_data, tmp_path):
    entry = manifest.entry(path.name)
    executed = run_notebook(manifest, entry, preset="smoke", data=smoke_data, out=tmp_path)
    assert executed.exists() and executed.parent == tmp_path / "notebooks"
    files = expected_outputs(entry, tmp_path)
    for f in files:
        assert f.stat().st_size > 0, f
        if f.suffix == ".png":
            assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        elif f.suffix == ".pdf":
            assert f.read_bytes()[:5] == b"%PDF-"
        elif f.suffix == ".csv":
            pl.read_csv(f, infer_schema_length=0)
        elif f.suffix == ".md":
            assert f.read_text().startswith("|")
    allowed = MAY_BE_EMPTY.get(path.stem, {})
    unexpected = {k: v for k, v in placeholders(files).items() if k not in allowed}
    assert not unexpected, f"{path.stem}: placeholders instead of results: {unexpected}"


def test_placeholders_are_told_from_results(tmp_path):
    """The check itself: a message figure and a note table are placeholders; a chart is not."""
    from reveal_lab import plots
    from reveal_lab.studies import save_table

    plots.save_figure(plots.plot_message("the study failed"), tmp_path, "placeholder")
    fig, axes = plots.new_figure()
    axes[0, 0].bar(["a", "b"], [1, 2])
    plots.save_figure(fig, tmp_path, "chart")
    save_table(pl.DataFrame({"note": ["no labels"]}), tmp_path, "note_only")
    save_table(pl.DataFrame({"a": [1], "note": ["x"]}), tmp_path, "real")
    files = [*sorted((tmp_path / "figures").glob("*.png")), *sorted((tmp_path / "tables").glob("*.csv"))]
    assert placeholders(files) == {
        "placeholder.png": "empty: the study failed",
        "note_only.csv": "note: no labels",
    }
