"""A long-lived child process whose output a probe reads line by line without blocking
(``perf stat -I``, ``turbostat``, ``nvidia-smi -lms``): one start, non-blocking drains
of everything that arrived since the last tick, a clean stop."""

from __future__ import annotations

import os
import subprocess

__all__ = ["ChildLines"]


class ChildLines:
    """Start ``cmd`` with its ``stream`` (``"stdout"`` or ``"stderr"``) on a non-blocking
    pipe; the other output goes to ``/dev/null``.

    :meth:`lines` returns the complete lines that arrived since the last call (a partial
    last line waits for its end); :attr:`eof` turns true once the child closed the pipe.
    """

    def __init__(self, cmd: list[str], stream: str = "stdout") -> None:
        if stream not in ("stdout", "stderr"):
            raise ValueError(f"stream must be 'stdout' or 'stderr', got {stream!r}")
        out = subprocess.PIPE if stream == "stdout" else subprocess.DEVNULL
        err = subprocess.PIPE if stream == "stderr" else subprocess.DEVNULL
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, close_fds=True)
        self._pipe = self.proc.stdout if stream == "stdout" else self.proc.stderr
        self.fd = self._pipe.fileno()  # type: ignore[union-attr]
        os.set_blocking(self.fd, False)
        self._buf = b""
        self.eof = False

    def lines(self) -> list[bytes]:
        """Complete lines read since the last call, without their newlines."""
        chunks = []
        while True:
            try:
                b = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not b:
                self.eof = True
                break
            chunks.append(b)
        if not chunks:
            return []
        data = self._buf + b"".join(chunks)
        end = data.rfind(b"\n") + 1
        self._buf = data[end:]
        return data[: end - 1].split(b"\n") if end else []

    def stop(self, timeout: float = 3) -> None:
        """Terminate the child (kill it if it does not exit within ``timeout``) and close the pipe."""
        proc = self.proc
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._pipe is not None:
            self._pipe.close()
