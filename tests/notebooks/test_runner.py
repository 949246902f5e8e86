"""The runner on small real notebooks: order, outputs, index.html, stop at the first failing cell."""

import nbformat
import pytest

from reveal_lab.cli import main
from reveal_lab.notebooks import NotebookFailed, load_manifest, run_manifest

pytestmark = pytest.mark.notebook

PARAMS = 'data = ""\nout_dir = "."\nsmoke = False\nvalue = 1.0\n'
# tables written by reveal_lab.render.write_table, the writer of studies.save_table: importing
# reveal_lab.studies (scikit-learn) would cost each kernel about 2 s of CPU
GOOD = """
from pathlib import Path
import polars as pl
from reveal_lab import plots
from reveal_lab.render import write_table
fig, axes = plots.new_figure()
axes[0, 0].plot([0, 1], [0, value])
plots.save_figure(fig, out_dir, "line")
write_table(pl.DataFrame({"value": [value], "smoke": [smoke]}), Path(out_dir) / "tables" / "values")
"""
BAD = "x = 1\ny = x / 0  # fails here\n"


def _notebook(path, body):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "reveal-lab",
        "display_name": "Python (reveal-lab)",
        "language": "python",
    }
    p = nbformat.v4.new_code_cell(PARAMS)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# test"), p, nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, path)


def _manifest(tmp_path, second):
    d = tmp_path / "nbs"
    d.mkdir()
    _notebook(d / "01-good.ipynb", GOOD)
    _notebook(d / "02-second.ipynb", second)
    _notebook(d / "03-never.ipynb", GOOD)
    (d / "manifest.yml").write_text(
        "kernel: reveal-lab\npresets: {smoke: {}, full: {}}\nnotebooks:\n"
        "  - {notebook: 01-good.ipynb, parameters: {value: 2.0}, presets: {smoke: {value: 3.0}},"
        " figures: [line], tables: [values]}\n"
        "  - {notebook: 02-second.ipynb, tables: [second]}\n"
        "  - {notebook: 03-never.ipynb, figures: [line3]}\n"
    )
    return d / "manifest.yml"


@pytest.mark.slow
def test_stops_at_first_failing_cell_and_shows_it(tmp_path):
    m = load_manifest(_manifest(tmp_path, BAD))
    out = tmp_path / "out"
    with pytest.raises(NotebookFailed) as err:
        run_manifest(preset="smoke", data="synth", out=out, manifest=m, log=lambda s: None)
    e = err.value
    assert e.notebook == "02-second.ipynb"
    assert e.ename == "ZeroDivisionError" and "y = x / 0" in e.source
    assert e.cell_index is not None and "cell" in str(e) and "ZeroDivisionError" in str(e)
    # the first notebook ran with the smoke override, the third never ran
    assert (out / "figures" / "line.png").exists() and (out / "figures" / "line.pdf").exists()
    assert "3.0" in (out / "tables" / "values.csv").read_text()
    assert not (out / "notebooks" / "03-never.ipynb").exists()
    page = (out / "index.html").read_text()
    assert "FAILED" in page and "ZeroDivisionError" in page and 'src="figures/line.png"' in page
    assert "not run" in page


def test_notebook_that_forgets_an_output_fails(tmp_path):
    m = load_manifest(_manifest(tmp_path, "z = 1\n"))
    with pytest.raises(NotebookFailed, match="did not write"):
        run_manifest(
            preset="full",
            data="synth",
            out=tmp_path / "o",
            manifest=m,
            only=["02-second"],
            log=lambda s: None,
        )


@pytest.mark.slow
def test_cli_reproduce_writes_index_and_reports_failure(tmp_path, capsys):
    mpath = _manifest(tmp_path, BAD)
    out = tmp_path / "cli"
    rc = main(
        [
            "reproduce",
            "--preset",
            "full",
            "--data",
            "synth",
            "--out",
            str(out),
            "--manifest",
            str(mpath),
            "--only",
            "01-good",
        ]
    )
    assert rc == 0
    assert "2.0" in (out / "tables" / "values.csv").read_text()  # full preset: the notebook default
    assert (out / "tables" / "values.md").read_text().startswith("| value |")
    assert 'href="notebooks/01-good.ipynb"' in (out / "index.html").read_text()
    rc = main(
        ["reproduce", "--preset", "smoke", "--data", "synth", "--out", str(out), "--manifest", str(mpath)]
    )
    assert rc == 1
    assert "02-second.ipynb: cell" in capsys.readouterr().err
    assert main(["reproduce", "--list", "--manifest", str(mpath)]) == 0


@pytest.mark.slow
def test_reproduce_output_is_quiet(tmp_path, capfd):
    """Broken variant: the kernel over TCP (no ``_ipc_config``) prints ipykernel's
    "running over TCP without encryption" warning for every notebook."""
    m = load_manifest(_manifest(tmp_path, "z = 1\n"))
    lines: list[str] = []
    run_manifest(preset="full", data="synth", out=tmp_path / "q", manifest=m, only=["01-good"], log=lines.append)
    out, err = capfd.readouterr()
    assert "without encryption" not in err + out
    assert not [ln for ln in err.splitlines() if "WARNING" in ln], err
    assert any("01-good.ipynb: ok" in ln for ln in lines)


def test_the_kernel_starts_with_its_log_at_critical(tmp_path):
    """The kernel's own log lines (such as ipykernel's "KeyboardInterrupt caught in kernel." at
    shutdown) stay out of reproduce's output: the kernel process starts with
    ``--IPKernelApp.log_level=CRITICAL``, read back here from the kernel's own ``sys.argv``."""
    d = tmp_path / "nbs"
    d.mkdir()
    _notebook(d / "01-argv.ipynb", "import sys\nprint(' '.join(sys.argv))\n")
    (d / "manifest.yml").write_text(
        "kernel: reveal-lab\npresets: {smoke: {}, full: {}}\nnotebooks:\n  - {notebook: 01-argv.ipynb}\n"
    )
    run_manifest(preset="full", data="synth", out=tmp_path / "k", manifest=load_manifest(d / "manifest.yml"))
    nb = nbformat.read(tmp_path / "k" / "notebooks" / "01-argv.ipynb", as_version=4)
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert "--IPKernelApp.log_level=CRITICAL" in printed, printed
