"""Write docs/CLAIMS.md from a reproduction's paper_vs_reproduced.csv (never by hand).

    .venv/bin/python scripts/claims_doc.py OUT [DEST]

OUT: a ``reveal-lab reproduce`` output folder; DEST: default ``docs/CLAIMS.md``. The document
is the one the reproduction wrote as ``OUT/CLAIMS.md``, written again from the same CSV.
"""

from __future__ import annotations

import sys
from pathlib import Path

from reveal_lab.config import PROJECT_ROOT
from reveal_lab.studies import write_claims_doc


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if not 1 <= len(args) <= 2:
        print(__doc__, file=sys.stderr)
        return 2
    csv = Path(args[0]) / "paper_vs_reproduced.csv"
    if not csv.is_file():
        print(f"claims_doc: {csv} does not exist: give a reproduce output folder", file=sys.stderr)
        return 2
    dest = Path(args[1]) if len(args) == 2 else PROJECT_ROOT / "docs" / "CLAIMS.md"
    print(write_claims_doc(args[0], dest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
