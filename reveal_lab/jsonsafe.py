"""The one NaN-safe JSON writer: strict JSON (NaN and infinities as ``null``) from results that
hold numpy scalars, dates and floats that may not be finite.

>>> import numpy as np
>>> dumps({"a": float("nan"), "b": np.int64(3), "c": [np.float64(1.5), float("inf")]})
'{"a": null, "b": 3, "c": [1.5, null]}'
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["json_safe", "dumps", "write_json"]


def json_safe(obj: Any) -> Any:  # noqa: ANN401 - any JSON-like tree
    """``obj`` with NaN/inf as ``None`` and numpy scalars as Python numbers, recursively
    through dicts (keys as strings), lists and tuples."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    if hasattr(obj, "item") and hasattr(obj, "dtype") and getattr(obj, "ndim", 1) == 0:
        obj = obj.item()  # a numpy scalar
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _default(o: Any) -> Any:  # noqa: ANN401
    """What JSON cannot hold: dates as ISO 8601, arrays as lists, anything else as text."""
    if hasattr(o, "isoformat"):
        return o.isoformat()
    if hasattr(o, "tolist"):
        return json_safe(o.tolist())
    return str(o)


def dumps(obj: Any, *, indent: int | None = None, default: Callable[[Any], Any] = _default) -> str:  # noqa: ANN401
    """Strict JSON text of ``obj`` (:func:`json_safe`; ``default`` for what JSON has no type
    for: dates as ISO 8601 unless given otherwise)."""
    return json.dumps(json_safe(obj), indent=indent, default=default, allow_nan=False)


def write_json(path: str | Path, obj: Any, *, indent: int = 2, default: Callable[[Any], Any] = _default) -> Path:  # noqa: ANN401
    """:func:`dumps` of ``obj`` into ``path`` (a newline at the end); returns the path."""
    path = Path(path)
    path.write_text(dumps(obj, indent=indent, default=default) + "\n")
    return path
