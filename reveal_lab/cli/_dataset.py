"""``reveal-lab dataset ...``: describe, fetch, convert and share datasets.

The ``dataset`` group is assembled from several modules so each part of the
product adds its own verbs: ``_dataset_public`` (ls, info, pull),
``_dataset_tsv`` (export-tsv) and ``_dataset_hf`` (export --hf, push).
"""

from __future__ import annotations

import importlib

PARTS = ("_dataset_public", "_dataset_tsv", "_dataset_hf")


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = sub.add_parser("dataset", help="describe, fetch, convert and share telemetry datasets")
    verbs = p.add_subparsers(dest="dataset_command", metavar="VERB")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    for part in PARTS:
        importlib.import_module(f"reveal_lab.cli.{part}").register(verbs)  # a missing one is an error
