"""Which run a path names, whatever the spelling: relative or absolute, through a symbolic
link, or a byte-for-byte copy.

>>> import tempfile, pathlib, shutil
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "a.parquet").write_bytes(b"one run")
>>> _ = shutil.copy(d / "a.parquet", d / "copy.parquet")
>>> run_identity(d / "a.parquet") == run_identity(d / "copy.parquet") == run_identity(d / "." / "a.parquet")
True
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["run_identity"]


def run_identity(spec: str | Path) -> str:
    """A key equal for two specs that name the same run: the content digest of a regular
    file (``ARCHIVE.zip::member``: the archive's digest and the member), the resolved path of
    a folder (a collector run) or of anything else."""
    text = str(spec)
    path, sep, member = text.partition("::")
    p = Path(path).expanduser()
    try:
        rp = p.resolve()
    except OSError:
        return text
    if rp.is_file():
        h = hashlib.blake2b(digest_size=16)
        with open(rp, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return f"sha:{h.hexdigest()}{sep}{member}"
    return f"path:{rp}{sep}{member}"
