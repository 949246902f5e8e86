"""Helpers for the collector tests: run ``reveal-lab collect`` as a real child process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

CLI = [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())"]


def collect_cmd(out: Path, *args: str) -> list[str]:
    return [*CLI, "collect", "--out", str(out), *args]


def run_collect(out: Path, *args: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(collect_cmd(out, *args), capture_output=True, text=True, timeout=timeout, **kw)


def net_interfaces() -> list[str]:
    """This network namespace's interfaces besides ``lo``, as the netdev probe sees them: a
    runner in a network-less sandbox has none, and the probe is then skipped, not broken."""
    lines = Path("/proc/self/net/dev").read_text().splitlines()[2:]
    return [n for n in (ln.split(":", 1)[0].strip() for ln in lines) if n and n != "lo"]


def wait_for(path: Path, timeout: float = 180) -> None:
    """Wait until ``path`` exists (e.g. a run's ``channels.json``: the collector started).

    The timeout only ends a hung wait: a collector's start-up includes compiling its numba
    loop when the cache is cold, which took over 20 s on a loaded 2-core machine."""
    t = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > t:
            raise TimeoutError(f"{path} did not appear")
        time.sleep(0.05)


def wait_for_chunks(run: Path, n: int, timeout: float = 60) -> None:
    """Wait until the run's journal holds ``n`` chunks (one per flush, each written whole by
    one write): the collector has flushed ``n`` times."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if sum(p.read_bytes().count(b"RVLC") for p in run.glob("journal-*.bin")) >= n:
            return
        time.sleep(0.05)
    raise TimeoutError(f"{run}: fewer than {n} journal chunks after {timeout} s")


def journal_chunk_sizes(path: Path) -> list[int]:
    """Samples per chunk, read by the layout FORMAT.md documents (independently of the
    reader): a 24-byte header, then ``RVLC``, crc32 (u32), n (u32), len (u32), payload."""
    data = path.read_bytes()
    pos, sizes = 24, []
    while pos + 16 <= len(data) and data[pos : pos + 4] == b"RVLC":
        n, length = int.from_bytes(data[pos + 8 : pos + 12], "little"), int.from_bytes(data[pos + 12 : pos + 16], "little")
        sizes.append(n)
        pos += 16 + length
    assert pos == len(data), f"{len(data) - pos} bytes after the last whole chunk"
    return sizes
