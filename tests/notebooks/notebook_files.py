"""Small real notebooks for the runner's tests: a tagged parameters cell, then one cell."""

from __future__ import annotations

from pathlib import Path

import nbformat


def write_notebook(path: Path, body: str, params: str) -> None:
    """A notebook at ``path`` running ``params`` (tagged ``parameters``), then ``body``,
    in the reveal-lab kernel."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "reveal-lab", "display_name": "Python (reveal-lab)", "language": "python"}
    p = nbformat.v4.new_code_cell(params)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [p, nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, path)
