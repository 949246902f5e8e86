"""One style for every figure: sizes, fonts, a colour per subsystem and detector,
and saving as PNG and PDF."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "STYLE",
    "SUBSYSTEM_COLORS",
    "METHOD_COLORS",
    "style",
    "new_figure",
    "save_figure",
    "color_for",
    "mark_empty",
    "figure_content",
    "CONTENT_KEY",
]

#: the PNG text key :func:`save_figure` writes: ``"data"``, or ``"empty: <why>"`` for a figure
#: that only says why it has nothing to show (tests read it back to catch placeholders)
CONTENT_KEY = "reveal-lab-content"

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


def mark_empty(ax, text: str = "no data") -> None:  # noqa: ANN001 - matplotlib Axes
    """Say on ``ax`` why it has nothing to show, and mark it so (:func:`figure_content`)."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_gid("reveal-lab-empty: " + text)


def figure_content(fig) -> str:  # noqa: ANN001 - matplotlib Figure
    """``"data"`` when some axes of ``fig`` draws data (lines, markers, bars, meshes or
    images) and is not marked empty; else ``"empty: <the reasons shown>"``.

    >>> fig, axes = new_figure()
    >>> figure_content(fig)
    'empty: nothing drawn'
    >>> _ = axes[0, 0].plot([1, 2], [3, 4]); figure_content(fig)
    'data'
    """
    reasons = []
    for ax in fig.axes:
        gid = ax.get_gid() or ""
        if gid.startswith("reveal-lab-empty: "):
            reasons.append(gid.split(": ", 1)[1])
        elif ax.lines or ax.collections or ax.patches or ax.images:
            return "data"
    return "empty: " + ("; ".join(dict.fromkeys(reasons)) or "nothing drawn")


def save_figure(fig, out_dir: str | Path, name: str, formats: tuple[str, ...] = ("png", "pdf")) -> list[Path]:
    """Save ``fig`` as ``out_dir/figures/name.{png,pdf}``; return the paths. The PNG says in
    its text chunk :data:`CONTENT_KEY` whether it draws data (:func:`figure_content`)."""
    figs = Path(out_dir) / "figures"
    figs.mkdir(parents=True, exist_ok=True)
    paths = []
    content = figure_content(fig)
    with style():
        for ext in formats:
            p = figs / f"{name}.{ext}"
            fig.savefig(p, metadata={CONTENT_KEY: content} if ext == "png" else None)
            paths.append(p)
    return paths
