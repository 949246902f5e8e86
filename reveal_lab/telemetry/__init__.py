"""Telemetry naming and frames: the one model every stage of reveal-lab shares.

Names and errors load at once; frames and the metric registry (polars) when first asked for,
so the collector runs where polars is not installed (a GPU machine lent without this
project's environment).
"""

import importlib

from reveal_lab.telemetry._errors import TelemetryError, TelemetryWarning
from reveal_lab.telemetry._names import (
    DIFF_SUFFIX,
    MetricName,
    format_metric_name,
    metric_key,
    parse_metric_name,
    sanitize_host,
)

#: the names loaded with polars, by module
_LAZY = {
    "_frame": (
        "TIMESTAMP", "TIMESTAMP_DTYPE", "Frame", "Run", "RunMeta", "frame_hosts", "metric_columns",
        "split_hosts", "to_long", "to_wide", "validate_frame",
    ),
    "_registry": (
        "DEFAULT_REGISTRY", "KINDS", "UNSCORED_KINDS", "SUBSYSTEMS", "MetricInfo", "MetricRegistry",
        "MetricRule", "catalogue", "classify", "register_metric",
    ),
}

__all__ = [
    "TIMESTAMP",
    "TIMESTAMP_DTYPE",
    "DIFF_SUFFIX",
    "Frame",
    "Run",
    "RunMeta",
    "TelemetryError",
    "TelemetryWarning",
    "MetricName",
    "MetricInfo",
    "MetricRule",
    "MetricRegistry",
    "DEFAULT_REGISTRY",
    "SUBSYSTEMS",
    "KINDS",
    "UNSCORED_KINDS",
    "catalogue",
    "classify",
    "register_metric",
    "metric_key",
    "parse_metric_name",
    "format_metric_name",
    "sanitize_host",
    "validate_frame",
    "metric_columns",
    "to_long",
    "to_wide",
    "split_hosts",
    "frame_hosts",
]


def __getattr__(name: str):  # noqa: ANN202 - frames and registry, loaded on first use (module docstring)
    for module, names in _LAZY.items():
        if name in names:
            value = getattr(importlib.import_module(f"reveal_lab.telemetry.{module}"), name)
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
