"""Reading a notebook's ``parameters`` cell (names, values and types), without running it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

__all__ = ["notebook_parameters"]


def notebook_parameters(path: str | Path) -> dict[str, Any]:
    """The assignments of the cell tagged ``parameters``: ``{name: value}``.

    Only literal scalars are allowed (what papermill can inject); anything else raises
    ``ValueError`` naming the notebook and the line.
    """
    import nbformat

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"{path}: expected exactly one cell tagged 'parameters', found {len(cells)}")
    tree = ast.parse(cells[0].source)
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring-like comment
        target = (
            node.targets[0]
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            else (node.target if isinstance(node, ast.AnnAssign) else None)
        )
        if not isinstance(target, ast.Name) or node.value is None:  # type: ignore[union-attr]
            raise ValueError(f"{path}: parameters cell line {node.lineno}: only `name = literal` is allowed")
        try:
            value = ast.literal_eval(node.value)  # type: ignore[union-attr, arg-type]
        except ValueError:
            raise ValueError(
                f"{path}: parameters cell line {node.lineno}: {target.id} is not a literal"
            ) from None
        if not isinstance(value, (str, int, float, bool)):
            raise ValueError(
                f"{path}: parameters cell line {node.lineno}: {target.id} must be a scalar, "
                f"got {type(value).__name__}"
            )
        out[target.id] = value
    return out
