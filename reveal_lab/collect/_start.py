"""A collector run's start: its folder, lock and space reserve, undone when the start fails."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from reveal_lab.collect._format import CHANNELS_FILE, LOCK_FILE, META_FILE, RESERVE_FILE, journal_name
from reveal_lab.collect._writer import DiskFull

__all__ = ["RESERVE_BYTES", "RunStart"]

#: space kept free at start (a file deleted on a full disk) so that ``meta.json`` can
#: still say ``disk-full`` at the end
RESERVE_BYTES = 64 * 1024


class RunStart:
    """What a starting collector created in its run folder, its lock, and its space
    reserve; :meth:`undo` removes what it created when the start fails.

    The lock is an ``flock`` on ``OUT/.lock`` held for the whole run: a second
    collector into the same folder is refused and never shares the journal.
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self.created: list[Path] = []  # files and the folder itself, in creation order
        self.writing = False  # past the checks: the run files are ours
        self.started = False
        self.lock_fd: int | None = None

    def lock(self) -> None:
        import fcntl

        if not self.out.exists():
            try:
                self.out.mkdir(parents=True)
            except FileExistsError:
                pass  # another collector made it a moment ago: the lock decides
            except OSError as exc:
                raise RuntimeError(f"cannot create the output directory {self.out}: {exc.strerror}") from None
            else:
                self.created.append(self.out)
        path = self.out / LOCK_FILE
        existed = path.exists()
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise RuntimeError(f"cannot create the lock file {path}: {exc.strerror}") from None
        if not existed:
            self.created.append(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                pid = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            finally:
                os.close(fd)
            raise RuntimeError(
                f"another collector (pid {pid}) is writing into {self.out} (it holds {path}); "
                "choose another --out"
            ) from None
        self.lock_fd = fd
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the pid is informative only; the flock is the lock

    def reserve(self, nbytes: int) -> None:
        path = self.out / RESERVE_FILE
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                try:
                    os.posix_fallocate(fd, 0, nbytes)
                except OSError as exc:
                    if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                        raise
                    os.write(fd, b"\0" * nbytes)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFull(errno.ENOSPC, f"disk full at start: cannot write into {self.out}") from exc
            raise

    def release_reserve(self) -> None:
        try:
            os.unlink(self.out / RESERVE_FILE)
        except OSError:
            pass

    def undo(self) -> None:
        if self.started:
            return
        files = [self.out / n for n in (RESERVE_FILE, journal_name(0), CHANNELS_FILE, META_FILE)]
        files += [f.with_name(f.name + ".tmp") for f in files]
        for path in (files if self.writing else []) + [p for p in self.created if p != self.out]:
            if path.name == LOCK_FILE:
                self.unlock()
            try:
                path.unlink()
            except OSError:
                pass
        if self.out in self.created:
            try:
                self.out.rmdir()  # only when empty: never removes what someone else wrote
            except OSError:
                pass

    def unlock(self) -> None:
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None
