"""Fault stressors, run as a stand-alone script inside a lab host: ``python _stress.py KIND ...``.

No package imports (starts in milliseconds on a loaded core). Each stressor prints
``ready`` on stdout once the stress is really on, then runs until SIGTERM.

* ``cpu [--procs N]``: N busy loops;
* ``memory --mib M --dir D``: hold M MiB of touched anonymous memory, then write files of
  M/8 MiB (at least 16) with ``fsync`` in a loop (dirty-page and writeback bursts that grow
  with M);
* ``read --path P [--duty D]``: sequential ``O_DIRECT`` reads of P, over and over, reading
  for a share D of every 200 ms (default 1: all the time);
* ``hog --mib M``: allocate M MiB of anonymous memory, touch every page, free it, again
  (memory traffic and page faults, no file I/O);
* ``write --mib M --dir D``: write a file of M MiB in 1 MiB writes and ``fsync`` it, over and
  over (writeback and storage writes);
* ``send --to ADDR [--port P] [--mib-s R]``: send over one TCP connection to ``sink`` at
  R MiB/s (default 50);
* ``sink [--port P]``: accept connections and read whatever comes.
"""

import argparse
import contextlib
import mmap
import os
import signal
import sys
import time


def _ready() -> None:
    sys.stdout.write("ready\n")
    sys.stdout.flush()


def _stress_cpu(procs: int) -> None:
    for _ in range(max(procs, 1) - 1):
        if os.fork() == 0:
            break
    _ready()
    x = 0
    while True:
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF


def _stress_memory(mib: int, workdir: str) -> None:
    os.makedirs(workdir, exist_ok=True)
    _ready()  # allocating and touching the memory is part of the pressure
    held = mmap.mmap(-1, mib << 20)
    page = mmap.PAGESIZE
    for off in range(0, mib << 20, page):  # touch every page: real resident memory
        held[off] = 1
    buf = os.urandom(4 << 20)
    path = os.path.join(workdir, f"dirty.{os.getpid()}.bin")
    chunks = max(mib // 8, 16) // 4  # M/8 MiB per file in 4 MiB writes (1 GiB held: 128 MiB)
    try:
        while True:
            with open(path, "wb") as fh:  # dirty pages, then force writeback
                for _ in range(chunks):
                    fh.write(buf)
                fh.flush()
                os.fsync(fh.fileno())
            time.sleep(0.2)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _stress_read(path: str, duty: float = 1.0) -> None:
    if not 0 < duty <= 1:
        raise SystemExit(f"--duty must be in (0, 1], got {duty}")
    period = 0.2
    bs = 1 << 20
    buf = mmap.mmap(-1, bs)  # page-aligned buffer, as O_DIRECT needs
    flags = os.O_RDONLY | getattr(os, "O_DIRECT", 0)
    fd = os.open(path, flags)
    os.readv(fd, [buf])
    os.close(fd)
    _ready()
    fd = os.open(path, flags)
    try:
        while True:
            t0 = time.monotonic()
            while time.monotonic() - t0 < duty * period:
                if os.readv(fd, [buf]) < bs:  # end of the file: from the start again
                    os.lseek(fd, 0, os.SEEK_SET)
            rest = period - (time.monotonic() - t0)
            if duty < 1 and rest > 0:
                time.sleep(rest)
    finally:
        os.close(fd)


def _stress_hog(mib: int) -> None:
    page = mmap.PAGESIZE
    _ready()
    while True:
        held = mmap.mmap(-1, mib << 20)
        for off in range(0, mib << 20, page):  # touch every page: real resident memory
            held[off] = 1
        held.close()


def _stress_write(mib: int, workdir: str) -> None:
    os.makedirs(workdir, exist_ok=True)
    buf = os.urandom(1 << 20)
    path = os.path.join(workdir, f"write.{os.getpid()}.bin")
    _ready()
    try:
        while True:
            with open(path, "wb") as fh:
                for _ in range(max(mib, 1)):
                    fh.write(buf)
                fh.flush()
                os.fsync(fh.fileno())
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _stress_send(addr: str, port: int, mib_s: float) -> None:
    import socket

    buf = b"\0" * (256 << 10)
    per_s = mib_s * 4  # 256 KiB sends a second
    for _ in range(100):  # the sink may still be starting
        try:
            sock = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            time.sleep(0.05)
    else:
        raise SystemExit(f"send: no sink at {addr}:{port}")
    _ready()
    t0, n = time.monotonic(), 0
    while True:
        sock.sendall(buf)
        n += 1
        ahead = n / per_s - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)


def _stress_sink(port: int) -> None:
    import socket
    import threading

    srv = socket.create_server(("", port), reuse_port=False)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def drain(conn: socket.socket) -> None:
        with conn:
            while conn.recv(1 << 20):
                pass

    _ready()
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=drain, args=(conn,), daemon=True).start()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="_stress.py", description="lab fault stressors")
    sub = p.add_subparsers(dest="kind", required=True)
    c = sub.add_parser("cpu")
    c.add_argument("--procs", type=int, default=1)
    m = sub.add_parser("memory")
    m.add_argument("--mib", type=int, default=1024)
    m.add_argument("--dir", default="/var/tmp/reveal_lab")
    r = sub.add_parser("read")
    r.add_argument("--path", required=True)
    r.add_argument("--duty", type=float, default=1.0)
    h = sub.add_parser("hog")
    h.add_argument("--mib", type=int, default=1024)
    w = sub.add_parser("write")
    w.add_argument("--mib", type=int, default=64)
    w.add_argument("--dir", default="/var/tmp/reveal_lab")
    s = sub.add_parser("send")
    s.add_argument("--to", required=True)
    s.add_argument("--port", type=int, default=5201)
    s.add_argument("--mib-s", type=float, default=50.0)
    k = sub.add_parser("sink")
    k.add_argument("--port", type=int, default=5201)
    a = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # run `finally` blocks on stop
    if a.kind == "cpu":
        _stress_cpu(a.procs)
    elif a.kind == "memory":
        _stress_memory(a.mib, a.dir)
    elif a.kind == "hog":
        _stress_hog(a.mib)
    elif a.kind == "write":
        _stress_write(a.mib, a.dir)
    elif a.kind == "send":
        _stress_send(a.to, a.port, a.mib_s)
    elif a.kind == "sink":
        _stress_sink(a.port)
    else:
        _stress_read(a.path, a.duty)
    return 0


if __name__ == "__main__":
    sys.exit(main())
