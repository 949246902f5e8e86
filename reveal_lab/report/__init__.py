"""The anomaly report (``anomalies.csv``, ``summary.json``, ``report.md``, ``report.html``)
and the project's one table writer (CSV, Markdown, and cells for the HTML templates)."""

from reveal_lab.report._tables import flatten_nested, format_cell, markdown_table, table_cells, write_table
from reveal_lab.report._templates import render
from reveal_lab.report._write import ANOMALIES_COLUMNS, REPORT_FILES, write_report

__all__ = [
    "write_report",
    "ANOMALIES_COLUMNS",
    "REPORT_FILES",
    "format_cell",
    "markdown_table",
    "table_cells",
    "flatten_nested",
    "write_table",
    "render",
]
