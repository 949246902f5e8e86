"""Loading: the public Reveal dataset (zipped or not), our lab dataset and collector output,
all into the canonical telemetry frame (:mod:`reveal_lab.telemetry`)."""

from reveal_lab.io._collector import merge_hosts, read_collector_run
from reveal_lab.io._describe import describe_dataset
from reveal_lab.io._export_tsv import export_tsv
from reveal_lab.io._hf import HubError, export_hf, hub_request_timeouts, push_hf
from reveal_lab.io._load import PARQUET_META_KEY, load_run, read_parquet_run, write_parquet_run
from reveal_lab.io._public import (
    INDEX_SCHEMA,
    Dataset,
    Reconciliation,
    RunFileName,
    meta_from_name,
    open_dataset,
    parse_run_filename,
)
from reveal_lab.io._tsv import read_public_tsv

__all__ = [
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
    "export_hf",
    "push_hf",
    "HubError",
    "hub_request_timeouts",
]
