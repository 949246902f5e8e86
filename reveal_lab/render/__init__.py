"""Rendering results for people: the one table writer (CSV, Markdown, the cells of an
HTML table) and the page templates (``templates/*.html.j2``: ``report.html``,
``index.html``), used by the report, the studies and the reproduce index alike."""

from reveal_lab.render._tables import flatten_nested, format_cell, markdown_table, table_cells, write_table
from reveal_lab.render._templates import TEMPLATES, render

__all__ = ["format_cell", "markdown_table", "table_cells", "flatten_nested", "write_table", "render", "TEMPLATES"]
