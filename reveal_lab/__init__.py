"""reveal-lab: anomaly detection for ML infrastructure from hardware telemetry alone.

Subpackages, one per stage: :mod:`reveal_lab.telemetry` (naming, frames),
:mod:`reveal_lab.io` (loaders), :mod:`reveal_lab.collect` (the collector),
:mod:`reveal_lab.features`, :mod:`reveal_lab.pruning`, :mod:`reveal_lab.detectors`,
:mod:`reveal_lab.attribution`, :mod:`reveal_lab.report`, :mod:`reveal_lab.studies`,
:mod:`reveal_lab.plots`, :mod:`reveal_lab.lab`, :mod:`reveal_lab.bench`,
:mod:`reveal_lab.scale`, :mod:`reveal_lab.live`.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
