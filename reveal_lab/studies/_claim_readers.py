"""How each claim's value is read from a reproduction's output folder: small functions that
return a :class:`~reveal_lab.studies._claim_model.Reading` (no value: the reason), used by the
catalogue in :mod:`~reveal_lab.studies._claims`."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from reveal_lab.studies._claim_model import ClaimContext, Reading
from reveal_lab.studies._claim_tables import metric_family
from reveal_lab.studies._platforms import SECTION_SEP


def _missing(name: str) -> Reading:
    return Reading(None, f"tables/{name}.csv not in the output (its notebook failed or was not run)")


def _float(v: object) -> float | None:
    if v is None:
        return None
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.4g}"


def _from(name: str, pick: Callable[[pl.DataFrame, ClaimContext], Reading]) -> Callable[[ClaimContext],
                                                                                        Reading]:
    """A reader of table ``name`` (missing: cannot be checked, naming the file)."""

    def read(ctx: ClaimContext) -> Reading:
        df = ctx.table(name)
        if df is None:
            return _missing(name)
        if df.height == 0:
            return Reading(None, f"tables/{name}.csv has no rows" + (f" for the {ctx.policy} setting" if
                                                                       _has_policy(ctx, name) else ""))
        return pick(df, ctx)

    return read


def _has_policy(ctx: ClaimContext, name: str) -> bool:
    p = ctx.out / "tables" / f"{name}.csv"
    return p.exists() and "policy" in pl.read_csv(p, n_rows=1).columns


def _needs_policy(name: str, pick: Callable[[pl.DataFrame, ClaimContext],
                                            Reading]) -> Callable[[ClaimContext], Reading]:
    """A detection table's reader: the table must say which setting each row has."""

    def read(ctx: ClaimContext) -> Reading:
        if (ctx.out / "tables" / f"{name}.csv").exists() and not _has_policy(ctx, name):
            return Reading(None,
                           f"tables/{name}.csv has no policy column: its rows do not say which setting made "
                           f"them")
        return _from(name, pick)(ctx)

    return read


def _absent(needs: str, check: Callable[[ClaimContext], str | None]) -> Callable[[ClaimContext], Reading]:
    """A claim about something the data may lack: ``check`` returns why it cannot be
    checked on this data (``None``: it could be, but no reader computes it here)."""

    def read(ctx: ClaimContext) -> Reading:
        why = check(ctx)
        return Reading(None, why or f"DATA has {needs}, but no study here computes this number")

    return read


def _no_fault(*names: str, what: str) -> Callable[[ClaimContext], str | None]:
    def check(ctx: ClaimContext) -> str | None:
        faults = ctx.faults
        if faults is None:
            return (f"needs runs with {what}; DATA records no injected faults "
                    "(no meta_lab.csv with a fault column)")
        if not faults & set(names):
            return (f"needs runs with {what}; the faults recorded in DATA are "
                    f"{', '.join(sorted(faults)) or 'none'}")
        return None

    return check


def _no_gpu(what: str) -> Callable[[ClaimContext], str | None]:
    def check(ctx: ClaimContext) -> str | None:
        if "gpu" in ctx.platforms:
            return None
        found = ", ".join(sorted(ctx.platforms)) or "unknown (tables/dataset_runs.csv missing)"
        return f"about {what}; DATA's runs are on platform {found}, no GPU run"

    return check


def _no_llm(phase: str) -> Callable[[ClaimContext], str | None]:
    """The claim is about LLM runs of ``phase`` (fine-tuning or inference): DATA's workloads
    name none of the paper's LLMs (DeepSeek, LLaMA, Mistral, Qwen)."""

    def check(ctx: ClaimContext) -> str | None:
        df = ctx.table("dataset_runs")
        names = sorted(set(df["workload"].drop_nulls().to_list())) if df is not None and df.height else []
        if any(re.search("deepseek|llama|mistral|qwen", n, re.IGNORECASE) for n in names):
            return None
        return (f"about LLM {phase} runs (DeepSeek, LLaMA, Mistral); DATA's workloads read by notebook 01 "
                f"are {', '.join(names) or 'unknown (tables/dataset_runs.csv missing)'}")

    return check


def _paper_dataset(count: Callable[[pl.DataFrame], tuple[float | None, str]]) -> Callable[[ClaimContext],
                                                                                          Reading]:
    """A count that describes the paper's own dataset: checkable on that dataset only."""

    def read(ctx: ClaimContext) -> Reading:
        df = ctx.table("dataset_runs")
        value, how = count(df) if df is not None and df.height else (None, "")
        if ctx.is_recording:
            return Reading(None, f"describes the paper's dataset; DATA is a reveal-lab recording "
                                 f"({'synthetic runs' if ctx.data == 'synth' else 'recording.json'})"
                                 + (f" with {how}" if how else ""))
        if df is None:
            return _missing("dataset_runs")
        return Reading(value, how + " (over the runs notebook 01 read)")

    return read


def _applications(platform: str | None) -> Callable[[pl.DataFrame], tuple[float | None, str]]:
    def count(df: pl.DataFrame) -> tuple[float | None, str]:
        if platform is not None:
            df = df.filter(pl.col("platform") == platform)
        n = df["workload"].n_unique() if df.height else 0
        return float(n), f"{n} workloads" + (f" on platform {platform}" if platform else "")

    return count


def _runs_per_workload(df: pl.DataFrame) -> tuple[float | None, str]:
    per = df.group_by("workload").len()["len"]
    return float(per.median()), f"median {per.median():g} runs per workload over {per.len()} workloads"


def _channels(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
    if "n_metrics" not in df.columns:
        return Reading(None, "dataset_runs has no n_metrics")
    return Reading(float(df["n_metrics"].median()), f"median over {df.height} host files read by notebook 01")


def _first_run(ctx: ClaimContext, max_seconds: float):  # noqa: ANN202 - a Run or the Reading saying why not
    """DATA's first run, its first ``max_seconds`` seconds; or a Reading saying why there is none."""
    from reveal_lab.studies._data import load_study_runs

    try:
        runs = load_study_runs(ctx.data, max_runs=1, max_seconds=max_seconds)
    except Exception as exc:  # noqa: BLE001 - the claim says why it could not be read
        return Reading(None, f"could not read a run of DATA: {type(exc).__name__}: {exc}")
    return runs[0] if runs else Reading(None, "DATA has no run")


def _metric_types(ctx: ClaimContext) -> Reading:
    run = _first_run(ctx, 2.0)
    if isinstance(run, Reading):
        return run
    runs = [run]
    cols = [c for c in runs[0].frame.columns if c != "timestamp"]
    fams = {metric_family(c) for c in cols}
    return Reading(float(len(fams)),
                   f"distinct Source:field over the {len(cols)} channels of {runs[0].run_id}")


def _pruning_json(ctx: ClaimContext) -> dict | None:
    """``out/pruning.json``; in an output of platform sections, the claim's platform's
    ``pruning--PLATFORM.json`` (:meth:`ClaimContext.section`), not a space cut or fitted
    otherwise (``pruning--PLATFORM-pairwise-untrimmed.json``, :func:`reveal_lab.scale.space_file`)."""
    p = ctx.out / "pruning.json"
    if not p.exists():
        found = ctx.out.glob(f"pruning{SECTION_SEP}*.json")
        by_platform = {f.stem.split(SECTION_SEP, 1)[1]: f for f in found}
        by_platform = {k: f for k, f in by_platform.items() if "-" not in k}
        section = ctx.section(list(by_platform))
        if section is None:
            return None
        p = by_platform[section]
    return json.loads(p.read_text())


def _selected(share: bool) -> Callable[[ClaimContext], Reading]:
    def read(ctx: ClaimContext) -> Reading:
        d = _pruning_json(ctx)
        if d is None:
            return Reading(None, "pruning.json not in the output (notebook 02 failed or was not run)")
        params = d.get("params", {})
        n_sel, n_all = len(d.get("selected", [])), params.get("n_metrics")
        if not share:
            return Reading(float(n_sel), f"metrics in the union of the workloads' selections at |r| = "
                                         f"{params.get('threshold', '?')} (pruning.json)")
        if not n_all:
            return Reading(None, "pruning.json gives no n_metrics")
        return Reading(n_sel / n_all, f"{n_sel} metrics in the union of the workloads' selections over the "
                                      f"{n_all} metrics of a workload (mean over workloads; pruning.json)")

    return read


def _curve_at(column: str, removed: bool = False) -> Callable[[pl.DataFrame, ClaimContext], Reading]:
    def pick(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
        row = df.filter((pl.col("workload") == "all") & ((pl.col("threshold") - 0.5).abs() < 1e-9))
        if row.height == 0:
            row = df.filter((pl.col("threshold") - 0.5).abs() < 1e-9)
        if row.height == 0:
            return Reading(None, "no row at |r| = 0.5 in fig4_pruning_curve")
        v = _float(row[column][0])
        if v is not None and removed:
            v = 1.0 - v
        return Reading(v, f"mean of the per-workload values at |r| = 0.5 ({row['workload'][0]!r} row)")

    return pick


def _r2_saturated(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
    d = df.filter(pl.col("workload") == "all") if "all" in df["workload"].to_list() else df
    d = d.group_by("threshold").agg(pl.col("avg_multi_r2").mean()).sort("threshold")
    t, r2 = d["threshold"].to_list(), d["avg_multi_r2"].to_list()
    if 0.5 not in t or t[0] >= 0.5 or t[-1] <= 0.5 or any(v is None for v in r2):
        return Reading(None, f"needs thresholds below and above 0.5 with a value (have {t})")
    i = t.index(0.5)
    above, below = r2[-1] - r2[i], r2[i] - r2[0]
    return Reading(r2[i],
                   f"qualitative: 'saturated until below 0.5' read as: the curve falls less from |r| = "
                   f"{t[-1]:g} "
                          f"to 0.5 ({above:.3g}) than from 0.5 to {t[0]:g} ({below:.3g})",
                   holds=above <= below)


def _group_r(group: str) -> Callable[[pl.DataFrame, ClaimContext], Reading]:
    def pick(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
        g = df.filter(pl.col("group") == group)
        if g.height == 0:
            return Reading(None,
                           "no pair of the group's metrics in DATA (tables/pruning_correlation_groups.csv)")
        r = g["abs_r"]
        return Reading(float(r.median()),
                       f"median |r| of {g.height} pairs over {g['workload'].n_unique()} workloads "
                                          f"(min {r.min():.3g}, max {r.max():.3g})")

    return pick


def _pmu_group(ctx: ClaimContext) -> Reading:
    df = ctx.table("pruning_correlation_groups")
    if df is None:
        return _missing("pruning_correlation_groups")
    r = _group_r("microarchitecture")(df, ctx) if df.height else Reading(None, "")
    if r.value is None:
        return Reading(None, "no StallRatio / OccupancyRatio / cycle_activity / cache-misses channel in DATA "
                             "(the hardware PMU counters were not recorded)")
    return r


def _measured(process: str, interval_ms: float, column: str = "pct_of_core") -> Callable[[ClaimContext],
                                                                                         Reading]:
    def read(ctx: ClaimContext) -> Reading:
        df = ctx.table("measured_overhead")
        if df is None:
            return _missing("measured_overhead")
        sel = df.filter((pl.col("process") == process) & (pl.col("interval_ms") == interval_ms))
        if sel.height == 0 or sel[column][0] is None:
            has_note = sel.height and "note" in sel.columns and sel["note"][0]
            why = sel["note"][0] if has_note else "not measured"
            return Reading(None, f"{process} at {interval_ms:g} ms: {why} (notebook 08's intervals_ms)")
        r = sel.row(0, named=True)
        ends = (_float(r.get("pct_lo")), _float(r.get("pct_hi")))
        lo, hi = ends if column == "pct_of_core" else (None, None)
        return Reading(
            float(r[column]),
            f"measured here for {r['seconds']:g} s, {r.get('channels') or '?'} channels, "
            f"{r.get('note') or ''}".strip(", "),
            machine=r.get("machine"),
            data=LIVE,
            lo=lo,
            hi=hi,
        )

    return read


#: the ``data`` of a row measured live by notebook 08
LIVE = "live collector on this machine's /proc (notebook 08)"


def _overhead_ratio(interval_ms: float) -> Callable[[ClaimContext], Reading]:
    """The collector at ``interval_ms`` over perf stat at 100 ms: the mean of the ratios of
    the windows both were measured in (``measured_overhead_repeats``), with its t-interval;
    without that table, the ratio of the means and no interval."""

    def read(ctx: ClaimContext) -> Reading:
        from reveal_lab.studies._measure import mean_interval

        a = _measured("collector", interval_ms)(ctx)
        b = _measured("perf stat", 100.0)(ctx)
        if a.value is None or b.value is None or b.value <= 0:
            return Reading(
                None,
                a.note if a.value is None else b.note,
                machine=a.machine or b.machine,
                data=a.data or b.data,
            )
        how = (
            f"collector at {interval_ms:g} ms ({a.value:.3g} % of a core) over perf stat at 100 ms "
            f"({b.value:.3g} %), measured side by side"
        )
        rep = ctx.table("measured_overhead_repeats")
        if rep is not None and rep.height:
            col = rep.filter((pl.col("process") == "collector") & (pl.col("interval_ms") == interval_ms))
            perf = rep.filter((pl.col("process") == "perf stat") & (pl.col("interval_ms") == 100.0))
            both = col.join(perf, on="repeat", suffix="_perf").filter(pl.col("pct_of_core_perf") > 0)
            if both.height >= 2:
                ratios = (both["pct_of_core"] / both["pct_of_core_perf"]).to_list()
                m, lo, hi, _ = mean_interval(ratios)
                return Reading(
                    m, how + f"; the mean of {len(ratios)} windows' ratios", None, a.machine, a.data, lo, hi
                )
        return Reading(a.value / b.value, how, None, a.machine, a.data)

    return read


def _collector_rows(ctx: ClaimContext) -> pl.DataFrame | None:
    df = ctx.table("measured_overhead")
    if df is None:
        return None
    measured = (pl.col("process") == "collector") & pl.col("pct_of_core").is_not_null()
    return df.filter(measured).sort("interval_ms")


def _overhead_max(ctx: ClaimContext) -> Reading:
    df = _collector_rows(ctx)
    if df is None:
        return _missing("measured_overhead")
    if df.height == 0:
        return Reading(None, "no collector interval measured")
    r = df.sort("pct_of_core").row(-1, named=True)
    return Reading(
        float(r["pct_of_core"]),
        f"the largest over {df['interval_ms'].cast(int).to_list()} ms (at {r['interval_ms']:g} ms)",
        None,
        r["machine"],
        LIVE,
        _float(r.get("pct_lo")),
        _float(r.get("pct_hi")),
    )


def _overhead_decreasing(ctx: ClaimContext) -> Reading:
    df = _collector_rows(ctx)
    if df is None:
        return _missing("measured_overhead")
    if df.height < 2:
        return Reading(None, "fewer than two collector intervals measured")
    v = df["pct_of_core"].to_list()
    lo = df["pct_lo"].to_list() if "pct_lo" in df.columns else v
    hi = df["pct_hi"].to_list() if "pct_hi" in df.columns else v
    pairs = ", ".join(
        f"{i:g} ms: {p:.3g} % ({a:.3g} to {b:.3g})"
        for i, p, a, b in zip(df["interval_ms"], v, lo, hi, strict=True)
    )
    steps = list(zip(lo, hi, lo[1:], hi[1:], strict=False))
    falls = all(h1 < l0 for l0, _, _, h1 in steps)  # each longer interval's whole interval below
    rises = any(l1 > h0 for _, h0, l1, _ in steps)  # a longer interval's whole interval above
    return Reading(
        v[-1],
        "qualitative: less CPU at each longer interval, the intervals apart "
        f"(each interval's 95 % interval below the shorter one's; {pairs})",
        True if falls else False if rises else None,
        df["machine"][0],
        LIVE,
    )


#: bytes one sample of one channel takes raw: one 64-bit value, as the collector holds it
RAW_VALUE_BYTES = 8


def _raw_rate(ctx: ClaimContext, interval_ms: float = 100.0) -> tuple[float | None, str, Reading]:
    r = _measured("collector", interval_ms, "channels")(ctx)
    if r.value is None:
        return None, r.note, r
    rate = r.value * RAW_VALUE_BYTES * 1000.0 / interval_ms
    how = (
        f"raw: {r.value:.0f} channels × {1000 / interval_ms:g} samples/s × {RAW_VALUE_BYTES} B, "
        f"uncompressed "
        f"(the paper's raw format is not stated)"
    )
    return rate, how, r


def _raw_bytes(per_day: bool, selected: bool = False) -> Callable[[ClaimContext], Reading]:
    def read(ctx: ClaimContext) -> Reading:
        rate, how, r = _raw_rate(ctx)
        if rate is None:
            return Reading(None, how, machine=r.machine, data=r.data)
        if selected:
            sel = _selected(False)(ctx)
            if sel.value is None:
                return Reading(None, sel.note, machine=r.machine, data=r.data)
            rate = rate * sel.value / r.value  # type: ignore[operator]
            how += (
                f"; kept: {sel.value:.0f} metrics after pruning (pruning.json) at the same per-channel rate"
            )
            where = f"{r.data}; the metrics kept from pruning {ctx.data or 'data/lab'} (notebook 02)"
            return Reading(rate * 86400 / 1e9 if per_day else rate / 1000.0, how, None, r.machine, where)
        return Reading(rate * 86400 / 1e9 if per_day else rate / 1000.0, how, None, r.machine, r.data)

    return read


def _raw_compression(ctx: ClaimContext) -> Reading:
    """gzip (level 6) on the same bytes uncompressed: one run of DATA's samples as 64-bit
    floats, sample after sample (the raw stream a collector holds), compressed over raw;
    noise would not shrink, telemetry's flat and slow counters do."""
    import numpy as np

    run = _first_run(ctx, 60.0)
    if isinstance(run, Reading):
        return run
    return compression_reading(run.frame.drop("timestamp").to_numpy().astype(np.float64), run.run_id)


def compression_reading(values: object, what: str) -> Reading:
    """gzip of ``values``' bytes (C order) over those bytes; holds when smaller by at least
    :data:`MIN_COMPRESSION` (a reduction worth the name, not gzip's framing noise)."""
    import gzip

    import numpy as np

    raw = np.ascontiguousarray(values).tobytes()
    packed = len(gzip.compress(raw, compresslevel=6))
    ratio = packed / len(raw)
    return Reading(
        ratio,
        f"qualitative: 'further reductions by lightweight compression' read as: gzip shrinks the raw "
        f"samples of a run to at most {MIN_COMPRESSION:.0%} of their bytes ({len(raw) / 1e6:.3g} MB of "
        f"64-bit values -> {packed / 1e6:.3g} MB, {what}; the same bytes before and after)",
        ratio <= MIN_COMPRESSION,
    )


#: the largest compressed-over-raw ratio read as a "reduction" (a tenth off at least)
MIN_COMPRESSION = 0.9


def _longer_interval_smaller(ctx: ClaimContext) -> Reading:
    a = _measured("collector", 100.0, "bytes_per_s")(ctx)
    b = _measured("collector", 200.0, "bytes_per_s")(ctx)
    if a.value is None or b.value is None:
        return Reading(None, a.note if a.value is None else b.note, machine=a.machine, data=a.data)
    return Reading(
        b.value / a.value,
        f"qualitative: bytes on disk per second at 200 ms ({b.value / 1000:.3g} KB/s) "
        f"below 100 ms ({a.value / 1000:.3g} KB/s)",
        b.value < a.value,
        a.machine,
        a.data,
    )


def _ours_compressed(ctx: ClaimContext) -> Reading:
    r = _measured("collector", 100.0, "bytes_per_s")(ctx)
    if r.value is None:
        return r
    return Reading(r.value / 1000.0, "ours on disk: zstd Parquet segments + journal", None, r.machine, r.data)


def _runtime(step: str, column: str = "seconds") -> Callable[[ClaimContext], Reading]:
    def read(ctx: ClaimContext) -> Reading:
        df = ctx.table("measured_runtimes")
        if df is None:
            return _missing("measured_runtimes")
        sel = df.filter(pl.col("step") == step)
        if column not in df.columns:
            return Reading(
                None,
                f"measured_runtimes has no {column!r} column (one time per step, no spread)",
                machine=sel["machine"][0] if sel.height else None,
            )
        if sel.height == 0 or sel[column][0] is None:
            why = sel["note"][0] if sel.height and "note" in sel.columns else "not measured"
            return Reading(None, f"{step}: {why}")
        r = sel.row(0, named=True)
        lo, hi = {"seconds": ("lo", "hi"), "std": ("std_lo", "std_hi")}.get(column, ("", ""))
        return Reading(
            float(r[column]),
            str(r.get("note") or ""),
            None,
            r.get("machine"),
            "one run of DATA timed on this machine (notebook 08)",
            _float(r.get(lo)),
            _float(r.get(hi)),
        )

    return read


def _dtw_share(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
    for col in ("share_significant_two_sided_pct", "share_significant_pct"):
        if col in df.columns:
            v = _float(df[col][0])
            tested = df["tested"][0] if "tested" in df.columns else None
            extra = [f"{tested} workload–metric pairs tested"] if tested is not None else []
            if v is None:
                extra.append("no pair had enough runs for the test")
            return Reading(v, "; ".join(extra))
    return Reading(None, "dtw_summary has no share column")


#: Table 2's pairs: the paper's label -> ours (tables/table2_window_granularity.csv)
_PAIRS = {
    "fine": "3s/1s vs 1.5s/0.5s",
    "coarse": "3s/1s vs 5s/2s",
    "fine_coarse": "1.5s/0.5s vs 5s/2s",
}


def _granularity(pair: str, measure: str, stat: str) -> Callable[[pl.DataFrame, ClaimContext], Reading]:
    def pick(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
        sel = df.filter((pl.col("pair") == _PAIRS[pair]) & (pl.col("measure") == measure))
        if sel.height == 0 or stat not in sel.columns:
            return Reading(None, f"no {stat} of {_PAIRS[pair]!r} / {measure} in table2_window_granularity")
        n = sel["n"][0] if "n" in sel.columns else None
        if n == 0:
            return Reading(None, "no run-host timeline with anomalous intervals to compare (n = 0)")
        return Reading(_float(sel[stat][0]), f"over {n} run-host timelines" if n is not None else "")

    return pick


def _extremes_weakest(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
    iou = {
        p: _float(df.filter((pl.col("pair") == lab) & (pl.col("measure") == "iou"))["median"].first())
        for p, lab in _PAIRS.items()
    }
    if any(v is None for v in iou.values()):
        return Reading(None, f"an IoU median is missing ({iou})")
    fc = iou["fine_coarse"]
    return Reading(
        fc,
        f"qualitative: the fine–coarse IoU median is the lowest of the three "
        f"({', '.join(f'{k} {v:.3g}' for k, v in iou.items())})",
        fc < min(iou["fine"], iou["coarse"]),
    )  # type: ignore[type-var]


def _evidence_share(*subsystems: str) -> Callable[[pl.DataFrame, ClaimContext], Reading]:
    def pick(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
        v = float(df.filter(pl.col("subsystem").is_in(list(subsystems)))["share"].sum())
        return Reading(v, f"share of {int(df['pairs'].sum())} metric–feature pairs in anomalous windows")

    return pick


def _scoped(
    check: Callable[[ClaimContext], str | None], reader: Callable[[ClaimContext], Reading]
) -> Callable[[ClaimContext], Reading]:
    """``reader``'s value, shown; but the claim cannot be checked when ``check`` says the
    data is not what the claim is about."""

    def read(ctx: ClaimContext) -> Reading:
        r = reader(ctx)
        why = check(ctx)
        if why is None:
            return r
        return Reading(
            None,
            why + (f"; on DATA: {_fmt(r.value)} ({r.note})" if r.value is not None else ""),
            machine=r.machine,
            data=r.data,
        )

    return read


def _memory_io_concentrate(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
    share = {
        s: float(df.filter(pl.col("subsystem") == s)["share"].sum())
        for s in ("memory", "storage", "cpu", "network")
    }
    mio, cn = share["memory"] + share["storage"], share["cpu"] + share["network"]
    return Reading(
        mio,
        f"qualitative: 'concentrate' read as: memory + storage ({mio:.3g}) hold more of the "
        f"evidence than CPU + network ({cn:.3g})",
        mio > cn,
    )


def _all_subsystems(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
    """Qualitative: CPU, memory, network and storage each in the evidence of anomalous
    windows of the fault-free runs (a fault injected into a subsystem would put it there by
    construction)."""
    free = df.filter((pl.col("fault") == "none") & (pl.col("family") != "(any)"))
    n_free = df.filter((pl.col("fault") == "none") & (pl.col("family") == "(any)")).height
    if n_free == 0:
        return Reading(None, "no fault-free run among the runs notebook 03 detected")
    seen = set(free["subsystem"].drop_nulls().to_list())
    need = {"cpu", "memory", "network", "storage"}
    return Reading(
        float(len(seen & need)),
        f"qualitative: each of CPU, memory, network and storage in the evidence of the {n_free} "
        f"fault-free run-hosts' anomalous windows (injected faults left out; seen: "
        f"{', '.join(sorted(seen)) or 'none'})",
        need <= seen,
    )


def _family_seconds(
    pattern: str, what: str, *, longest: bool = False, workload: str | None = None, stat: str = "median"
) -> Callable[[pl.DataFrame, ClaimContext], Reading]:
    def pick(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
        runs = df.filter(pl.col("family") == "(any)")
        if workload:
            runs = runs.filter(pl.col("workload").str.contains(workload))
        if runs.height == 0:
            return Reading(
                None, f"no run{' of ' + workload if workload else ''} among those notebook 03 detected"
            )
        fam = df.filter(pl.col("family").str.contains(pattern))
        per = (
            runs.select("run_id", "host", "scored_s")
            .join(
                fam.group_by("run_id", "host").agg(pl.col("seconds").sum(), pl.col("longest_s").max()),
                on=["run_id", "host"],
                how="left",
            )
            .fill_null(0.0)
        )
        col = "longest_s" if longest else "seconds"
        v = float(per[col].max() if stat == "max" else per[col].median())
        return Reading(
            v,
            f"{stat} over {per.height} run-hosts of the seconds {what} "
            f"{'in one stretch ' if longest else ''}is in the evidence of anomalous windows "
            f"(runs scored {per['scored_s'].median():.0f} s median)",
        )

    return pick


def tuned_on(ctx: ClaimContext) -> bool:
    """DATA is the recording reveal-lab's default detection rules were chosen on (the
    bundled ``data/lab``: its sentinel counters and shares), so a default-setting result on it
    is not an independent check of them."""
    from reveal_lab.config import PROJECT_ROOT

    root, lab = ctx.root, PROJECT_ROOT / "data" / "lab"
    if root is None or not (root / "recording.json").exists() or not (lab / "recording.json").exists():
        return False
    return (
        root.resolve() == lab.resolve()
        or (root / "recording.json").read_bytes() == (lab / "recording.json").read_bytes()
    )


def _loss_network(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
    runs = df.filter((pl.col("family") == "(any)") & pl.col("fault").str.contains("packet_loss"))
    if runs.height == 0:
        return Reading(None, "no packet-loss run among the runs notebook 03 detected")
    net = df.filter((pl.col("subsystem") == "network") & pl.col("fault").str.contains("packet_loss"))
    hit = net.select("run_id", "host").unique().height
    how = (
        f"qualitative: 'consistently' read as: network counters in the anomalous windows' evidence of every "
        f"packet-loss run-host ({hit} of {runs.height})"
    )
    if ctx.policy == "default" and tuned_on(ctx):
        return Reading(
            hit / runs.height,
            how + "; not decided here: the default's sentinel rule, which puts "
            "network counters in this evidence, was chosen on this same recording (data/lab), so "
            "it needs another recording with packet loss to be checked",
        )
    return Reading(hit / runs.height, how, hit == runs.height)


#: metric families of protocol-level (connection) counters: §6's "connection churn"
CHURN_FAMILIES = (
    r"NetworkProtocolCounts:|Nstat:Tcp(ActiveOpens|PassiveOpens|AttemptFails|EstabResets|CurrEstab|"
    r"OutRsts)$|Nstat:TcpExtTW$|Nstat:TcpExtTCPAbortOn"
)


def _loss_churn(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
    """Qualitative: at 0.2 % loss a larger share of run-hosts has protocol-level counters
    (:data:`CHURN_FAMILIES`) in its anomalous windows' evidence than at 0.1 %."""

    def share(rate: str) -> tuple[int, int]:
        mine = df.filter(pl.col("fault").str.contains(f"packet_loss@{rate}(\\+|$)"))
        n = mine.filter(pl.col("family") == "(any)").height
        hit = (
            mine.filter(pl.col("family").str.contains(CHURN_FAMILIES))
            .select("run_id", "host")
            .unique()
            .height
        )
        return hit, n

    (h2, n2), (h1, n1) = share("0.002"), share("0.001")
    if n2 == 0 or n1 == 0:
        return Reading(
            None,
            f"needs runs at 0.1 % and 0.2 % loss among those notebook 03 detected ({n1}, {n2} run-hosts)",
        )
    return Reading(
        h2 / n2,
        f"qualitative: 'anomalies expanded to protocol-level fluctuations' read as: more of the "
        f"0.2 % loss run-hosts ({h2} of {n2}) than of the 0.1 % ones ({h1} of {n1}) have "
        "connection counters (TCP sockets, opens, resets, TIME-WAIT) in their anomalous windows' "
        "evidence",
        h2 / n2 > h1 / n1,
    )


def _fisher(r: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Fisher-z interval of a Pearson correlation ``r`` over ``n`` pairs.

    >>> [round(v, 2) for v in _fisher(0.3, 100)]
    [0.11, 0.47]
    """
    from scipy import stats

    z, half = (
        math.atanh(max(min(r, 0.999999), -0.999999)),
        float(stats.norm.ppf(0.5 + level / 2)) / math.sqrt(n - 3),
    )
    return math.tanh(z - half), math.tanh(z + half)


def _loss_corr(loss: float, corr: str, what: str) -> Callable[[pl.DataFrame, ClaimContext], Reading]:
    """Qualitative, on notebook 06's ``case_packet_loss`` summary: the Pearson correlation
    ``corr`` of the retransmissions per 1-s bin with another signal, over the bins of the loss
    episodes at rate ``loss``, has its 95 % Fisher interval above 0 and above the fault-free
    runs' correlation (holds), wholly below that (does not), or neither (not decided)."""

    def pick(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
        need = {"condition", "loss", "bins", corr}
        if not need <= set(df.columns):
            return Reading(None, f"case_packet_loss lacks {sorted(need - set(df.columns))}")
        ep = df.filter((pl.col("condition") == "loss_episode") & ((pl.col("loss") - loss).abs() < 1e-12))
        base = df.filter(pl.col("condition") == "baseline")
        r, n = (_float(ep[corr][0]), int(ep["bins"][0])) if ep.height else (None, 0)
        r0 = _float(base[corr][0]) if base.height else None
        if r is None or r0 is None or n < 10:
            return Reading(
                None,
                f"case_packet_loss has no {corr} for {loss:.1%} loss episodes and fault-free runs "
                f"(needs 10 bins; {n})",
            )
        lo, hi = _fisher(r, n)
        holds = True if lo > max(r0, 0.0) else False if hi < max(r0, 0.0) else None
        return Reading(
            r,
            f"qualitative: '{what}' read as: the retransmissions per 1-s bin correlate with it over the "
            f"{n} bins of the {loss:.1%} loss episodes (r = {r:.3g}, 95 % interval {lo:.3g} to "
            f"{hi:.3g}) above 0 and above the fault-free runs' r = {r0:.3g}",
            holds,
        )

    return pick


def _loss_case(column: str, what: str) -> Callable[[pl.DataFrame, ClaimContext], Reading]:
    def pick(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
        if not {"condition", column} <= set(df.columns):
            return Reading(None, f"case_packet_loss has no condition/{column} columns ({df.columns[:3]})")
        base = df.filter(pl.col("condition") == "baseline")[column].drop_nulls()
        loss = df.filter(pl.col("condition").str.starts_with("loss_episode"))[column].drop_nulls()
        if base.len() == 0 or loss.len() == 0 or not base.mean():
            return Reading(None, "case_packet_loss lacks a baseline or a loss condition")
        ratio = float(loss.max()) / float(base.mean())  # type: ignore[arg-type]
        return Reading(
            ratio,
            f"qualitative: 'not by orders of magnitude' read as: the largest {what} under loss "
            f"within 10× the baseline's",
            ratio < 10.0,
        )

    return pick


def _remediation(
    case: str, pattern: str, side: str, what: str
) -> Callable[[pl.DataFrame, ClaimContext], Reading]:
    """The largest share of side ``side`` (``a_mean``/``b_mean``) over the metric rows of
    notebook 11's ``case`` whose name matches ``pattern``, in %; 0 when the case has rows
    but none of its anomalous windows names such a metric."""

    def pick(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
        need = {"case", "level", "name", side}
        if not need <= set(df.columns):
            return Reading(None, f"remediation_details lacks {sorted(need - set(df.columns))}")
        rows = df.filter(pl.col("case").str.ends_with(case))
        if rows.height == 0:
            return Reading(None, f"no case {case!r} in remediation_details (notebook 11's cases)")
        sel = rows.filter((pl.col("level") == "metric") & pl.col("name").str.contains(pattern))
        label = {"a_mean": "side A (ddp:before, no fault)", "b_mean": f"side B ({case})"}[side]
        if sel.height == 0:
            return Reading(0.0, f"{label}: no anomalous window names {what}")
        top = sel.sort(side).row(-1, named=True)
        return Reading(
            100.0 * float(top[side]),
            f"{label}: share of windows naming {top['name']} (the largest over {sel.height} {what} metrics)",
        )

    return pick


#: the equivalence margin of a "no change" in run time or throughput (relative): the smallest
#: change §6 reports as an improvement (NCCL QPs, "a relative reduction of 3.1%"); a change
#: shown to be smaller than it is "no change" in the paper's own terms
NO_CHANGE_MARGIN = 0.031


def _no_gain(case: str, what: str, margin: float = NO_CHANGE_MARGIN) -> Callable[[ClaimContext], Reading]:
    """Qualitative, an equivalence test: the relative change of notebook 11's ``case``'s
    throughput has a bootstrap interval inside ``±margin`` (holds), wholly outside it
    (does not), or across its edge (not decided by these runs). The throughput does not
    depend on the detection setting: every setting's rows are read."""

    def read(ctx: ClaimContext) -> Reading:
        df = ctx.table("remediation_cases", every_setting=True)
        if df is None:
            return _missing("remediation_cases")
        if not {"case", "level", "rel_change", "rel_lo", "rel_hi"} <= set(df.columns):
            return Reading(None, "remediation_cases has no rel_change / rel_lo / rel_hi columns")
        sel = df.filter(pl.col("case").str.ends_with(case) & (pl.col("level") == "throughput"))
        if sel.height == 0:
            return Reading(None, f"no throughput row for case {case!r} in remediation_cases")
        r = sel.row(0, named=True)
        lo, hi = _float(r["rel_lo"]), _float(r["rel_hi"])
        if lo is None or hi is None:
            return Reading(
                None, f"case {case!r}: no interval for the throughput's change (one run on a side)"
            )
        inside, outside = -margin < lo and hi < margin, hi <= -margin or lo >= margin
        verdict = "inside" if inside else "wholly outside" if outside else "across the edge of"
        return Reading(
            _float(r["rel_change"]),
            f"qualitative, an equivalence test: '{what}' read as: the bootstrap interval of the "
            f"throughput's relative change ({lo:+.2%} to {hi:+.2%}, {r.get('n_a')} against "
            f"{r.get('n_b')} runs) within ±{margin:.1%}, the smallest change §6 calls an improvement "
            f"(NCCL QPs, 3.1 %): {verdict} it (case {case}, notebook 11)",
            True if inside else False if outside else None,
        )

    return read


#: the notebook whose parameters say which detection settings the studies ran with
DETECTION_NOTEBOOK = "03-detection"


def _notebook_parameters(out: Path, stem: str) -> dict | None:
    """The parameters the executed notebook ``out/notebooks/<stem>.ipynb`` ran with
    (papermill's record), ``None`` when it is not in the output."""
    nb = out / "notebooks" / f"{stem}.ipynb"
    try:
        return dict(json.loads(nb.read_text())["metadata"]["papermill"]["parameters"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _preset_value(ctx: ClaimContext, part: str, name: str) -> Reading:
    """A setting of the method as notebook 03 ran it: its own parameter (``window_s``,
    ``stride_s``) where it has one, else the field of the preset it ran with; without
    notebook 03 in the output, the code's ``paper`` preset, said so."""
    from reveal_lab.config import get_preset

    params = _notebook_parameters(ctx.out, DETECTION_NOTEBOOK)
    preset = str((params or {}).get("preset") or "paper")
    if params is not None and name in params:
        return Reading(_float(params[name]), f"notebook 03's parameter {name} (preset {preset!r})", None,
                       "none (a setting of the run)", f"notebook 03's parameters ({ctx.out.name}/notebooks)")
    v = getattr(getattr(get_preset(preset), part), name, None)
    if params is None:
        return Reading(_float(v), f"notebook 03 is not in the output: reveal_lab.config preset 'paper', "
                                  f"{part}.{name}", None, "none (a setting of the code)", "reveal_lab.config")
    return Reading(_float(v), f"preset {preset!r} that notebook 03 ran with, {part}.{name}", None,
                   "none (a setting of the run)", f"notebook 03's parameters ({ctx.out.name}/notebooks)")


def _policy_value(ctx: ClaimContext, name: str, fn: Callable[[float], float] = float) -> Reading:
    """A decision of the paper's method as the studies run it: the field ``name`` of the
    ``paper`` detection policy (:data:`reveal_lab.pipeline.POLICIES`), through ``fn`` (e.g. the
    share flagged from the quantile)."""
    from reveal_lab.pipeline import POLICIES

    v = getattr(POLICIES["paper"], name)
    return Reading(fn(v), f"the paper policy's {name} = {v!r} (reveal_lab.pipeline.POLICIES)", None,
                   "none (a setting of the code)", "reveal_lab.pipeline")


def _flag_share(method: str) -> Callable[[pl.DataFrame, ClaimContext], Reading]:
    def pick(df: pl.DataFrame, ctx: ClaimContext) -> Reading:
        sel = df.filter(pl.col("method") == method)
        if sel.height == 0:
            return Reading(None, f"no {method} rows in fig2_detector_windows")
        n, s = int(sel["n_windows"].sum()), int(sel["n_scored"].sum())
        return Reading(n / s if s else None, f"{n} of {s} windows flagged (all hosts)")

    return pick


def _has_family(ctx: ClaimContext, pattern: str) -> bool:
    df = ctx.table("anomalous_time")
    return df is not None and df.height > 0 and df["family"].str.contains(f"(?i){pattern}").any()


def _loss_rates(ctx: ClaimContext) -> Reading:
    faults = ctx.faults
    if faults is None or "packet_loss" not in faults:
        return Reading(None, "DATA records no packet-loss run")
    meta = pl.read_csv(ctx.root / "meta_lab.csv", infer_schema_length=10_000)  # type: ignore[operator]
    rates = sorted(
        {
            float(p.split("@", 1)[1]) * 100
            for v in meta["fault"].drop_nulls().to_list()
            for p in str(v).split("+")
            if p.startswith("packet_loss@")
        }
    )
    return Reading(
        max(rates) if rates else None,
        f"loss rates in DATA: {'/'.join(f'{r:g}' for r in rates)} % (the largest shown)",
    )


#: notebook 03's table of detection against ``labels.csv`` (:func:`~reveal_lab.studies.label_detection`)
LABEL_TABLE = "detection_vs_labels"


def _f1(row: Mapping[str, Any]) -> float | None:
    r, p = row.get("recall"), row.get("precision")
    if r is None or p is None:
        return None
    return 0.0 if r + p == 0 else 2 * r * p / (r + p)


def _rp(row: Mapping[str, Any]) -> str:
    def pct(v: Any) -> str:  # noqa: ANN401 - a table cell
        return "n/a" if v is None else f"{100 * v:.0f} %"

    return (f"recall {pct(row['recall'])} ({row['detected']} of {row['episodes']} episodes), precision "
            f"{pct(row['precision'])} ({row['in_episode']} of {row['anomalous']} anomalous windows)")


def _label_rows(df: pl.DataFrame, space: str) -> pl.DataFrame:
    return df.filter(pl.col("space") == space) if "space" in df.columns else df.clear()


def _kinds_found(df: pl.DataFrame, ctx: ClaimContext) -> Reading:  # noqa: ARG001 - a reader's signature
    """The share of the labelled fault kinds of which at least one episode is detected (in the
    setting's pruned space), with each kind's recall and precision in the note."""
    rows = _label_rows(df, "pruned").filter(pl.col("fault_type") != "(all)")
    if rows.height == 0:
        return Reading(None, f"tables/{LABEL_TABLE}.csv has no labelled fault kind")
    found = rows.filter(pl.col("detected") > 0)
    per = "; ".join(f"{r['fault_type']}: {_rp(r)}" for r in rows.iter_rows(named=True))
    return Reading(found.height / rows.height,
                   f"{found.height} of {rows.height} labelled fault kinds found ({per})")


def _pruning_gain(df: pl.DataFrame, ctx: ClaimContext) -> Reading:  # noqa: ARG001 - a reader's signature
    """F1 against ``labels.csv`` in the pruned space less F1 in every metric (all runs, the
    ``(all)`` rows); holds when pruning raises it."""
    got = {}
    for space in ("pruned", "every metric"):
        rows = _label_rows(df, space).filter(pl.col("fault_type") == "(all)")
        if rows.height == 0:
            return Reading(None, f"tables/{LABEL_TABLE}.csv has no '{space}' rows (notebook 03 run with "
                                 "unpruned=False)")
        got[space] = rows.row(0, named=True)
    f_p, f_e = _f1(got["pruned"]), _f1(got["every metric"])
    if f_p is None or f_e is None:
        return Reading(None, f"no F1: pruned {_rp(got['pruned'])}; every metric {_rp(got['every metric'])}")
    return Reading(f_p - f_e, f"F1 {f_p:.2f} pruned against {f_e:.2f} in every metric (pruned: "
                              f"{_rp(got['pruned'])}; every metric: {_rp(got['every metric'])})",
                   holds=f_p > f_e)
