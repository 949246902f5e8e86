"""Where the dataset's run files live: members of zip archives or files in
``*_separated`` folders (found up to two levels deep), never read here."""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from reveal_lab.telemetry import TelemetryError

#: ``train_separated`` / ``infer_separated`` (and the misspelt ``*_seperated``)
SPLIT_DIR_RE = re.compile(r"^(?P<split>[A-Za-z]+)_sep[ae]rated$")
MEMBER_SUFFIXES: dict[str, str] = {".txt": "tsv", ".tsv": "tsv", ".parquet": "parquet"}


@dataclass
class _Member:
    member: str  # path inside the archive, or the file's path
    archive: str | None
    split: str
    size: int
    container: str  # zip stem or folder holding the split folders


def _zip_members(path: Path, skipped: list[str]) -> list[_Member]:
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except zipfile.BadZipFile as exc:
        raise TelemetryError(
            f"not a readable zip archive ({exc}); re-download it (reveal-lab dataset pull) or check the copy",
            path=str(path),
        ) from None
    except OSError as exc:
        raise TelemetryError(f"cannot read the archive ({exc})", path=str(path)) from None
    out = []
    for info in infos:
        if info.is_dir():
            continue
        parts = PurePosixPath(info.filename).parts
        if any(p == "__MACOSX" for p in parts) or parts[-1].startswith("."):
            continue  # macOS metadata (.DS_Store, ._*): not data
        split = SPLIT_DIR_RE.match(parts[-2]) if len(parts) >= 2 else None
        if split is None or PurePosixPath(parts[-1]).suffix.lower() not in MEMBER_SUFFIXES:
            skipped.append(f"{path}::{info.filename}")
            continue
        out.append(_Member(info.filename, str(path), split.group("split").lower(), info.file_size, path.stem))
    return out


def _dir_members(split_dir: Path, skipped: list[str]) -> list[_Member]:
    split = SPLIT_DIR_RE.match(split_dir.name)
    assert split is not None
    out = []
    for p in sorted(split_dir.iterdir()):
        if p.name.startswith(".") or p.is_dir():
            if p.is_dir():
                skipped.append(str(p))
            continue
        if p.suffix.lower() not in MEMBER_SUFFIXES:
            skipped.append(str(p))
            continue
        out.append(
            _Member(str(p), None, split.group("split").lower(), p.stat().st_size, split_dir.parent.name)
        )
    return out


def _find_split_dirs(root: Path, depth: int = 2) -> list[Path]:
    found = []
    for d in sorted(root.iterdir()):
        if not d.is_dir() or d.name.startswith(".") or d.name == "__MACOSX":
            continue
        if SPLIT_DIR_RE.match(d.name):
            found.append(d)
        elif depth > 0:
            found += _find_split_dirs(d, depth - 1)
    return found
