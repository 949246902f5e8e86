"""The dataset view of a raw collector frame: cumulative counters become the public
dataset's ``_diff`` columns and each probe family adds its derived columns
(CPU percentages, memory and network utilization, all-core perf counts, summed
storage counters)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from reveal_lab.telemetry import MetricName, format_metric_name

__all__ = ["dataset_view", "DERIVED"]

DerivedFn = Callable[[pl.DataFrame, list[dict[str, Any]], dict[str, Any], str], list[pl.Expr]]
DERIVED: dict[str, DerivedFn] = {}


def derived(probe: str) -> Callable[[DerivedFn], DerivedFn]:
    def deco(fn: DerivedFn) -> DerivedFn:
        DERIVED[probe] = fn
        return fn

    return deco


def _name(
    source: str, field: str, host: str, instance: str | None, unit: str | None, diff: bool = False
) -> str:
    return format_metric_name(MetricName(source, field, host, instance, unit, diff))


def _d(name: str) -> pl.Expr:
    """Change since the previous non-null sample (``diff`` when every tick is sampled;
    a probe sampled every N ticks gets the change over its own period on its sampled
    ticks and null in between)."""
    x = pl.col(name).cast(pl.Float64)
    return x - x.forward_fill().shift(1)


@derived("cpu")
def _cpu(raw: pl.DataFrame, chans: list[dict[str, Any]], meta: dict[str, Any], host: str) -> list[pl.Expr]:
    by_inst: dict[str, dict[str, str]] = {}
    for c in chans:
        if c["unit"] == "jiffies":
            by_inst.setdefault(c["instance"], {})[c["field"]] = c["name"]
    out = []
    for inst, f in by_inst.items():
        total = pl.sum_horizontal([_d(n) for n in f.values()])
        safe = pl.when(total > 0).then(total).otherwise(None)
        for field, n in f.items():
            out.append((100.0 * _d(n) / safe).alias(_name("CPU", field.capitalize() + "%", host, inst, "%")))
        idle = _d(f["idle"]) + (_d(f["iowait"]) if "iowait" in f else 0.0)
        out.append((100.0 - 100.0 * idle / safe).alias(_name("CPU", "Busy%", host, inst, "%")))
    return out


@derived("meminfo")
def _mem(raw: pl.DataFrame, chans: list[dict[str, Any]], meta: dict[str, Any], host: str) -> list[pl.Expr]:
    f = {c["field"]: c["name"] for c in chans}
    if "MemTotal" in f and "MemAvailable" in f:
        t, a = pl.col(f["MemTotal"]).cast(pl.Float64), pl.col(f["MemAvailable"]).cast(pl.Float64)
        return [(100.0 * (t - a) / t).alias(_name("Memory", "MemoryUtilization", host, None, "%"))]
    return []


def _dt_s(raw: pl.DataFrame, like: str | None = None) -> pl.Expr:
    """Seconds since the previous sample (of column ``like``, when given)."""
    t = pl.col("t_mono_ns").cast(pl.Float64)
    if like is None:
        return t.diff() / 1e9
    seen = pl.when(pl.col(like).is_not_null()).then(t)
    return (seen - seen.forward_fill().shift(1)) / 1e9


@derived("netdev")
def _net(raw: pl.DataFrame, chans: list[dict[str, Any]], meta: dict[str, Any], host: str) -> list[pl.Expr]:
    speeds = (meta.get("probe_info", {}).get("netdev", {}) or {}).get("speed_mbps", {}) or {}
    out = []
    for inst, mbps in speeds.items():
        if not mbps:
            continue
        rx = next((c["name"] for c in chans if c["instance"] == inst and c["field"] == "rx_bytes"), None)
        tx = next((c["name"] for c in chans if c["instance"] == inst and c["field"] == "tx_bytes"), None)
        if rx and tx:
            bits = 8.0 * (_d(rx) + _d(tx))
            out.append(
                (100.0 * bits / (mbps * 1e6 * _dt_s(raw, rx))).alias(
                    _name("NetworkInterStat", "NetworkUtilization", host, inst, "%", diff=True)
                )
            )
    return out


@derived("diskstats")
def _disk(raw: pl.DataFrame, chans: list[dict[str, Any]], meta: dict[str, Any], host: str) -> list[pl.Expr]:
    by_field: dict[str, list[dict[str, Any]]] = {}
    for c in chans:
        by_field.setdefault(c["field"], []).append(c)
    out = []
    for field, cs in by_field.items():
        expr = pl.sum_horizontal(
            [(_d(c["name"]) if c["counter"] else pl.col(c["name"]).cast(pl.Float64)) for c in cs]
        )
        out.append(expr.alias(_name("Storage", field, host, None, cs[0]["unit"], diff=cs[0]["counter"])))
    return out


@derived("perf")
def _perf(raw: pl.DataFrame, chans: list[dict[str, Any]], meta: dict[str, Any], host: str) -> list[pl.Expr]:
    by_field: dict[str, list[dict[str, Any]]] = {}
    for c in chans:
        by_field.setdefault(c["field"], []).append(c)
    out = []
    tot: dict[str, pl.Expr] = {}
    for field, cs in by_field.items():
        tot[field] = pl.sum_horizontal([_d(c["name"]) for c in cs])
        out.append(tot[field].alias(_name("Perf", field, host, None, cs[0]["unit"])))
    if "Cycles" in tot and "Instructions" in tot:
        out.append(
            (tot["Instructions"] / pl.when(tot["Cycles"] > 0).then(tot["Cycles"])).alias(
                _name("Perf", "IPC", host, None, "-")
            )
        )
    for miss, ref, name in (
        ("Cache_Misses", "Cache_References", "CacheMissRatio"),
        ("Branch_Misses", "Branches", "BranchMissRatio"),
    ):
        if miss in tot and ref in tot:
            out.append(
                (100.0 * tot[miss] / pl.when(tot[ref] > 0).then(tot[ref])).alias(
                    _name("Perf", name, host, None, "%")
                )
            )
    return out


def dataset_view(raw: pl.DataFrame, channels: list[dict[str, Any]], meta: dict[str, Any]) -> list[pl.Expr]:
    """Expressions over a raw frame (``t_mono_ns`` + channel columns) giving the dataset columns."""
    host = meta["host"]
    exprs: list[pl.Expr] = []
    for c in channels:
        ds = c.get("dataset")
        if not ds:
            continue
        exprs.append((_d(c["name"]) if c["counter"] else pl.col(c["name"]).cast(pl.Float64)).alias(ds))
    by_probe: dict[str, list[dict[str, Any]]] = {}
    for c in channels:
        by_probe.setdefault(c["probe"], []).append(c)
    for probe, chans in by_probe.items():
        fn = DERIVED.get(probe)
        if fn is not None:
            exprs.extend(fn(raw, chans, meta, host))
    return exprs
