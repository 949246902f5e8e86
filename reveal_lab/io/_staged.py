"""Output folders written whole or not at all.

A command writes its folder into a hidden sibling, ``.NAME.partial-PID``, and moves it into
place when everything is written (:meth:`StagedFolder.commit`): a reader never sees a folder
that mixes two runs, or one run's first files beside an older run's last ones. A failed or
interrupted run removes its sibling (:meth:`StagedFolder.discard`, also at interpreter exit
and on ``SIGTERM`` through the CLI); one killed outright leaves the sibling, whose name says
it is partial, and the target as it was.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> with staged_folder(d / "out") as tmp:
...     _ = (tmp / "a.txt").write_text("new")
...     (d / "out").exists()
False
>>> sorted(p.name for p in d.iterdir()), (d / "out" / "a.txt").read_text()
(['out'], 'new')
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shutil
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = ["StagedFolder", "staged_folder", "check_not_nested"]


def _rmtree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


class StagedFolder:
    """Write ``target`` through a hidden sibling; :meth:`commit` moves it into place.

    Parameters
    ----------
    target : the folder the user asked for.
    ours : names (glob patterns) of the entries this command writes. An existing ``target``
        holding only such entries (a previous run's output) is replaced whole; one holding
        other entries too keeps them, and only the entries matching ``ours`` are replaced
        (stale ones removed), each by an atomic rename. ``None``: ``target`` must be absent
        or empty unless ``overwrite``.
    overwrite : with ``ours=None``, replace a non-empty ``target`` whole.

    Raises ``FileExistsError`` at once when ``target`` is a file, or non-empty without
    ``overwrite`` (``ours=None``), so no work is done for an output that cannot be written.
    """

    def __init__(
        self, target: str | Path, *, ours: Iterable[str] | None = None, overwrite: bool = False
    ) -> None:
        self.target = Path(target)
        self.ours = None if ours is None else tuple(ours)
        self.overwrite = overwrite
        if self.target.exists() and not self.target.is_dir():
            raise FileExistsError(f"{self.target} is a file; give a folder (made if missing)")
        if self.ours is None and not overwrite and _non_empty(self.target):
            raise FileExistsError(f"{self.target} is not empty (use --overwrite to replace it)")
        self._abs = Path(os.path.abspath(self.target))  # "." and "a/.." named as folders
        parent = self._abs.parent
        parent.mkdir(parents=True, exist_ok=True)
        self.path = parent / f".{self._abs.name}.partial-{os.getpid()}"
        if self.path.exists():
            shutil.rmtree(self.path)
        # the clean-up is registered before the folder exists: a signal that arrives (as
        # SystemExit) right after mkdir still finds it, and removes the folder
        self._cleanup = weakref.finalize(self, _rmtree, str(self.path))
        self.path.mkdir()

    def _is_ours(self, name: str) -> bool:
        return self.ours is not None and any(fnmatch.fnmatch(name, p) for p in self.ours)

    def commit(self) -> Path:
        """Move the written folder into place; returns ``target``."""
        t = self._abs
        # the working folder (or one above it) is never renamed away under the user's shell
        holds_cwd = t == Path.cwd() or t in Path.cwd().parents
        if not t.exists():
            os.replace(self.path, t)
        elif not holds_cwd and (self.ours is None or all(self._is_ours(p.name) for p in t.iterdir())):
            old = t.parent / f".{t.name}.old-{os.getpid()}"
            os.replace(t, old)
            os.replace(self.path, t)
            shutil.rmtree(old, ignore_errors=True)
        else:  # the user's own files stay; ours are replaced one rename each
            new = {p.name for p in self.path.iterdir()}
            for p in t.iterdir():
                if (self.ours is None or self._is_ours(p.name)) and p.name not in new:
                    shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
            for name in sorted(new):
                dest = t / name
                if dest.is_dir() and not dest.is_symlink():
                    shutil.rmtree(dest)
                os.replace(self.path / name, dest)
            self.path.rmdir()
        self._cleanup.detach()
        return self.target

    def discard(self) -> None:
        """Remove the partial folder; ``target`` stays as it was."""
        self._cleanup()


def _non_empty(p: Path) -> bool:
    return p.is_dir() and any(p.iterdir())


@contextlib.contextmanager
def staged_folder(
    target: str | Path, *, ours: Iterable[str] | None = None, overwrite: bool = False
) -> Iterator[Path]:
    """A :class:`StagedFolder` as a context: yields the folder to write into, commits on
    success, discards on any exception (``KeyboardInterrupt`` included)."""
    stage = StagedFolder(target, ours=ours, overwrite=overwrite)
    try:
        yield stage.path
    except BaseException:
        stage.discard()
        raise
    stage.commit()


def check_not_nested(source: str | Path, target: str | Path, *, flag: str = "--out") -> None:
    """Refuse a ``target`` that is, contains or lies inside ``source`` (resolved paths,
    symbolic links followed): replacing it would delete what is being read.

    >>> check_not_nested("/data/lab", "/data/lab/export")
    Traceback (most recent call last):
    ...
    ValueError: --out /data/lab/export lies inside the source /data/lab; give a folder outside it
    """
    s, t = Path(source).resolve(), Path(target).resolve()
    if s == t:
        raise ValueError(f"{flag} {target} is the source folder itself; give another folder")
    if t in s.parents:
        raise ValueError(f"{flag} {target} contains the source {source}; give a folder outside it")
    if s in t.parents:
        raise ValueError(f"{flag} {target} lies inside the source {source}; give a folder outside it")
