"""Host-free views of a host's columns, so that one key means the same on every host."""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from reveal_lab.telemetry import format_metric_name, metric_columns, parse_metric_name

__all__ = ["own_core_view"]


def own_core_view(frame: pl.DataFrame, host: str, core: int | str) -> pl.DataFrame:
    """Rename a host's own-core and own-cgroup columns to the instances ``own`` and ``self``.

    Per-core columns of ``core`` become instance ``own`` and the host's cgroup (instance ==
    ``host``) becomes ``self``, so the same host-free key means the same thing on every lab
    host (``CPU:Busy%.own`` is host A's core 0 and host B's core 1). Other per-core columns
    are left as they are.
    """
    ren = {}
    core = str(core)
    for c in metric_columns(frame):
        m = parse_metric_name(c)
        if m is None or m.instance is None:
            continue
        if m.instance == core:
            ren[c] = format_metric_name(replace(m, instance="own"))
        elif m.instance == host:
            ren[c] = format_metric_name(replace(m, instance="self"))
    return frame.rename(ren)
