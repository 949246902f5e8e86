# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python (reveal-lab)
#     language: python
#     name: reveal-lab
# ---

# %% [markdown]
# # 08 · Collector overhead (Fig. 5)
#
# CPU of the collector (only its own loop, every procfs probe, every probe) beside a bare
# `perf stat -I` on the same events, per sampling interval, and bytes written per second.
# The numbers come from `benchmarks/collector_overhead.py` (run on the machine being
# measured; results in `benchmarks/results/collector_overhead.json`).

# %% tags=["parameters"]
data = ""  # unused here: the results file is the input
out_dir = "../out/lab"
smoke = False
results = ""  # the benchmark's JSON; empty: benchmarks/results/collector_overhead.json

# %%
from pathlib import Path

import polars as pl

from reveal_lab import plots, studies

path = Path(results) if results else studies.OVERHEAD_RESULTS
if path.exists():
    cpu = studies.collector_overhead_table(path)
    size = studies.collector_bytes_table(path)
    fig = plots.plot_collector_overhead(cpu)
else:
    note = f"{path} not found: run python benchmarks/collector_overhead.py on the machine to measure"
    cpu = size = pl.DataFrame({"note": [note]})
    fig = plots.plot_message(note)
studies.save_table(cpu, out_dir, "fig5_collector_cpu")
studies.save_table(size, out_dir, "collector_bytes")
plots.save_figure(fig, out_dir, "fig5_collector_overhead")
cpu
