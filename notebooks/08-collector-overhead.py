# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (reveal-lab)
#     language: python
#     name: reveal-lab
# ---

# %% [markdown]
# # 08 · Collector overhead (Fig. 5) and run times (§5.3)
#
# Measured here, now, once the machine is quiet (its 1-minute load average per core at most
# `quiet_load`, waiting up to `quiet_timeout_s`): the collector (every procfs probe) at each
# interval beside a bare `perf stat -I` at 100 ms, measured once every process is past its
# start-up (loading and compiling the hot loop), over `repeats` windows of `measure_s`
# seconds, each value with its 95 % interval (the paper's comparison); and the pipeline's run
# times per window on one run of the data (features with our kernels and with tsfresh,
# Parquet, each detector, end to end), each step repeated `runtime_repeats` times. Every row
# names the machine (CPU model, cores, load average before → after) and the quiet gate's
# outcome. The notebook fails when a figure is impossible (`studies.check_overhead`: e.g. the
# collector costing about the same at 100 and 600 ms).
#
# Beside them, labelled as such: the stored benchmark `benchmarks/results/collector_overhead.json`
# (`benchmarks/collector_overhead.py`, a longer sweep on the machine that ran it).

# %% tags=["parameters"]
data = ""  # dataset folder for the run-time measurement; empty: the bundled data/lab
out_dir = "../out/lab"
smoke = False
results = ""  # the stored benchmark's JSON; empty: benchmarks/results/collector_overhead.json
measure_s = 6.0  # seconds of each repeated window of the live collector-overhead measurement; 0: skip it
repeats = 5  # windows measured one after the other (the interval's sample)
quiet_load = 0.5  # the quiet gate: 1-minute load average per core at most this before measuring
quiet_timeout_s = 120.0  # longest wait for the quiet gate (then measured anyway, marked not quiet)
intervals_ms = "100,200,300,600"  # collector sampling intervals measured side by side (Fig. 5: 100-600 ms)
probes = "procfs,perf"  # the collector's probes while measured (perf: counters, as the paper's collector)
runtime_windows = 120  # windows of one run for the run-time measurement; 0: skip it
runtime_preset = "paper"  # detector settings timed end to end (reveal_lab.config presets)
tsfresh_windows = 5  # windows tsfresh extracts, each timed on its own over every channel
runtime_repeats = 5  # times each run-time step runs

# %%
import json
from pathlib import Path

import polars as pl

from reveal_lab import plots, studies

if measure_s > 0:
    # start-up (imports, compiling the hot loop) is slow on a loaded machine: allow 2 minutes
    live = studies.measure_collector_overhead([int(i) for i in studies.parse_list(intervals_ms)],
                                              seconds=measure_s, repeats=repeats, probes=probes,
                                              perf_interval_ms=100, start_timeout_s=120.0,
                                              quiet_load=quiet_load, quiet_timeout_s=quiet_timeout_s)
    measured, measured_repeats = studies.check_overhead(live.table), live.repeats
else:
    measured = pl.DataFrame(schema={c: pl.String for c in studies.OVERHEAD_COLUMNS})
    measured_repeats = pl.DataFrame(schema={c: pl.String for c in studies.OVERHEAD_REPEAT_COLUMNS})
studies.save_table(measured, out_dir, "measured_overhead")
studies.save_table(measured_repeats, out_dir, "measured_overhead_repeats")
measured

# %%
if runtime_windows > 0:
    runs = studies.load_study_runs(data, max_runs=1, max_seconds=runtime_windows + 5.0)
    runtimes = studies.measure_runtimes(runs[0], max_windows=runtime_windows, preset=runtime_preset,
                                        tsfresh_windows=tsfresh_windows, repeat=runtime_repeats,
                                        quiet_load=quiet_load, quiet_timeout_s=quiet_timeout_s)
else:
    runtimes = pl.DataFrame(schema={c: pl.String for c in studies.RUNTIME_COLUMNS})
studies.save_table(runtimes, out_dir, "measured_runtimes")
runtimes

# %% [markdown]
# The stored benchmark (not measured by this run) and Fig. 5: the collector per interval
# against `perf stat` at 100 ms, measured here and stored, in distinct colours.

# %%
path = Path(results) if results else studies.OVERHEAD_RESULTS
if path.exists():
    cpu = studies.collector_overhead_table(path)
    size = studies.collector_bytes_table(path)
    host = json.loads(path.read_text()).get("host", {})
    label = f"stored benchmark, {host.get('cpu_model', '?')} {host.get('cpus', '?')} cores"
    cpu = cpu.with_columns(pl.lit(label).alias("source"))
else:
    note = f"{path} not found: run python benchmarks/collector_overhead.py on the machine to measure"
    cpu = size = pl.DataFrame({"note": [note]})
    label = ""
studies.save_table(cpu, out_dir, "fig5_collector_cpu")
studies.save_table(size, out_dir, "collector_bytes")
comp = studies.overhead_comparison(measured, cpu if "process" in cpu.columns else None, stored_label=label)
fig = plots.plot_overhead_comparison(comp)
plots.save_figure(fig, out_dir, "fig5_collector_overhead")
fig
