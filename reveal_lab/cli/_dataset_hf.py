"""``reveal-lab dataset export --hf DIR`` and ``reveal-lab dataset push DIR --repo-id NAME``."""

from __future__ import annotations

import argparse

from reveal_lab.cli._ranges import float_in, int_in


def register(verbs) -> None:  # noqa: ANN001 - argparse's private subparsers type
    e = verbs.add_parser(
        "export",
        help="write a dataset as a Hugging Face dataset repository folder",
        description="Write the lab dataset (default: the bundled data/lab) as a Hugging Face "
        "dataset folder: Parquet shards with one schema, meta/labels CSVs and a "
        "dataset card with YAML configs and features; `datasets.load_dataset(DIR)` "
        "loads it.",
    )
    e.add_argument("--hf", required=True, metavar="DIR", help="the repository folder to write")
    e.add_argument(
        "--data", default=None, help="source dataset folder (default: data/lab or $REVEAL_DATA_DIR)"
    )
    e.add_argument(
        "--runs-per-shard",
        type=int_in(1, 100_000),
        default=8,
        help="runs per Parquet shard (default 8)",
    )
    e.add_argument("--overwrite", action="store_true", help="replace DIR if it is not empty")
    e.set_defaults(func=_export)
    p = verbs.add_parser(
        "push",
        help="upload an exported folder to the Hugging Face hub (network + token)",
        description="Upload a folder written by `dataset export --hf` as a dataset repository. "
        "Needs network access and a token (--token, $HF_TOKEN or a saved login); "
        "fails fast with a clear message otherwise.",
    )
    p.add_argument("folder", metavar="DIR")
    p.add_argument("--repo-id", required=True, metavar="NAME", help="user/name of the dataset repository")
    p.add_argument("--token", default=None)
    p.add_argument("--private", action="store_true")
    p.add_argument(
        "--timeout",
        type=float_in(0, 3600, low_open=True, what="seconds"),
        default=10.0,
        help="seconds any hub request may go without an answer (connect, each read and write; "
        "default 10); a hub that never answers ends the upload after a few retries",
    )
    p.set_defaults(func=_push)


def _export(args: argparse.Namespace) -> int:
    from reveal_lab.lab import export_hf

    out = export_hf(args.data, args.hf, runs_per_shard=args.runs_per_shard, overwrite=args.overwrite)
    shards = sorted(p.name for p in (out / "data").glob("*.parquet"))
    print(f"wrote {out}: {len(shards)} shards ({', '.join(shards)}), README.md, meta_lab.csv, labels.csv")
    return 0


def _push(args: argparse.Namespace) -> int:
    import sys

    from reveal_lab.lab import HubError, push_hf

    try:
        url = push_hf(
            args.folder, args.repo_id, token=args.token, private=args.private, timeout_s=args.timeout
        )
    except HubError as exc:
        print(f"reveal-lab dataset push: error: {exc}", file=sys.stderr)
        return 1
    print(f"uploaded {args.folder} to {url}")
    return 0
