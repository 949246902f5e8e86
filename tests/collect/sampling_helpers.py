"""A change made to a collector's host while it samples (the collector running in this process)."""

from __future__ import annotations

import contextlib
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
