"""Read the labelled-server layout (InterFusion's SMD/ASD conversion).

Per server ``NAME`` a folder holds::

    NAME_train.csv.gz                 rows x metrics, no header
    NAME_test.csv.gz                  same columns
    NAME_test_label.csv.gz            one 0/1 per test row
    NAME_interpretation_label.txt     ``start-end:d1,d2,...`` one segment a line

``start``/``end`` are 0-based test rows and ``d`` are **1-based** metric numbers. ASD
(``omi-*``) lines are end-inclusive, SMD (``machine-*``) lines end-exclusive; matching
segments end-inclusive (as InterFusion's ``cal_IPS`` does) covers both, and the scorer
only counts rows whose point label is 1, so the extra row of an end-exclusive line never
counts as a hit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reveal_lab.numeric import true_runs
from reveal_lab.telemetry import TelemetryError

__all__ = [
    "InterpretationSegment",
    "LabelledServer",
    "list_servers",
    "load_server",
    "read_matrix",
    "read_point_labels",
    "read_interpretation_labels",
    "label_runs",
    "server_family",
]

_TRAIN_SUFFIX = "_train.csv.gz"
_LINE_RE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*:\s*(\d+(?:\s*,\s*\d+)*)\s*,?\s*$")

#: families of the published sets, by the part of the server name before its first "-"
FAMILIES = {"machine": "SMD", "omi": "ASD"}


@dataclass(frozen=True)
class InterpretationSegment:
    """One labelled anomaly: rows ``start..end`` (both ends included, see module doc)
    and the 1-based metric numbers operators judged responsible."""

    start: int
    end: int
    metrics: tuple[int, ...]
    line: int

    def rows(self) -> range:
        return range(self.start, self.end + 1)


@dataclass(frozen=True)
class LabelledServer:
    name: str
    train: np.ndarray
    test: np.ndarray
    labels: np.ndarray
    segments: tuple[InterpretationSegment, ...]

    @property
    def n_metrics(self) -> int:
        return int(self.train.shape[1])

    @property
    def family(self) -> str:
        return server_family(self.name)


def server_family(name: str) -> str:
    """``SMD`` for ``machine-*``, ``ASD`` for ``omi-*``, else the name's first part.

    >>> server_family("machine-3-3"), server_family("omi-1"), server_family("web-2")
    ('SMD', 'ASD', 'web')
    """
    head = name.split("-", 1)[0]
    return FAMILIES.get(head, head)


def list_servers(data_dir: str | Path) -> list[str]:
    """Server names in ``data_dir`` (those with a ``NAME_train.csv.gz``), sorted."""
    d = Path(data_dir)
    if not d.is_dir():
        raise FileNotFoundError(f"{d}: not a directory (expected the labelled-servers layout)")
    names = sorted(p.name[: -len(_TRAIN_SUFFIX)] for p in d.glob(f"*{_TRAIN_SUFFIX}"))
    if not names:
        raise TelemetryError(
            f"no *{_TRAIN_SUFFIX} files; expected NAME_train.csv.gz, NAME_test.csv.gz, "
            "NAME_test_label.csv.gz, NAME_interpretation_label.txt",
            path=str(d),
        )
    return names


def _need(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing (labelled-servers layout needs it)")
    return path


def read_matrix(path: str | Path, *, n_cols: int | None = None) -> np.ndarray:
    """A header-less numeric CSV (optionally gzip) as ``float64[rows, cols]``.

    Raises :class:`TelemetryError` naming the line and column of a ragged row or a
    value that is not a finite number.
    """
    import gzip

    p = _need(Path(path))
    opener = gzip.open if p.name.endswith(".gz") else open
    rows: list[list[float]] = []
    width = n_cols
    try:
        _read_rows(p, opener, rows, width)
    except (gzip.BadGzipFile, EOFError, UnicodeDecodeError) as exc:
        what = "not a gzip file" if isinstance(exc, gzip.BadGzipFile) else "a damaged or non-text file"
        raise TelemetryError(
            f"{what} ({exc}); expected comma-separated numbers, gzip-compressed", path=str(p)
        ) from None
    if not rows:
        raise TelemetryError("no data rows", path=str(p))
    arr = np.asarray(rows, dtype=np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise TelemetryError(
            f"value {arr[r, c]} is not finite", path=str(p), line=int(r) + 1, column=str(c + 1)
        )
    return arr


def _read_rows(p: Path, opener, rows: list[list[float]], width: int | None) -> None:  # noqa: ANN001
    """Append the rows of ``p`` to ``rows`` (see :func:`read_matrix`)."""
    with opener(p, "rt") as fh:  # type: ignore[operator]
        for lineno, line in enumerate(fh, start=1):
            line = line.strip()
            if not line:
                continue
            parts = line.split(",")
            if width is None:
                width = len(parts)
            if len(parts) != width:
                raise TelemetryError(
                    f"expected {width} comma-separated values, found {len(parts)}", path=str(p), line=lineno
                )
            try:
                vals = [float(x) for x in parts]
            except ValueError:
                col = next(i for i, x in enumerate(parts) if not _is_float(x))
                raise TelemetryError(
                    f"value {parts[col]!r} is not a number", path=str(p), line=lineno, column=str(col + 1)
                ) from None
            rows.append(vals)


def _is_float(x: str) -> bool:
    try:
        float(x)
    except ValueError:
        return False
    return True


def read_point_labels(path: str | Path, *, n_rows: int | None = None) -> np.ndarray:
    """One 0/1 per line as ``int8[n]``; checks the count against ``n_rows``."""
    p = Path(path)
    arr = read_matrix(p, n_cols=1)[:, 0]
    bad = ~np.isin(arr, (0.0, 1.0))
    if bad.any():
        i = int(np.argmax(bad))
        raise TelemetryError(f"label {arr[i]} is not 0 or 1", path=str(p), line=i + 1)
    if n_rows is not None and arr.size != n_rows:
        raise TelemetryError(f"{arr.size} labels for {n_rows} test rows", path=str(p))
    return arr.astype(np.int8)


def read_interpretation_labels(
    path: str | Path, *, n_rows: int | None = None, n_metrics: int | None = None
) -> tuple[InterpretationSegment, ...]:
    """Parse ``start-end:d1,d2,...`` lines (see module doc for the end convention).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write("3-5:2,1\\n10-12:4")
    >>> [(s.start, s.end, s.metrics) for s in read_interpretation_labels(f.name)]
    [(3, 5, (2, 1)), (10, 12, (4,))]
    >>> os.unlink(f.name)
    """
    p = _need(Path(path))
    out: list[InterpretationSegment] = []
    for lineno, raw in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        m = _LINE_RE.match(raw)
        if m is None:
            raise TelemetryError(f"expected 'start-end:d1,d2,...', found {raw!r}", path=str(p), line=lineno)
        start, end = int(m.group(1)), int(m.group(2))
        dims = tuple(int(x) for x in m.group(3).split(","))
        if end < start:
            raise TelemetryError(f"segment end {end} before start {start}", path=str(p), line=lineno)
        if n_rows is not None and start >= n_rows:
            raise TelemetryError(
                f"segment start {start} beyond the {n_rows} test rows", path=str(p), line=lineno
            )
        if min(dims) < 1 or (n_metrics is not None and max(dims) > n_metrics):
            raise TelemetryError(
                f"metric numbers must be 1..{n_metrics or 'n'} (1-based), found {dims}",
                path=str(p),
                line=lineno,
            )
        out.append(InterpretationSegment(start, min(end, n_rows - 1) if n_rows else end, dims, lineno))
    return tuple(out)


def load_server(data_dir: str | Path, name: str) -> LabelledServer:
    """Read one server's train/test matrices, point labels and interpretation labels."""
    d = Path(data_dir)
    train = read_matrix(d / f"{name}_train.csv.gz")
    test = read_matrix(d / f"{name}_test.csv.gz", n_cols=train.shape[1])
    labels = read_point_labels(d / f"{name}_test_label.csv.gz", n_rows=test.shape[0])
    segs = read_interpretation_labels(
        d / f"{name}_interpretation_label.txt", n_rows=test.shape[0], n_metrics=train.shape[1]
    )
    return LabelledServer(name, train, test, labels, segs)


def label_runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """Runs of consecutive non-zero values as ``(start, end_exclusive)`` pairs.

    >>> label_runs(np.array([0, 1, 1, 0, 1]))
    [(1, 3), (4, 5)]
    """
    return true_runs(flags)
