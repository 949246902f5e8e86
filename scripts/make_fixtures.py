#!/usr/bin/env python
"""Write ``data/fixtures/reveal_sample/``: a tiny, faithful sample of the public Reveal
dataset's layout with seeded synthetic values.

    .venv/bin/python scripts/make_fixtures.py [--out DIR] [--seed N]

What it writes (the layout of the Hugging Face dataset
``subsetchen/RevealTelemetryDatasetforMLInfraProfilingAnomalyDetection``):

* ``Reveal_GPU.zip`` and ``Reveal_CPU.zip``, each holding ``train_separated/`` and
  ``infer_separated/`` with one tab-separated ``.txt`` file per run and host, named
  ``{prefix}_{MODEL}for{Task}_{dataset}_{YYYY-MM-DDTHH-MM-SS}_{hostname}.txt``; the
  first header is empty (the timestamp column), 100 ms steps, 30-40 s per run; a stray
  ``.DS_Store`` in the GPU zip.
* a GPU-host column set (Perf, Turbostat per core and ``-``, ``GPU: `` for 2 GPUs,
  Memory, Storage, NetworkInterStat_diff on ib0/ens1f0, NetworkProtocolCounts,
  NetworkTCPRetrans_diff) and a CPU-host column set (``Storage_diff``, ``Meminfo_diff``,
  AMD-only Perf fields); all-NaN and all-zero columns; one CPU file holding two hosts.
* ``meta_cpu.csv`` matching its files and ``meta_gpu.csv`` deliberately NOT matching
  (a missing file, unlisted files and a wrong ``n_rows``), as in the real dataset.

The output is byte-for-byte reproducible for a given seed (fixed zip timestamps and
member order). Never edit the fixtures by hand: change this script and re-run it.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SEED = 20251026
INTERVAL_S = 0.1
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "data" / "fixtures" / "reveal_sample"


@dataclass(frozen=True)
class Col:
    """One column template: ``{host}`` is filled per host."""

    name: str  # with {host}
    gen: str  # generator kind, see _values
    scale: float = 1.0


def gpu_columns() -> list[Col]:
    cols = [
        Col("Perf:Branches.{host}[count]", "count", 4e8),
        Col("Perf:Branch_Misses.{host}[count]", "count", 3e6),
        Col("Perf:Cache_Misses.{host}[count]", "count", 2e7),
        Col("Perf:Cache_References.{host}[count]", "count", 9e7),
        Col("Perf:Cycles.{host}[count]", "count_sci", 1.3e9),
        Col("Perf:Instructions.{host}[count]", "count_sci", 1.6e9),
        Col("Perf:IPC.{host}[-]", "level", 100.0),  # the x100 scale seen on GPU hosts
        Col("Perf:BranchUtilization.{host}[%]", "pct", 0.8),
        Col("Perf:CacheUtilization.{host}[%]", "pct", 22.0),
        Col("Perf:StallRatio.{host}[%]", "pct", 35.0),
        Col("Perf:OccupancyRatio.{host}[%]", "pct", 60.0),
        Col("Perf:Cycle_activity_stalls_l3_miss.{host}[count]", "count", 5e6),
        Col("Perf:Mem-loads.{host}[count]", "count", 2e8),
        Col("Perf:Mem-stores.{host}[count]", "count", 9e7),
        Col("Perf:Mem_trans_retired_load_latency_gt_256.{host}[count]", "nan"),
    ]
    for inst in ["-", "0", "1", "2", "3"]:
        cols.append(Col(f"Turbostat:Busy%.{inst}.{{host}}[%]", "pct", 40.0))
        cols.append(Col(f"Turbostat:Bzy_MHz.{inst}.{{host}}[MHz]", "level", 3100.0))
    cols += [
        Col("Turbostat:Avg_MHz.-.{host}[MHz]", "level", 1300.0),
        Col("Turbostat:TSC_MHz.-.{host}[MHz]", "const", 2600.0),
        Col("Turbostat:IPC.-.{host}[-]", "level", 1.1),
        Col("Turbostat:C1%.-.{host}[%]", "pct", 5.0),
        Col("Turbostat:CPU%c6.-.{host}[%]", "pct", 45.0),
        Col("Turbostat:CorWatt.0.{host}[W]", "level", 6.0),
        Col("Turbostat:CorWatt.1.{host}[W]", "level", 6.0),
        Col("Turbostat:IRQ.-.{host}[count]", "count", 4e4),
        Col("Turbostat:SMI.-.{host}[count]", "zero"),
        Col("Turbostat:CoreTmp.-.{host}[C]", "temp", 55.0),
        Col("Turbostat:PkgTmp.-.{host}[C]", "temp", 58.0),
        Col("Turbostat:Pkg%pc2.-.{host}[%]", "pct", 3.0),
        Col("Turbostat:PkgWatt.-.{host}[W]", "level", 95.0),
        Col("Turbostat:RAMWatt.-.{host}[W]", "level", 12.0),
    ]
    for g in ("0", "1"):
        cols += [
            Col(f"GPU: utilization.gpu.{g}.{{host}}[%]", "pct", 85.0),
            Col(f"GPU: utilization.memory.{g}.{{host}}[%]", "pct", 40.0),
            Col(f"GPU: memory.used.{g}.{{host}}[MiB]", "level", 18000.0),
            Col(f"GPU: power.draw.{g}.{{host}}[W]", "level", 230.0),
            Col(f"GPU: temperature.gpu.{g}.{{host}}[C]", "temp", 62.0),
            Col(f"GPU: clocks.sm.{g}.{{host}}[MHz]", "level", 1410.0),
            Col(f"GPU: ecc.errors.corrected.volatile.dram.{g}.{{host}}[count]", "zero"),
        ]
    cols += [
        Col("Memory:MemTotal.{host}[kB]", "const", 263855400.0),
        Col("Memory:MemFree.{host}[kB]", "level", 1.9e8),
        Col("Memory:MemAvailable.{host}[kB]", "level", 2.3e8),
        Col("Memory:Cached.{host}[kB]", "level", 3.1e7),
        Col("Memory:MemoryUtilization.{host}[%]", "pct", 12.0),
        Col("Memory:Hugepagesize.{host}[kB]", "const", 2048.0),
        Col("Memory:HugePages_Total.{host}[count]", "zero"),
        Col("Storage:sectors_read.{host}[sectors]", "cumulative", 400.0),
        Col("Storage:sectors_written.{host}[sectors]", "cumulative", 900.0),
        Col("Storage:reads_completed.{host}[count]", "cumulative", 20.0),
        Col("Storage:time_spent_reading_(ms).{host}[ms]", "cumulative", 3.0),
        Col("Storage:time_spent_writing_(ms).{host}[ms]", "cumulative", 7.0),
    ]
    for nic, rate in (("ib0", 4e7), ("ens1f0", 2e5)):
        cols += [
            Col(f"NetworkInterStat_diff:rx_bytes.{nic}.{{host}}[Bytes]", "diff", rate),
            Col(f"NetworkInterStat_diff:tx_bytes.{nic}.{{host}}[Bytes]", "diff", rate * 0.9),
            Col(f"NetworkInterStat_diff:rx_packets.{nic}.{{host}}[count]", "diff", rate / 4000),
            Col(f"NetworkInterStat_diff:tx_packets.{nic}.{{host}}[count]", "diff", rate / 4000),
            Col(f"NetworkInterStat_diff:tx_drop.{nic}.{{host}}[count]", "zero"),
            Col(f"NetworkInterStat_diff:NetworkUtilization.{nic}.{{host}}[%]", "pct", rate / 1e6),
        ]
    cols += _network_tail()
    return cols


def _network_tail() -> list[Col]:
    return [
        Col("NetworkProtocolCounts:TCP.{host}[count]", "small", 40.0),
        Col("NetworkProtocolCounts:UDP.{host}[count]", "small", 12.0),
        Col("NetworkProtocolCounts:UNIX.{host}[count]", "small", 300.0),
        Col("NetworkProtocolCounts:RAW.{host}[count]", "zero"),
        Col("NetworkProtocolCounts:total_connections.{host}[count]", "small", 352.0),
        Col("NetworkTCPRetrans_diff:TcpRetransSegs.{host}[count]", "events", 0.05),
        Col("NetworkTCPRetrans_diff:TcpExtTCPSynRetrans.{host}[count]", "events", 0.01),
    ]


def cpu_columns() -> list[Col]:
    cols = [
        Col("Perf:Branches.{host}[count]", "count", 6e8),
        Col("Perf:Branch_Misses.{host}[count]", "count", 5e6),
        Col("Perf:Cache_Misses.{host}[count]", "count", 3e7),
        Col("Perf:Cache_References.{host}[count]", "count", 1.2e8),
        Col("Perf:Cycles.{host}[count]", "count_sci", 2.2e9),
        Col("Perf:Instructions.{host}[count]", "count_sci", 1.8e9),
        Col("Perf:IPC.{host}[-]", "level", 0.8),
        Col("Perf:BranchUtilization.{host}[%]", "pct", 0.9),
        Col("Perf:CacheUtilization.{host}[%]", "pct", 25.0),
        Col("Perf:Ls_dc_accesses.{host}[count]", "count", 7e8),  # AMD only
        Col("Perf:Ls_dispatch_ld_dispatch.{host}[count]", "count", 5e8),  # AMD only
    ]
    for inst in ["-", "0", "1", "2", "3", "23"]:
        cols.append(Col(f"Turbostat:Busy%.{inst}.{{host}}[%]", "pct", 70.0))
        cols.append(Col(f"Turbostat:Bzy_MHz.{inst}.{{host}}[MHz]", "level", 2900.0))
    cols += [
        Col("Turbostat:Avg_MHz.-.{host}[MHz]", "level", 2000.0),
        Col("Turbostat:TSC_MHz.-.{host}[MHz]", "const", 2450.0),
        Col("Turbostat:IPC.-.{host}[-]", "level", 0.9),
        Col("Turbostat:C1%.-.{host}[%]", "pct", 2.0),
        Col("Turbostat:CorWatt.26.{host}[W]", "level", 4.0),
        Col("Turbostat:IRQ.17.{host}[count]", "count", 900.0),
        Col("Turbostat:SMI.-.{host}[count]", "zero"),
        Col("Turbostat:CoreTmp.-.{host}[C]", "temp", 64.0),
        Col("Turbostat:PkgWatt.-.{host}[W]", "level", 180.0),
        Col("Turbostat:RAMWatt.-.{host}[W]", "nan"),  # not reported on AMD
        Col("Turbostat:Pkg%pc2.-.{host}[%]", "nan"),
        Col("Memory:MemTotal.{host}[kB]", "const", 527988000.0),
        Col("Memory:MemoryUtilization.{host}[%]", "pct", 9.0),
        Col("Memory:Hugepagesize.{host}[kB]", "const", 2048.0),
        Col("Meminfo_diff:MemAvailable.{host}[kB]", "diff_signed", 3000.0),
        Col("Meminfo_diff:MemFree.{host}[kB]", "diff_signed", 3000.0),
        Col("Meminfo_diff:Cached.{host}[kB]", "diff_signed", 800.0),
        Col("Meminfo_diff:Dirty.{host}[kB]", "diff_signed", 200.0),
        Col("Storage_diff:sectors_read.{host}[sectors]", "diff", 300.0),
        Col("Storage_diff:sectors_written.{host}[sectors]", "diff", 700.0),
        Col("Storage_diff:time_spent_reading_(ms).{host}[ms]", "diff", 2.0),
        Col("Storage_diff:time_spent_writing_(ms).{host}[ms]", "diff", 5.0),
    ]
    for nic, rate in (("enp1s0f0np0", 3e6),):
        cols += [
            Col(f"NetworkInterStat_diff:rx_bytes.{nic}.{{host}}[Bytes]", "diff", rate),
            Col(f"NetworkInterStat_diff:tx_bytes.{nic}.{{host}}[Bytes]", "diff", rate * 0.7),
            Col(f"NetworkInterStat_diff:rx_packets.{nic}.{{host}}[count]", "diff", rate / 3000),
            Col(f"NetworkInterStat_diff:tx_drop.{nic}.{{host}}[count]", "zero"),
            Col(f"NetworkInterStat_diff:NetworkUtilization.{nic}.{{host}}[%]", "pct", 2.0),
        ]
    cols += _network_tail()
    return cols


@dataclass(frozen=True)
class RunSpec:
    split: str  # train_separated | infer_separated
    prefix: str
    model: str
    task: str
    dataset: str
    start: str  # YYYY-MM-DDTHH-MM-SS
    host: str
    seconds: int
    phase: str
    mode: str
    extra_host: str | None = None  # a second host's columns in the same file

    @property
    def file_name(self) -> str:
        return f"{self.prefix}_{self.model}for{self.task}_{self.dataset}_{self.start}_{self.host}.txt"


GPU_RUNS = [
    RunSpec(
        "train_separated",
        "train",
        "BARTBASE",
        "TableQuestionAnswering",
        "default",
        "2025-04-26T13-38-18",
        "htc-g004",
        34,
        "train",
        "nonllm",
    ),
    RunSpec(
        "train_separated",
        "train",
        "VGG16",
        "ImageClassification",
        "CIFAR10",
        "2025-05-11T12-27-13",
        "htc-g003",
        31,
        "train",
        "nonllm",
    ),
    RunSpec(
        "train_separated",
        "data",
        "LLAMA",
        "TextClassification",
        "imdb",
        "2025-05-02T09-10-11",
        "htc-g004",
        33,
        "fine-tuning",
        "llm",
    ),
    RunSpec(
        "infer_separated",
        "infer",
        "Resnet18",
        "ImageClassification",
        "CIFAR10",
        "2025-05-12T10-00-05",
        "htc-g003",
        30,
        "infer",
        "nonllm",
    ),
    RunSpec(
        "infer_separated",
        "infer",
        "ViTB16",
        "ImageSemanticSegmentation",
        "scene_parse_150",
        "2025-05-13T08-15-30",
        "htc-g004",
        32,
        "infer",
        "nonllm",
    ),
    RunSpec(
        "infer_separated",
        "infer",
        "BERTBASE",
        "TextClassification",
        "imdb",
        "2025-05-14T16-42-09",
        "htc-g003",
        30,
        "infer",
        "nonllm",
    ),
]

CPU_RUNS = [
    RunSpec(
        "train_separated",
        "train",
        "Resnet50",
        "ImageClassification",
        "CIFAR10",
        "2025-06-03T11-02-44",
        "nserver07",
        35,
        "train",
        "nonllm",
    ),
    RunSpec(
        "train_separated",
        "data",
        "MISTRAL",
        "TextClassification",
        "imdb",
        "2025-06-04T07-30-00",
        "nserver15",
        31,
        "fine-tuning",
        "llm",
    ),
    RunSpec(
        "train_separated",
        "train",
        "BERTLARGE",
        "TextClassification",
        "imdb",
        "2025-06-05T14-20-31",
        "nserver07",
        30,
        "train",
        "nonllm",
        extra_host="nserver08",
    ),
    RunSpec(
        "infer_separated",
        "infer",
        "VGG19",
        "ImageClassification",
        "CIFAR10",
        "2025-06-06T09-45-12",
        "nserver08",
        30,
        "infer",
        "nonllm",
    ),
    RunSpec(
        "infer_separated",
        "infer",
        "BARTLARGE",
        "TableQuestionAnswering",
        "default",
        "2025-06-07T18-05-55",
        "nserver15",
        31,
        "infer",
        "nonllm",
    ),
]


def _values(col: Col, n: int, rng: np.random.Generator, phase: np.ndarray) -> np.ndarray:
    """Synthetic but plausible values for one column (``phase`` is a 0..1 workload shape)."""
    noise = rng.standard_normal(n)
    s = col.scale
    if col.gen == "nan":
        return np.full(n, np.nan)
    if col.gen == "zero":
        return np.zeros(n)
    if col.gen == "const":
        return np.full(n, s)
    if col.gen == "pct":
        return np.clip(s * (0.6 + 0.5 * phase) + 0.05 * s * noise + 0.3 * noise, 0, 100).round(2)
    if col.gen in ("count", "count_sci"):
        return np.maximum(0, s * (0.5 + phase) * np.exp(0.08 * noise)).round(0)
    if col.gen == "level":
        return np.maximum(0, s * (0.8 + 0.3 * phase) + 0.02 * s * noise).round(2)
    if col.gen == "temp":
        return (s + 8 * phase + 0.5 * noise).round(0)
    if col.gen == "cumulative":
        start = float(rng.integers(10**8, 10**9))
        return start + np.cumsum(np.maximum(0, s * (0.5 + phase) * np.exp(0.3 * noise))).round(0)
    if col.gen == "diff":
        v = np.maximum(0, s * (0.3 + phase) * np.exp(0.2 * noise)).round(0)
        v[0] = np.nan  # the first difference is undefined
        return v
    if col.gen == "diff_signed":
        v = (s * noise).round(0)
        v[0] = np.nan
        return v
    if col.gen == "small":
        return np.maximum(0, s + np.round(2 * noise))
    if col.gen == "events":
        v = rng.poisson(s, n).astype(float)
        v[0] = np.nan
        return v
    raise ValueError(f"unknown generator {col.gen!r}")


def _fmt_column(values: np.ndarray, sci: bool) -> list[str]:
    out = []
    for v in values.tolist():
        if v != v:  # NaN -> empty cell, as pandas writes it
            out.append("")
        elif sci:
            out.append(f"{v:.6e}")
        else:
            out.append(repr(float(v)))
    return out


def make_run(spec: RunSpec, columns: list[Col], rng: np.random.Generator) -> tuple[bytes, int, int]:
    """The TSV bytes of one run, its number of data rows and of columns (timestamp included)."""
    n = int(spec.seconds / INTERVAL_S)
    t0 = dt.datetime.strptime(spec.start, "%Y-%m-%dT%H-%M-%S")
    offset_ms = int(rng.integers(1, 7)) * 100  # first row 0.1-0.6 s after the file-name time
    times = [t0 + dt.timedelta(milliseconds=offset_ms + 100 * i) for i in range(n)]
    t = np.arange(n) * INTERVAL_S
    # workload shape: warm-up ramp then periodic steps (iterations / batches)
    phase = np.clip(t / 3.0, 0, 1) * (0.5 + 0.5 * np.sin(2 * np.pi * t / rng.uniform(4, 9)) ** 2)
    hosts = [spec.host] + ([spec.extra_host] if spec.extra_host else [])
    header = [""]
    cells: list[list[str]] = [
        [ts.strftime("%Y-%m-%d %H:%M:%S.") + f"{ts.microsecond // 1000:03d}" for ts in times]
    ]
    for h_i, host in enumerate(hosts):
        for col in columns:
            header.append(col.name.format(host=host))
            v = _values(col, n, rng, phase)
            if h_i == 1:  # the second host joins 2 s late: its first rows are empty
                v[:20] = np.nan
            elif col.gen in ("pct", "level", "count") and rng.random() < 0.1:
                v[rng.integers(5, n - 5)] = np.nan  # a sporadic missing sample
            cells.append(_fmt_column(v, col.gen == "count_sci"))
    lines = ["\t".join(header)] + ["\t".join(row) for row in zip(*cells, strict=True)]
    return ("\n".join(lines) + "\n").encode(), n, len(header)


def _zip_write(z: zipfile.ZipFile, name: str, data: bytes, when: tuple[int, ...]) -> None:
    info = zipfile.ZipInfo(name, date_time=when)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o644 << 16) if not name.endswith("/") else (0o40755 << 16) | 0x10
    z.writestr(info, data, compresslevel=9)


def write_archive(
    path: Path, runs: list[RunSpec], columns: list[Col], rng: np.random.Generator, ds_store: bool
) -> list[dict]:
    rows = []
    when = (2025, 10, 1, 0, 0, 0)
    with zipfile.ZipFile(path, "w") as z:
        for split in ("train_separated", "infer_separated"):
            _zip_write(z, f"{split}/", b"", when)
            if ds_store and split == "train_separated":
                _zip_write(z, f"{split}/.DS_Store", b"\x00\x00\x00\x01Bud1" + bytes(26), when)
            for spec in (r for r in runs if r.split == split):
                data, n_rows, n_cols = make_run(spec, columns, rng)
                _zip_write(z, f"{split}/{spec.file_name}", data, when)
                rows.append(
                    {
                        "source_file": f"./{split}/{spec.file_name}",
                        "n_rows": n_rows,
                        "n_cols": n_cols,
                        "phase": spec.phase,
                        "mode": spec.mode,
                        "model": spec.model,
                        "task": spec.task,
                        "dataset": spec.dataset,
                        "model_task": f"{spec.model}__{spec.task}",
                        "workload": f"{spec.model}__{spec.task}__{spec.dataset}",
                    }
                )
    return rows


META_FIELDS = [
    "source_file",
    "n_rows",
    "n_cols",
    "phase",
    "mode",
    "model",
    "task",
    "dataset",
    "model_task",
    "workload",
]


def write_meta(path: Path, rows: list[dict]) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=META_FIELDS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text(buf.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)

    gpu_rows = write_archive(out / "Reveal_GPU.zip", GPU_RUNS, gpu_columns(), rng, ds_store=True)
    cpu_rows = write_archive(out / "Reveal_CPU.zip", CPU_RUNS, cpu_columns(), rng, ds_store=False)
    write_meta(out / "meta_cpu.csv", cpu_rows)

    # meta_gpu.csv does not match its files, like the real one: the LLAMA fine-tuning run and
    # one inference run are unlisted, a Resnet50 run is listed without a file, and the VGG16
    # row has a wrong n_rows.
    gpu_meta = [
        dict(r) for r in gpu_rows if "LLAMA" not in r["source_file"] and "BERTBASE" not in r["source_file"]
    ]
    for r in gpu_meta:
        if "VGG16" in r["source_file"]:
            r["n_rows"] = int(r["n_rows"]) + 17
    gpu_meta.insert(
        1,
        {
            "source_file": "./train_separated/"
            "train_Resnet50forImageClassification_CIFAR10_2025-05-09T08-00-00_htc-g003.txt",
            "n_rows": 412,
            "n_cols": 78,
            "phase": "train",
            "mode": "nonllm",
            "model": "Resnet50",
            "task": "ImageClassification",
            "dataset": "CIFAR10",
            "model_task": "Resnet50__ImageClassification",
            "workload": "Resnet50__ImageClassification__CIFAR10",
        },
    )
    write_meta(out / "meta_gpu.csv", gpu_meta)
    total = sum(p.stat().st_size for p in out.iterdir())
    print(
        f"wrote {out} ({total / 1e6:.2f} MB): GPU {len(gpu_rows)} runs, CPU {len(cpu_rows)} runs, "
        f"seed {args.seed}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
