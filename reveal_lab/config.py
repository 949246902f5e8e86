"""Defaults in one place: frozen dataclasses, named presets and project paths.

``REVEAL_DATA_DIR`` overrides where the bundled dataset is read from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = [
    "PROJECT_ROOT",
    "data_dir",
    "fixtures_dir",
    "WindowConfig",
    "DetectConfig",
    "PruneConfig",
    "Preset",
    "PRESETS",
    "get_preset",
    "parse_duration",
]

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The bundled lab dataset (``data/lab``), or ``$REVEAL_DATA_DIR``."""
    env = os.environ.get("REVEAL_DATA_DIR")
    return Path(env) if env else PROJECT_ROOT / "data" / "lab"


def fixtures_dir() -> Path:
    """Tiny faithful samples of the public dataset's layout (``data/fixtures``)."""
    return PROJECT_ROOT / "data" / "fixtures"


def parse_duration(text: str | float | int) -> float:
    """Seconds from ``"3s"``, ``"500ms"``, ``"2m"``, ``"10min"``, ``"1h"`` or a number of seconds.

    >>> parse_duration("1.5s"), parse_duration("100ms"), parse_duration(2), parse_duration("10min")
    (1.5, 0.1, 2.0, 600.0)
    """
    if isinstance(text, (int, float)):
        return float(text)
    t = text.strip().lower()
    for suffix, scale in (
        ("ms", 1e-3),
        ("sec", 1.0),
        ("s", 1.0),
        ("min", 60.0),
        ("m", 60.0),
        ("h", 3600.0),
    ):
        if t.endswith(suffix):
            try:
                return float(t[: -len(suffix)]) * scale
            except ValueError:
                break
    try:
        return float(t)
    except ValueError:
        raise ValueError(f"cannot read duration {text!r}; expected e.g. '3s', '500ms', '2m', '10min'") from None


@dataclass(frozen=True)
class WindowConfig:
    """Sliding windows by time (paper §4.2: 3 s windows, 1 s stride at 100 ms)."""

    window_s: float = 3.0
    stride_s: float = 1.0
    interval_s: float = 0.1
    #: a window needs at least this share of its expected samples to be scored
    min_fill: float = 0.5


@dataclass(frozen=True)
class DetectConfig:
    """Detector settings (paper §4.3). The threshold quantile every detector shares (the
    paper's top 1 %) is a decision: :class:`reveal_lab.pipeline.DetectionPolicy`'s
    ``quantile``."""

    pca_variance: float = 0.95
    iforest_estimators: int = 200
    seed: int = 0
    #: metric-feature pairs kept as evidence per anomalous window and detector
    top_k: int = 5
    #: arithmetic of the PCA-Mahalanobis fit: "float64" (exact), "mixed" or "float32"
    #: (see :class:`~reveal_lab.detectors.PCAMahalanobisDetector`)
    pca_precision: str = "float64"
    #: a fourth detector, PCA reconstruction error (QuoVadis' strongest simple baseline),
    #: in agreement and the combined score when True (off by default: the paper's three
    #: detectors, and ``min_agreement=3`` keeps meaning "all of them")
    pcarecon: bool = False


@dataclass(frozen=True)
class PruneConfig:
    """Correlation-based metric pruning (paper §4.1)."""

    threshold: float = 0.5
    thresholds: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class Preset:
    name: str
    window: WindowConfig = field(default_factory=WindowConfig)
    detect: DetectConfig = field(default_factory=DetectConfig)
    prune: PruneConfig = field(default_factory=PruneConfig)
    #: how many runs per workload the studies use (None: all)
    max_runs_per_workload: int | None = None
    smoke: bool = False


PRESETS: dict[str, Preset] = {
    "paper": Preset("paper"),
    "smoke": Preset(
        "smoke",
        detect=DetectConfig(iforest_estimators=50),
        prune=PruneConfig(thresholds=(0.3, 0.5, 0.7, 0.9)),
        max_runs_per_workload=3,
        smoke=True,
    ),
}




def get_preset(name: str, **overrides: object) -> Preset:
    """A named preset of window, feature and detector settings (:data:`PRESETS`: ``paper``,
    the paper's; ``smoke``, a fast one), optionally with fields replaced. Which windows are
    anomalous is not a preset's: :class:`reveal_lab.pipeline.DetectionPolicy` decides it.

    >>> get_preset("paper", max_runs_per_workload=2).max_runs_per_workload
    2
    >>> get_preset("full")
    Traceback (most recent call last):
    ...
    ValueError: unknown preset 'full'; expected one of ['paper', 'smoke'] (decisions: pipeline.POLICIES)
    """
    try:
        p = PRESETS[name]
    except KeyError:
        raise ValueError(
            f"unknown preset {name!r}; expected one of {sorted(PRESETS)} (decisions: pipeline.POLICIES)"
        ) from None
    return replace(p, **overrides) if overrides else p  # type: ignore[arg-type]
