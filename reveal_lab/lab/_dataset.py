"""The dataset from recorded collector folders: each run read back in the public file-name
grammar as Parquet, ``meta_lab.csv``, ``labels.csv`` and the provenance README
(:func:`build_dataset`)."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path

from reveal_lab.io import EXTRA_META_COLUMNS, LABEL_COLUMNS, META_COLUMNS, ms_to_stamp
from reveal_lab.lab._hosts import LabError
from reveal_lab.lab._labels import file_name, split_dir, write_csv
from reveal_lab.lab._provenance import provenance_readme
from reveal_lab.lab._workloads import workload_spec
from reveal_lab.telemetry import Run, RunMeta

__all__ = ["build_dataset", "label_hosts", "write_run"]

log = logging.getLogger(__name__)


def label_hosts(manifest: dict, label: dict) -> list[str]:
    """The hosts a recorded fault label belongs to in ``labels.csv``.

    A fault is recorded on one host. A network-steering change (``config_irq_imbalance``)
    is recorded on the host whose core receives every host's network processing, but that
    host's own configuration is unchanged when its processing was on that core already; the
    hosts whose configuration differs from a fault-free run are those whose steering masks in
    the run's manifest (``hosts[h]["steering"]``, hexadecimal CPU masks) no longer name their
    own core. Those hosts get the label; when the manifest does not say (older manifests, no
    steering), the recorded host keeps it.

    >>> man = {"hosts": {"a": {"core": 0, "steering": {"rx": "1"}},
    ...                  "b": {"core": 1, "steering": {"rx": "1", "tx": "1"}}}}
    >>> label_hosts(man, {"host": "a", "fault_type": "config_irq_imbalance"})
    ['b']
    >>> label_hosts(man, {"host": "a", "fault_type": "packet_loss"})
    ['a']
    """
    if label["fault_type"] != "config_irq_imbalance":
        return [label["host"]]
    moved = []
    for hn, h in manifest.get("hosts", {}).items():
        masks, core = h.get("steering") or {}, h.get("core")
        if core in (None, "") or not masks:
            continue
        own = 1 << int(core)
        if any(int(str(v).replace(",", "") or "0", 16) != own for v in masks.values()):
            moved.append(hn)
    return moved or [label["host"]]


def build_dataset(
    raw_root: str | Path, out: str | Path, *, drop_all_nan: bool = True, runs: Sequence[str] | None = None
) -> tuple[list[dict], list[dict]]:
    """Turn recorded raw runs (``*.run.json`` + collector dirs) into the dataset layout.

    Writes ``{train,infer}_separated/*.parquet`` (canonical frames, ``view="dataset"``),
    ``meta_lab.csv`` and ``labels.csv`` into ``out``; returns ``(meta_rows, label_rows)``.
    Columns that are entirely missing in a run are dropped when ``drop_all_nan`` (the
    count is kept in the meta column ``n_dropped_nan_columns``).
    """
    raw_root, out = Path(raw_root), Path(out)
    manifests = sorted(raw_root.glob("*.run.json"))
    if runs is not None:
        manifests = [m for m in manifests if m.name[: -len(".run.json")] in set(runs)]
    if not manifests:
        raise LabError(f"no recorded runs (*.run.json) in {raw_root}")
    meta_rows: list[dict] = []
    label_rows: list[dict] = []
    skipped = []
    for mpath in manifests:
        man = json.loads(mpath.read_text())
        bad = {
            hn: h.get("collector_rc")
            for hn, h in man["hosts"].items()
            if h.get("collector_rc") not in (0, None)
        }
        if bad:  # a collector died during the run: its telemetry is incomplete
            log.warning("%s left out: collector exit status %s", man["stem"], bad)
            skipped.append(man["stem"])
            continue
        meta_rows += _host_rows(raw_root, out, man, drop_all_nan)
        label_rows += _label_rows(man)
    write_csv(out / "meta_lab.csv", meta_rows, [*META_COLUMNS, *EXTRA_META_COLUMNS])
    write_csv(out / "labels.csv", label_rows, LABEL_COLUMNS)
    if (raw_root / "recording.json").exists():
        shutil.copy2(raw_root / "recording.json", out / "recording.json")
    (out / "README.md").write_text(provenance_readme(raw_root, out))
    return meta_rows, label_rows


def drop_missing_columns(frame):  # noqa: ANN001, ANN201 - a polars frame
    """``(frame, how many)`` with the columns that are missing (null or NaN) in every row
    removed; the timestamp is kept."""
    import polars as pl

    keep = [
        c
        for c in frame.columns
        if c == "timestamp" or frame.select(pl.col(c).fill_nan(None).null_count()).item() < frame.height
    ]
    return frame.select(keep), frame.width - len(keep)


def _host_rows(raw_root: Path, out: Path, man: dict, drop_all_nan: bool) -> list[dict]:
    """Each host's file of one recorded run written in the dataset layout; its meta rows."""
    from reveal_lab.io import read_collector_run

    plan = man["plan"]
    spec = workload_spec(plan["model"])
    stem, phase, model_name = man["stem"], plan["phase"], man["model_name"]
    sub = out / split_dir(phase)
    sub.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for hn, h in man["hosts"].items():
        run = read_collector_run(raw_root / h["collector_dir"], view="dataset")
        frame = run.frame
        dropped = 0
        if drop_all_nan:
            frame, dropped = drop_missing_columns(frame)
        fn = file_name(stem, hn)
        summ = h.get("workload") or {}
        quota = h.get("cpu_quota")  # while the workload ran (older manifests: when it ended)
        for lab in man["labels"]:
            if lab["fault_type"] == "config_cpu_quota" and lab["host"] == hn:
                quota = lab["magnitude"]
        rmeta = RunMeta(
            run_id=f"{stem}_{hn}",
            hosts=(hn,),
            workload=f"{model_name}__{spec.task}__{spec.dataset}",
            model=model_name,
            task=spec.task,
            dataset=spec.dataset,
            phase=phase,
            mode="nonllm",
            platform="lab",
            source_path=f"./{split_dir(phase)}/{fn}",
            start_time=run.meta.start_time,
            interval_ms=run.meta.interval_ms,
            extra={
                "run_group": stem,
                "fault": man["fault"],
                "world_size": len(man["hosts"]),
                "cpu_quota": quota,
                "case": plan.get("case", ""),
                "dropped_all_missing_columns": dropped,
                "collector": {
                    k: run.meta.extra.get(k)
                    for k in ("probes_used", "probes_skipped")
                    if k in run.meta.extra
                },
            },
        )
        write_run(Run(rmeta, frame), sub / fn)
        rows.append(
            {
                "source_file": f"./{split_dir(phase)}/{fn}",
                "n_rows": frame.height,
                "n_cols": frame.width - 1,
                "phase": phase,
                "mode": "nonllm",
                "model": model_name,
                "task": spec.task,
                "dataset": spec.dataset,
                "model_task": f"{model_name}for{spec.task}",
                "workload": f"{model_name}__{spec.task}__{spec.dataset}",
                "run": stem,
                "host": hn,
                "core": h.get("core", ""),
                "run_group": stem,
                "world_size": len(man["hosts"]),
                "fault": man["fault"],
                "repeat": plan["repeat"],
                "seed": plan["seed"] * 10 + plan["repeat"],
                "start": str(frame["timestamp"][0]) if frame.height else "",
                "end": str(frame["timestamp"][-1]) if frame.height else "",
                "steps": summ.get("steps", ""),
                "samples_per_s": round(summ["samples_per_s"], 2) if "samples_per_s" in summ else "",
                **_workload_span(raw_root, stem, man),
                "cpu_quota": "" if quota is None else quota,
                "threads": h.get("threads", 1),
                "case": plan.get("case", ""),
                "n_dropped_nan_columns": dropped,
            }
        )
        for w in run.warnings[:3]:
            log.info("%s: reader warning: %s", fn, w)
    return rows


def _label_rows(man: dict) -> list[dict]:
    """The labels of one recorded run, one row per labelled host."""
    stem, phase = man["stem"], man["plan"]["phase"]
    label_rows: list[dict] = []
    for lab, hn in ((lab, hn) for lab in man["labels"] for hn in label_hosts(man, lab)):
        label_rows.append(
            {
                "run": stem,
                "host": hn,
                "fault_type": lab["fault_type"],
                "start": ms_to_stamp(lab["start_ms"]),
                "end": ms_to_stamp(lab["end_ms"]),
                "expected_subsystem": lab["expected_subsystem"],
                "magnitude": lab["magnitude"],
                "unit": lab["unit"],
                "scope": lab["scope"],
                "source_file": f"./{split_dir(phase)}/{file_name(stem, hn)}",
            }
        )
    return label_rows


def _workload_span(raw_root: Path, stem: str, man: dict) -> dict[str, str]:
    """When the workload computed: its first step (all ranks started) to the last progress line."""
    start = man.get("workload_start_ms")
    end = None
    for hn in man["hosts"]:
        logf = raw_root / f"{stem}_{hn}.progress.jsonl"
        if not logf.exists():
            continue
        for line in logf.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("event") == "start":
                start = max(start or 0, rec["time_ms"]) if man.get("workload_start_ms") is None else start
            elif "time_ms" in rec:
                end = max(end or 0, rec["time_ms"])
    return {
        "workload_start": ms_to_stamp(start) if start else "",
        "workload_end": ms_to_stamp(end) if end else "",
    }


def write_run(run: Run, path: Path) -> None:
    """A canonical Parquet run (frame + :class:`RunMeta` under the loader's metadata key), kept small.

    zstd level 10, no column statistics, no dictionary pages and no serialized Arrow schema
    (Parquet's own logical types keep ``timestamp`` as ``Datetime("ms")``): about half the
    size of the defaults for these ~600-column frames.
    """
    import pyarrow.parquet as pq

    from reveal_lab.io import PARQUET_META_KEY
    from reveal_lab.telemetry import validate_frame

    validate_frame(run.frame, source=str(path))
    table = run.frame.to_arrow()
    with pq.ParquetWriter(
        path,
        table.schema,
        compression="zstd",
        compression_level=10,
        write_statistics=False,
        store_schema=False,
        use_dictionary=False,
    ) as w:
        w.write_table(table)
        w.add_key_value_metadata({PARQUET_META_KEY: json.dumps(run.meta.to_dict(), default=str)})
