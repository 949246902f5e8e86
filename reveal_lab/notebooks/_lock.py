"""One reproduction at a time per output folder: an ``flock`` on ``OUT/.reproduce.lock``,
held while the notebooks run and ``index.html`` is written; a second reproduction into
the same folder is refused, naming the holder.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> with output_lock(d):
...     try:
...         with output_lock(d):
...             pass
...     except ReproductionRunning as exc:
...         print(str(exc).split(" (pid")[0])
another reproduction
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["LOCK_FILE", "ReproductionRunning", "output_lock"]

LOCK_FILE = ".reproduce.lock"


class ReproductionRunning(RuntimeError):
    """Another reproduction holds the output folder's lock."""


@contextlib.contextmanager
def output_lock(out: Path) -> Iterator[Path]:
    """Hold ``out``'s lock for the block; :class:`ReproductionRunning` at once when another
    process holds it (the lock is released when its holder ends, however it ends)."""
    import fcntl

    path = Path(out) / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "pid unknown"
        os.close(fd)
        raise ReproductionRunning(
            f"another reproduction ({holder}) is writing into {out} (it holds {path}); "
            "wait for it to end or give another --out"
        ) from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, started {dt.datetime.now():%Y-%m-%d %H:%M:%S}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)
