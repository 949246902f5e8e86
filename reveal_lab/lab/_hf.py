"""Share a labelled lab dataset on the Hugging Face hub.

:func:`export_hf` turns a dataset folder in the public layout (``data/lab``:
``{train,infer}_separated/*.parquet``, ``meta_lab.csv``, ``labels.csv``, ``README.md``)
into a hub dataset repository folder that ``datasets.load_dataset(folder)`` loads:

* ``data/{train,infer}-NNNNN-of-MMMMM.parquet`` -- Parquet shards, one schema for all:
  ``run_id, run, host, workload, phase, fault, timestamp`` and one ``float64`` column per
  metric, named host-free (``Source[_diff]:field[.instance][unit]``, from
  :meth:`MetricName.key`), so runs of different hosts stack; a metric a run lacks is null;
* ``meta_lab.csv`` and ``labels.csv`` (the run table and the ground truth), and the same
  tables as ``tables/*.parquet`` behind the ``meta`` and ``labels`` configs;
* ``README.md`` -- a dataset card with YAML ``configs`` (``data_files`` per split:
  ``train``/``infer`` by workload phase), ``dataset_info.features`` (the schema), license,
  and the provenance text of the source folder's ``README.md``.

:func:`push_hf` uploads such a folder with ``huggingface_hub`` (needs network and a token;
fails fast with a clear message otherwise).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlparse

import polars as pl

from reveal_lab.config import data_dir
from reveal_lab.io import LABEL_COLUMNS, check_not_nested, read_labels, read_meta, staged_folder
from reveal_lab.telemetry import TIMESTAMP, TelemetryError, metric_columns, parse_metric_name

__all__ = ["export_hf", "push_hf", "hf_column_name", "HubError", "ID_COLUMNS", "hub_request_timeouts"]

#: leading columns of every shard
ID_COLUMNS = ("run_id", "run", "host", "workload", "phase", "fault", TIMESTAMP)
#: the dataset's splits, by the meta table's ``phase``
SPLITS = ("train", "infer")


class HubError(RuntimeError):
    """Uploading to the Hugging Face hub is not possible right now (no token, no network, ...)."""


def hf_column_name(column: str) -> str:
    """The host-free name of a metric column in the shards.

    >>> hf_column_name("CPU:Busy%.0.labA[%]")
    'CPU:Busy%.0[%]'
    >>> hf_column_name("Memory:Dirty.labB[kB]")
    'Memory:Dirty[kB]'
    """
    m = parse_metric_name(column)
    if m is None:
        return column
    return m.key() + (f"[{m.unit}]" if m.unit else "")


def _runs(root: Path, meta: pl.DataFrame) -> list[dict]:
    rows = meta.to_dicts()
    for r in rows:
        p = root / str(r["source_file"]).removeprefix("./")
        if not p.exists():
            raise TelemetryError("run file listed in the meta table is missing", path=str(p))
        r["_path"] = p
    return rows


def _frame(row: dict) -> pl.DataFrame:
    f = pl.read_parquet(row["_path"])
    cols = metric_columns(f)
    renamed = {c: hf_column_name(c) for c in cols}
    if len(set(renamed.values())) != len(renamed):
        dup = sorted({v for v in renamed.values() if list(renamed.values()).count(v) > 1})[:3]
        raise TelemetryError(f"host-free names collide in one run: {dup}", path=str(row["_path"]))
    f = f.rename(renamed)
    ids = {
        "run_id": Path(row["_path"]).stem,
        "run": row.get("run") or Path(row["_path"]).stem,
        "host": row.get("host") or "",
        "workload": row.get("workload") or "",
        "phase": row.get("phase") or "",
        "fault": row.get("fault") or "",
    }
    return f.with_columns(*[pl.lit(str(v)).alias(k) for k, v in ids.items()])


def _yaml_card(
    features: list[tuple[str, str]],
    splits: dict[str, dict[str, int]],
    tables: list[tuple[str, str]],
    *,
    pretty_name: str,
    license: str,
) -> str:  # noqa: A002 - the card's field name
    import yaml

    configs = [
        {
            "config_name": "telemetry",
            "default": True,
            "data_files": [{"split": s, "path": f"data/{s}-*.parquet"} for s in splits],
        },
        *[{"config_name": t, "data_files": [{"split": t, "path": f"tables/{f}"}]} for t, f in tables],
    ]
    info = {
        "config_name": "telemetry",
        "features": [{"name": n, "dtype": d} for n, d in features],
        "splits": [
            {"name": s, "num_bytes": int(v["bytes"]), "num_examples": int(v["rows"])}
            for s, v in splits.items()
        ],
    }
    header = {
        "license": license,
        "pretty_name": pretty_name,
        "task_categories": ["time-series-forecasting"],
        "tags": ["telemetry", "anomaly-detection", "ml-infrastructure", "fault-injection", "procfs"],
        "size_categories": ["n<1K"],
        "configs": configs,
        "dataset_info": info,
    }
    return "---\n" + yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000) + "---\n"


_DTYPES = {
    pl.Float64: "float64",
    pl.Float32: "float32",
    pl.Int64: "int64",
    pl.String: "string",
    pl.Boolean: "bool",
}


def export_hf(
    root: str | Path | None,
    out: str | Path,
    *,
    runs_per_shard: int = 8,
    overwrite: bool = False,
    pretty_name: str = "reveal-lab: ML workloads under injected faults (CPU telemetry)",
    license: str = "cc-by-4.0",
) -> Path:  # noqa: A002
    """Write the hub repository folder for the dataset at ``root`` into ``out`` (see module doc).

    Returns ``out``. ``out`` must be empty or absent unless ``overwrite``, and must not be,
    contain or lie inside ``root``. The inputs are read and checked before anything is
    written; the folder is written beside ``out`` and moved into place when complete
    (:class:`~reveal_lab.io.StagedFolder`), so a failed export leaves ``out`` as it was.
    """
    root = Path(root) if root is not None else data_dir()
    out = Path(out)
    if not root.is_dir():
        raise TelemetryError("the source dataset folder does not exist (--data)", path=str(root))
    check_not_nested(root, out, flag="--hf")
    meta_path = root / ("meta_lab.csv" if (root / "meta_lab.csv").exists() else "meta.csv")
    meta = read_meta(meta_path)
    rows = _runs(root, meta)
    if not rows:
        raise TelemetryError("the meta table lists no runs", path=str(root))
    if (root / "labels.csv").exists():
        read_labels(root / "labels.csv")  # a broken labels file fails here, not after the shards
    with staged_folder(out, overwrite=overwrite) as tmp:
        _write_export(root, tmp, rows, meta, meta_path, runs_per_shard, pretty_name, license)
    return out


def _write_parquet(df: pl.DataFrame, path: Path, out: Path, **options: object) -> None:
    """``df.write_parquet``; polars reports a failed write (a full disk) as a ``ComputeError``
    holding the system's error number: it becomes that ``OSError``, naming the file inside
    the export (the folder is named by the command: ``while writing --hf OUT``)."""
    try:
        df.write_parquet(path, **options)
    except pl.exceptions.ComputeError as exc:
        code = re.search(r"os error (\d+)", str(exc))
        if code is None:
            raise
        n = int(code.group(1))
        raise OSError(n, f"{os.strerror(n)} (writing {path.relative_to(out).as_posix()})") from exc


def _write_export(
    root: Path,
    out: Path,
    rows: list[dict],
    meta: pl.DataFrame,
    meta_path: Path,
    runs_per_shard: int,
    pretty_name: str,
    license: str,  # noqa: A002
) -> None:
    for i, r in enumerate(rows):  # a run of another phase would fall out of every split
        if r.get("phase") not in SPLITS:
            raise TelemetryError(
                f"phase {r.get('phase')!r} of {r['source_file']} is not one of the splits {list(SPLITS)}",
                path=str(meta_path),
                line=i + 2,  # the header is line 1
                column="phase",
            )
    # one schema for all shards: the union of host-free metric names, sorted
    names: set[str] = set()
    for r in rows:
        import pyarrow.parquet as pq

        names.update(hf_column_name(c) for c in pq.read_schema(r["_path"]).names if c != TIMESTAMP)
    metric_names = sorted(names)
    order = [*ID_COLUMNS, *metric_names]
    schema = {c: pl.String for c in ID_COLUMNS}
    schema[TIMESTAMP] = pl.Datetime("ms")
    schema.update({c: pl.Float64 for c in metric_names})
    (out / "data").mkdir(parents=True, exist_ok=True)
    splits: dict[str, dict[str, int]] = {}
    for split in SPLITS:
        part = [r for r in rows if r.get("phase") == split]
        if not part:
            continue
        chunks = [part[i : i + runs_per_shard] for i in range(0, len(part), runs_per_shard)]
        counts = {"rows": 0, "bytes": 0}
        for k, chunk in enumerate(chunks):
            frames = [_frame(r) for r in chunk]
            df = pl.concat(frames, how="diagonal_relaxed")
            df = df.with_columns(
                *[pl.lit(None, dtype=t).alias(c) for c, t in schema.items() if c not in df.columns]
            )
            df = df.select([pl.col(c).cast(schema[c]) for c in order])
            shard = out / "data" / f"{split}-{k:05d}-of-{len(chunks):05d}.parquet"
            _write_parquet(df, shard, out, compression="zstd", compression_level=10, statistics=False)
            counts["rows"] += df.height
            counts["bytes"] += shard.stat().st_size
        splits[split] = counts
    # the CSVs as they are, and as Parquet for the `labels`/`meta` configs (one repository is read
    # with one builder, Parquet here, so every config must be Parquet)
    (out / "tables").mkdir()
    for name in ("meta_lab.csv", "labels.csv"):
        if (root / name).exists():
            shutil.copy2(root / name, out / name)
    _write_parquet(meta, out / "tables" / "meta_lab.parquet", out)
    tables = [("meta", "meta_lab.parquet")]
    if (root / "labels.csv").exists():
        labels = read_labels(root / "labels.csv")
        if labels.height:  # `datasets` refuses a config without rows
            _write_parquet(labels, out / "tables" / "labels.parquet", out)
            tables.insert(0, ("labels", "labels.parquet"))
    # datasets reads a timestamp column as timestamp[ms]; the card says so
    features = [(c, "timestamp[ms]" if c == TIMESTAMP else _DTYPES.get(schema[c], "string")) for c in order]
    card = _yaml_card(features, splits, tables, pretty_name=pretty_name, license=license)
    body = [
        f"# {pretty_name}",
        "",
        "Real telemetry recorded by the reveal-lab collector while PyTorch workloads (CNN, Transformer, MLP "
        'train/infer; two-host DDP over gloo) ran in network-namespace "hosts" under injected faults '
        "with exact ground truth.",
        "",
        "* config `telemetry` (default): one row per 100 ms sample; splits `train` and `infer` by phase; "
        "`run_id` is the source file, `run` ties the hosts of one DDP run; metric columns are host-free "
        "(`Source:field.instance[unit]`), null where a run lacks the metric.",
        f"* config `labels`: fault episodes (`{', '.join(LABEL_COLUMNS)}`), timestamps on the "
        "telemetry's clock (UTC, naive).",
        "* config `meta`: the run table in the public Reveal dataset's columns plus lab columns.",
        "",
        "```python",
        "from datasets import load_dataset",
        'ds = load_dataset("<this repo>")            # telemetry',
        'labels = load_dataset("<this repo>", "labels")',
        "```",
        "",
    ]
    src_readme = root / "README.md"
    if src_readme.exists():
        body += ["## Provenance (from the source folder's README)", "", src_readme.read_text()]
    (out / "README.md").write_text(card + "\n" + "\n".join(body))


@contextlib.contextmanager
def hub_request_timeouts(timeout_s: float) -> Iterator[None]:
    """Every request ``huggingface_hub`` makes inside the block times out after
    ``timeout_s`` seconds without progress (connect, each read, each write).

    huggingface_hub's shared HTTP client has no timeout of its own (``timeout=None``):
    a hub that accepts the connection and never answers would hold ``repo_info``,
    ``create_repo`` or an upload forever. Its download/etag timeouts are set too. The
    hub client still retries a timed-out request a few times with backoff, so a stalled
    hub ends the call after a bounded number of ``timeout_s`` periods. Restored on exit.
    """
    import huggingface_hub as hh
    from huggingface_hub import constants

    hh.close_session()  # the next get_session() is a fresh client from the default factory
    client = hh.get_session()
    limit = float(timeout_s)

    def cap_timeouts(request) -> None:  # noqa: ANN001 - an httpx request
        # hub calls pass timeout=None explicitly (no limit), which beats the client's
        # default: cap the request's own timeouts instead, just before it is sent
        t = dict(request.extensions.get("timeout") or {})
        request.extensions["timeout"] = {
            k: limit if t.get(k) is None else min(float(t[k]), limit)
            for k in ("connect", "read", "write", "pool")
        }

    hooks = client.event_hooks
    hooks["request"] = [*hooks.get("request", []), cap_timeouts]
    client.event_hooks = hooks
    saved = {k: getattr(constants, k) for k in ("HF_HUB_ETAG_TIMEOUT", "HF_HUB_DOWNLOAD_TIMEOUT")}
    for k in saved:
        setattr(constants, k, max(1, int(timeout_s + 0.999)))
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(constants, k, v)
        hooks = client.event_hooks
        hooks["request"] = [h for h in hooks.get("request", []) if h is not cap_timeouts]
        client.event_hooks = hooks


def _reachable(url: str, timeout: float) -> str | None:
    """``None`` when a TCP connection to ``url``'s host opens within ``timeout`` s, else why not."""
    u = urlparse(url)
    host, port = u.hostname or "huggingface.co", u.port or (443 if u.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"{host}:{port} unreachable ({exc})"


def push_hf(
    folder: str | Path,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool = False,
    timeout_s: float = 10.0,
    commit_message: str = "Upload reveal-lab lab dataset",
    allow_patterns: Sequence[str] | None = None,
) -> str:
    """Upload an :func:`export_hf` folder as dataset ``repo_id``; return the repository URL.

    Raises :class:`HubError` at once (before any upload) when the folder is not an export,
    when offline mode is on, when no token is found (``token``, ``$HF_TOKEN`` or a saved
    login) or when the hub cannot be reached within ``timeout_s``.
    """
    folder = Path(folder)
    if not (folder / "README.md").exists() or not any((folder / "data").glob("*.parquet")):
        raise HubError(
            f"{folder} is not an exported dataset folder (run `reveal-lab dataset export --hf {folder}`)"
        )
    if "/" not in repo_id or repo_id.count("/") != 1:
        raise HubError(f"repo id must look like 'user/name', got {repo_id!r}")
    try:
        import huggingface_hub as hh
    except ImportError as exc:  # pragma: no cover - in the hub extra
        raise HubError("huggingface_hub is not installed (pip install 'reveal-lab[hub]')") from exc
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise HubError("HF_HUB_OFFLINE is set: unset it to upload")
    token = token or os.environ.get("HF_TOKEN") or hh.get_token()
    if not token:
        raise HubError("no Hugging Face token: pass --token, set HF_TOKEN or run `hf auth login`")
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    why = _reachable(endpoint, timeout_s)
    if why:
        raise HubError(f"cannot reach the Hugging Face hub: {why}")
    api = hh.HfApi(endpoint=endpoint, token=token)
    try:
        with hub_request_timeouts(timeout_s):
            api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
            api.upload_folder(
                folder_path=str(folder),
                repo_id=repo_id,
                repo_type="dataset",
                commit_message=commit_message,
                allow_patterns=list(allow_patterns) if allow_patterns else None,
            )
    except Exception as exc:  # noqa: BLE001 - the hub client raises many types; say what failed
        raise HubError(f"upload to {repo_id} failed: {type(exc).__name__}: {exc}") from exc
    return f"{endpoint.rstrip('/')}/datasets/{repo_id}"
