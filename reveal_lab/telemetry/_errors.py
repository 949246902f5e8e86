"""The errors and warnings of telemetry input (no polars: the collector raises them too)."""

from __future__ import annotations

__all__ = ["TelemetryError", "TelemetryWarning"]


class TelemetryError(ValueError):
    """Bad telemetry input. The message names the file, line and/or column."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 column: str | None = None) -> None:
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if column is not None:
            where.append(f"column {column!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.path, self.line, self.column = path, line, column


class TelemetryWarning(UserWarning):
    """Something odd but recoverable in telemetry input (recorded on the run too)."""
