"""CLAIMS.md is written from the run's CSV: its counts are the rows' statuses, every claim of
the catalogue is in it with its reason, and docs/CLAIMS.md is such a document (its counts
recomputed from its own rows, every claim of today's catalogue present), not prose that can
go stale."""

from __future__ import annotations

import re

import polars as pl

from reveal_lab.config import PROJECT_ROOT
from reveal_lab.studies import CLAIMS, CLAIMS_DOC, claims_markdown, paper_vs_reproduced, save_table
from reveal_lab.studies._claims_doc import MARKS, doc_counts

DOC = PROJECT_ROOT / "docs" / CLAIMS_DOC


def _counts_table(text: str) -> dict[str, tuple[int, int, int]]:
    """The Counts section's rows: label -> (reproduced, differ, cannot)."""
    part = text.split("## Counts", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([^|]+?) \| (\d+) \| (\d+) \| (\d+) \|$", part, re.MULTILINE)
    return {label: (int(a), int(b), int(c)) for label, a, b, c in rows}


def _marks(text: str, column: int) -> dict[str, str]:
    """Claim id -> the status mark of its finding row in ``column`` (2: paper's method, 3: default)."""
    part = text.split("## Findings by section", 1)[1].split("\n## Settings", 1)[0]
    rows = [r for r in part.splitlines() if r.startswith("| `")]
    cells = [re.split(r"(?<!\\)\|", r)[1:-1] for r in rows]
    return {
        re.match(r"\s*`([^`]+)`", c[0]).group(1): re.search(r"\((✓|✗|n/a)\)\s*$", c[column].strip()).group(1)
        for c in cells
    }


def test_the_document_is_the_csv(tmp_path):
    save_table(
        pl.DataFrame(
            {
                "run_id": ["a"],
                "workload": ["w"],
                "platform": ["lab"],
                "n_metrics": [701],
                "interval_ms": [100.0],
            }
        ),
        tmp_path,
        "dataset_runs",
    )
    df = paper_vs_reproduced(tmp_path, data="data/lab")
    text = claims_markdown(df, source="test.csv")
    c = doc_counts(df)
    table = _counts_table(text)
    assert table["the paper's method"] == tuple(c["status_paper_method"].values())
    assert table["reveal-lab's default"] == tuple(c["status_default"].values())
    for col, index in (("status_paper_method", 2), ("status_default", 3)):
        found = df.filter(pl.col("kind") == "finding")
        assert _marks(text, index) == {
            i: MARKS[s] for i, s in zip(found["claim_id"], found[col], strict=True)
        }
    assert all(f"`{c.claim_id}`" in text for c in CLAIMS)
    assert "tables/dtw_summary.csv not in the output" in text  # a reason, from the row's note


def test_docs_claims_md_is_a_written_document():
    text = DOC.read_text()
    assert "written by reveal_lab.studies.write_claims_doc" in text
    table = _counts_table(text)
    for label, index in (("the paper's method", 2), ("reveal-lab's default", 3)):
        marks = list(_marks(text, index).values())
        assert table[label] == (marks.count("✓"), marks.count("✗"), marks.count("n/a")), label
    missing = [c.claim_id for c in CLAIMS if f"`{c.claim_id}`" not in text]
    assert not missing, (
        f"docs/CLAIMS.md predates these claims: write it again (scripts/claims_doc.py): {missing}"
    )
