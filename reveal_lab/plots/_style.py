"""One style for every figure: sizes, fonts, a colour per subsystem and detector,
and saving as PNG and PDF."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["STYLE", "SUBSYSTEM_COLORS", "METHOD_COLORS", "style", "new_figure", "save_figure", "color_for"]

#: rcParams applied inside :func:`style`
STYLE: dict[str, object] = {
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "lines.linewidth": 1.2,
    "pdf.fonttype": 42,
}

SUBSYSTEM_COLORS: dict[str, str] = {
    "cpu": "#1f77b4",
    "gpu": "#2ca02c",
    "memory": "#9467bd",
    "network": "#ff7f0e",
    "storage": "#8c564b",
    "system": "#7f7f7f",
}
METHOD_COLORS: dict[str, str] = {
    "zscore": "#4c72b0",
    "pca": "#dd8452",
    "mahalanobis": "#dd8452",
    "iforest": "#55a868",
    "agreement": "#c44e52",
}
_CYCLE = [
    "#4c72b0",
    "#dd8452",
    "#55a868",
    "#c44e52",
    "#8172b3",
    "#937860",
    "#da8bc3",
    "#8c8c8c",
    "#ccb974",
    "#64b5cd",
]


def color_for(name: str, i: int = 0) -> str:
    """The colour of a subsystem or detector, else the ``i``-th colour of the cycle.

    Labels such as ``agreement>=2`` take the colour of their leading word, so they never
    share a cycle colour with a detector.

    >>> color_for("agreement>=2") == METHOD_COLORS["agreement"] != color_for("zscore")
    True
    """
    key = str(name).lower()
    head = re.match(r"[a-z]+", key)
    for k in (key, head.group(0) if head else key):
        if k in SUBSYSTEM_COLORS or k in METHOD_COLORS:
            return SUBSYSTEM_COLORS.get(k) or METHOD_COLORS[k]
    return _CYCLE[i % len(_CYCLE)]


@contextmanager
def style() -> Iterator[None]:
    """Apply the house style for the figures drawn inside the block."""
    import matplotlib as mpl

    with mpl.rc_context(STYLE):  # type: ignore[arg-type]
        yield


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float = 6.4, height: float = 3.2, **kw: object):
    """``(fig, axes)`` in the house style, without touching pyplot's global state."""
    from matplotlib.figure import Figure

    with style():
        fig = Figure(figsize=(width, height), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False, **kw)  # type: ignore[arg-type]
    return fig, axes


def save_figure(fig, out_dir: str | Path, name: str, formats: tuple[str, ...] = ("png", "pdf")) -> list[Path]:
    """Save ``fig`` as ``out_dir/figures/name.{png,pdf}``; return the paths."""
    figs = Path(out_dir) / "figures"
    figs.mkdir(parents=True, exist_ok=True)
    paths = []
    with style():
        for ext in formats:
            p = figs / f"{name}.{ext}"
            fig.savefig(p)
            paths.append(p)
    return paths
