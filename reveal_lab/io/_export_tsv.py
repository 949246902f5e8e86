"""Write a run in the public Reveal dataset's TSV layout.

One ``.txt`` file per host, named ``{prefix}_{MODEL}for{Task}_{dataset}_{start}_{host}.txt``
(the public file-name grammar, start = the first sample's second), tab separated, a
header line whose first field is empty, then one row per sample: the timestamp as
``YYYY-mm-dd HH:MM:SS.fff`` and every metric as a float, missing values as empty cells.
Timestamps are written as the frame holds them (the collector's are UTC); pass
``utc_offset_s`` (e.g. ``run.meta.extra["clock"]["utc_offset_s"]``) for local wall time
like the public files.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import polars as pl

from reveal_lab.io._names import RunFileName
from reveal_lab.telemetry import TIMESTAMP, Run, metric_columns

__all__ = ["export_tsv"]

_PART_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
_DATASET_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def _check(label: str, value: str, rx: re.Pattern[str]) -> str:
    if not rx.match(value):
        raise ValueError(
            f"{label} {value!r} cannot be written in the public file-name grammar "
            "(letters, digits and '-' only; '_' is allowed in the dataset part)"
        )
    if label == "model" and "for" in value:
        raise ValueError(f"model {value!r} contains 'for', which separates model and task in file names")
    return value


def export_tsv(
    run: Run,
    out_dir: str | Path,
    *,
    prefix: str = "train",
    model: str | None = None,
    task: str | None = None,
    dataset: str | None = None,
    utc_offset_s: float = 0.0,
    overwrite: bool = False,
) -> list[Path]:
    """Write ``run`` as one public-layout ``.txt`` file per host; return the paths.

    Parameters
    ----------
    run : Run
        Any canonical run (e.g. ``read_collector_run(dir)`` or a merged multi-host run).
    out_dir : str or Path
        Created if needed.
    prefix, model, task, dataset : str
        File-name parts; default to the run's metadata, else ``COLLECTOR``, ``Telemetry``,
        ``none``.
    utc_offset_s : float
        Added to every timestamp (UTC → local wall time).
    overwrite : bool
        Replace existing files instead of raising ``FileExistsError``.

    Examples
    --------
    >>> import datetime as dt, tempfile
    >>> from reveal_lab.telemetry import RunMeta
    >>> t = dt.datetime(2025, 5, 1, 12, 0, 0, 100000)
    >>> f = pl.DataFrame({"timestamp": [t], "CPU:Busy%.-.h1[%]": [12.5]})
    >>> f = f.with_columns(pl.col("timestamp").cast(pl.Datetime("ms")))
    >>> p, = export_tsv(Run(RunMeta("r"), f), tempfile.mkdtemp(), model="IDLE", task="Baseline")
    >>> p.name
    'train_IDLEforBaseline_none_2025-05-01T12-00-00_h1.txt'
    >>> p.read_text().splitlines()
    ['\\tCPU:Busy%.-.h1[%]', '2025-05-01 12:00:00.100\\t12.5']
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = _check("model", model or run.meta.model or "COLLECTOR", _PART_RE)
    task = _check("task", task or run.meta.task or "Telemetry", _PART_RE)
    dataset = _check("dataset", dataset or run.meta.dataset or "none", _DATASET_RE)
    _check("prefix", prefix, _PART_RE)
    if run.frame.height == 0:
        raise ValueError(f"run {run.run_id} has no rows to export")
    paths = []
    for host, part in run.split_hosts().items():
        frame = part.frame
        if utc_offset_s:
            frame = frame.with_columns(
                pl.col(TIMESTAMP) + pl.duration(milliseconds=round(utc_offset_s * 1000))
            )
        first: dt.datetime = frame.get_column(TIMESTAMP)[0]
        name = RunFileName(prefix, model, task, dataset, first.replace(microsecond=0), host, ".txt").format()
        path = out / name
        if path.exists() and not overwrite:
            raise FileExistsError(f"{path} exists (pass overwrite=True / --overwrite)")
        cols = metric_columns(frame)
        body = frame.select(
            pl.col(TIMESTAMP).dt.strftime("%Y-%m-%d %H:%M:%S%.3f").alias(""),
            *[pl.col(c).cast(pl.Float64) for c in cols],
        )
        tmp = path.with_name(path.name + ".tmp")
        body.write_csv(tmp, separator="\t", null_value="", include_header=True, quote_style="never")
        tmp.replace(path)
        paths.append(path)
    return paths
