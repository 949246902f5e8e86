"""Loading: the public Reveal dataset (zipped or not), our lab dataset and collector output,
all into the canonical telemetry frame (:mod:`reveal_lab.telemetry`); the datasets' run
tables (:func:`read_meta_csv`, :func:`read_meta`) and ground truth (:func:`read_labels`)."""

from reveal_lab.io._collector import is_collector_run, merge_hosts, read_collector_run
from reveal_lab.io._csv import csv_datetimes, csv_numbers, read_csv_table
from reveal_lab.io._describe import describe_dataset
from reveal_lab.io._export_tsv import export_tsv
from reveal_lab.io._identity import run_identity
from reveal_lab.io._load import PARQUET_META_KEY, load_run, read_parquet_run, write_parquet_run
from reveal_lab.io._labels import (
    LABEL_COLUMNS,
    STAMP_FMT,
    check_labels,
    ms_to_stamp,
    read_labels,
    stamp_to_ms,
)
from reveal_lab.io._meta import (
    EXTRA_META_COLUMNS,
    META_COLUMNS,
    META_NUMBER_COLUMNS,
    META_TIME_COLUMNS,
    read_meta,
    read_meta_csv,
    workload_spans,
)
from reveal_lab.io._pace import PACE_COLUMNS, JobPace, read_job_pace, steady_span
from reveal_lab.io._names import LLM_MODELS, PREFIX_PHASE, RunFileName, meta_from_name, parse_run_filename
from reveal_lab.io._public import INDEX_SCHEMA, Dataset, open_dataset
from reveal_lab.io._reconcile import Reconciliation, reconcile
from reveal_lab.io._staged import StagedFolder, check_not_nested, staged_folder
from reveal_lab.io._tsv import read_public_tsv

__all__ = [
    "PACE_COLUMNS",
    "JobPace",
    "read_job_pace",
    "steady_span",
    "open_dataset",
    "Dataset",
    "Reconciliation",
    "describe_dataset",
    "INDEX_SCHEMA",
    "load_run",
    "read_public_tsv",
    "read_parquet_run",
    "write_parquet_run",
    "PARQUET_META_KEY",
    "parse_run_filename",
    "RunFileName",
    "meta_from_name",
    "read_collector_run",
    "merge_hosts",
    "export_tsv",
    "is_collector_run",
    "META_COLUMNS",
    "EXTRA_META_COLUMNS",
    "META_NUMBER_COLUMNS",
    "META_TIME_COLUMNS",
    "read_meta_csv",
    "read_meta",
    "workload_spans",
    "LABEL_COLUMNS",
    "STAMP_FMT",
    "ms_to_stamp",
    "stamp_to_ms",
    "read_labels",
    "check_labels",
    "LLM_MODELS",
    "PREFIX_PHASE",
    "reconcile",
    "read_csv_table",
    "csv_numbers",
    "csv_datetimes",
    "StagedFolder",
    "staged_folder",
    "check_not_nested",
    "run_identity",
]
