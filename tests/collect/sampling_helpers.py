"""A change made to a collector's host while it samples (the collector running in this process)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def while_sampling(out: Path, change: Callable[[], Any], delay_s: float = 0.3) -> Iterator[list[Any]]:
    """Run ``change()`` in a thread ``delay_s`` after the run in ``out`` began sampling (its
    ``meta.json`` written) while the block runs the collector; the list yielded gets what
    ``change`` returned once the block is left (the thread joined)."""
    done: list[Any] = []

    def run() -> None:
        deadline = time.monotonic() + 60
        while not (out / "meta.json").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(delay_s)
        done.append(change())

    t = threading.Thread(target=run)
    t.start()
    try:
        yield done
    finally:
        t.join()


def fail_reads(dir_: Path | str, match: Callable[[str], bool]) -> int:
    """Make every open descriptor of this process whose path ``match`` es fail to read, as a
    removed cgroup's or disk's files do: each replaced by a descriptor of the directory
    ``dir_`` (``EISDIR``); how many."""
    d = os.open(dir_, os.O_RDONLY | os.O_DIRECTORY)
    n = 0
    try:
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if match(target):
                os.dup2(d, int(fd))
                n += 1
    finally:
        os.close(d)
    return n
