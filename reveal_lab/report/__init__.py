"""The anomaly report an operator reads: CSV evidence, JSON summary, Markdown and HTML."""

from reveal_lab.report._write import ANOMALIES_COLUMNS, REPORT_FILES, write_report

__all__ = ["write_report", "ANOMALIES_COLUMNS", "REPORT_FILES"]
