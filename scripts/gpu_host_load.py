#!/usr/bin/env python
"""The load of a GPU-host recording: a training job that logs its step times, and the
interference injected beside it. Standalone: the standard library and PyTorch (numpy for host
memory pressure), so it runs on a lent GPU machine that has PyTorch but not this project.

    python scripts/gpu_host_load.py job --device cuda --duration 60 --steps steps.csv
    python scripts/gpu_host_load.py interfere gpu_cotenant_compute --duration 15 --log fault.json

``job``: a Transformer encoder trained in bf16 on random token batches (on ``cuda``: 10 layers,
d_model 2048, ~635 M parameters, batches of 8 x 1024, the shape of the shared ``gpu-a``
recording; ``--size small`` a 2-layer d_model 64 one for a CPU check), SGD, with a CPU thread
preparing each batch ahead of the step (random tokens and a sort of 800 k floats): GPU-bound
with a CPU-side loader. Each step appends ``t,step_s`` (wall start in epoch seconds, duration,
the device synchronised) to ``--steps``, flushed, so a killed job keeps what it did.

``interfere KIND``: one kind of interference for ``--duration`` seconds (:data:`KINDS`), then
one JSON line appended to ``--log``: ``kind``, ``start`` and ``end`` (epoch seconds of the load
itself) and what it did (``cuda_context_at`` where a second process holds GPU memory before its
load starts, sizes, process counts).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

#: interference kinds: what each loads (the GPU ones need ``--device cuda``)
KINDS: dict[str, str] = {
    "gpu_cotenant_compute": "a second process on the GPU: bf16 matrix products in a loop",
    "gpu_cotenant_bandwidth": "a second process on the GPU: a large tensor scaled in place (memory-bandwidth bound)",
    "pcie_h2d": "a second process copying pinned host memory to the GPU in a loop",
    "loader_cpu": "one busy process per CPU: the job's loader thread competes for a core",
    "host_memory": "host memory taken and touched page by page (half of what is available, at most --gb)",
    "storage_write": "sequential 1 MiB writes with an fsync every 64 MiB to a file beside the recording",
}
GPU_KINDS = frozenset({"gpu_cotenant_compute", "gpu_cotenant_bandwidth", "pcie_h2d"})


def _now() -> float:
    return time.time()


# ---------------------------------------------------------------------------------- the job
def _loader(batches, stop: threading.Event, batch: int, seq: int, vocab: int) -> None:  # noqa: ANN001
    """Prepare batches ahead of the step: random tokens and a CPU-side sort (a loader's work)."""
    import torch

    g = torch.Generator().manual_seed(0)
    while not stop.is_set():
        tokens = torch.randint(0, vocab, (batch, seq), generator=g)
        torch.sort(torch.rand(800_000, generator=g))
        while not stop.is_set():
            try:
                batches.put(tokens, timeout=0.2)
                break
            except Exception:  # noqa: BLE001 - queue.Full: try again until stopped
                continue


def run_job(device: str, duration_s: float, steps_path: Path, size: str = "full") -> int:
    """Train for ``duration_s`` seconds; one ``t,step_s`` row per step in ``steps_path``."""
    import queue

    import torch
    from torch import nn

    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("job --device cuda: PyTorch sees no CUDA device (give --device cpu for a CPU check)")
    torch.manual_seed(0)
    d, layers, heads, ffn, batch, seq, vocab = (
        (2048, 10, 16, 8192, 8, 1024, 32000) if size == "full" else (64, 2, 4, 128, 4, 64, 1000)
    )
    if device == "cpu":
        torch.set_num_threads(1)
    dtype = torch.bfloat16
    emb = nn.Embedding(vocab, d)
    enc = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(d, heads, ffn, batch_first=True, dropout=0.0), layers, enable_nested_tensor=False
    )
    head = nn.Linear(d, vocab)
    model = nn.Sequential(emb, enc, head).to(device=device, dtype=dtype)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    batches: queue.Queue = queue.Queue(maxsize=2)
    stop = threading.Event()
    th = threading.Thread(target=_loader, args=(batches, stop, batch, seq, vocab), daemon=True)
    th.start()
    end = _now() + duration_s
    n = 0
    with open(steps_path, "w", buffering=1) as out:
        out.write("t,step_s\n")
        while _now() < end:
            t0 = _now()
            tokens = batches.get(timeout=60).to(device, non_blocking=True)
            logits = model(tokens)
            loss = loss_fn(logits.reshape(-1, vocab).float(), tokens.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if device == "cuda":
                torch.cuda.synchronize()
            out.write(f"{t0:.3f},{_now() - t0:.4f}\n")
            n += 1
    stop.set()
    th.join(timeout=5)
    return n


# ---------------------------------------------------------------------------- interference
def _busy(until: float) -> None:
    x = 0
    while time.time() < until:
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF


def _gpu_load(kind: str, duration_s: float, gb: float, info: dict) -> tuple[float, float]:
    import torch

    if not torch.cuda.is_available():
        raise SystemExit(f"interfere {kind}: PyTorch sees no CUDA device (a GPU kind needs one)")
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # the CUDA context: this process holds GPU memory from here
    info["cuda_context_at"] = _now()
    if kind == "gpu_cotenant_compute":
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        step = lambda: a @ b  # noqa: E731
        info["matmul"] = "8192^3 bf16"
    elif kind == "gpu_cotenant_bandwidth":
        x = torch.ones(int(gb * 2**30 // 2), device="cuda", dtype=torch.bfloat16)
        step = lambda: x.mul_(1.0)  # noqa: E731
        info["gpu_gb"] = gb
    else:  # pcie_h2d
        host = torch.ones(int(gb * 2**30 // 4), dtype=torch.float32).pin_memory()
        dev = torch.empty_like(host, device="cuda")
        step = lambda: dev.copy_(host, non_blocking=True)  # noqa: E731
        info["pinned_gb"] = gb
    torch.cuda.synchronize()
    start = _now()
    end = start + duration_s
    while _now() < end:
        step()
        torch.cuda.synchronize()
    stop = _now()
    return start, stop


def _host_memory(duration_s: float, gb: float, info: dict) -> tuple[float, float]:
    import numpy as np

    avail = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            avail = int(line.split()[1]) * 1024
    n = int(min(gb * 2**30, avail // 2))
    info["host_gb"] = round(n / 2**30, 2)
    start = _now()
    buf = np.zeros(n // 8, dtype=np.int64)
    page = 4096 // 8
    end = start + duration_s
    k = 0
    while _now() < end:
        buf[::page] += 1  # touch every page: the kernel backs them, reclaims around them
        k += 1
    info["passes"] = k
    stop = _now()
    del buf
    return start, stop


def _storage_write(duration_s: float, where: Path, info: dict) -> tuple[float, float]:
    block = os.urandom(1 << 20)
    written = 0
    fd, name = tempfile.mkstemp(prefix="gpu-host-load-", dir=where)
    start = _now()
    end = start + duration_s
    try:
        while _now() < end:
            os.write(fd, block)
            written += len(block)
            if written % (64 << 20) == 0:
                os.fsync(fd)
        os.fsync(fd)
    finally:
        os.close(fd)
        os.unlink(name)
    info["written_mb"] = written >> 20
    return start, _now()


def interfere(kind: str, duration_s: float, log: Path, gb: float = 20.0, procs: int | None = None) -> dict:
    """Run one interference ``kind`` for ``duration_s``; its record (appended to ``log``)."""
    if kind not in KINDS:
        raise SystemExit(f"interfere: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    info: dict = {"kind": kind}
    if kind in GPU_KINDS:
        start, end = _gpu_load(kind, duration_s, gb, info)
    elif kind == "loader_cpu":
        n = procs or os.cpu_count() or 1
        start = _now()
        ps = [mp.Process(target=_busy, args=(start + duration_s,)) for _ in range(n)]
        for p in ps:
            p.start()
        for p in ps:
            p.join(timeout=duration_s + 30)
        end = _now()
        info["procs"] = n
    elif kind == "host_memory":
        start, end = _host_memory(duration_s, gb, info)
    else:
        start, end = _storage_write(duration_s, log.parent, info)
    info.update(start=start, end=end)
    with open(log, "a") as f:
        f.write(json.dumps(info) + "\n")
    return info


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    j = sub.add_parser("job", help="the training job, its step times to --steps")
    j.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    j.add_argument("--size", choices=["full", "small"], default="full", help="full: ~635 M parameters; small: a CPU check")
    j.add_argument("--duration", type=float, required=True, help="seconds to train")
    j.add_argument("--steps", type=Path, required=True, help="the steps.csv to write")
    i = sub.add_parser("interfere", help="one kind of interference")
    i.add_argument("kind", choices=sorted(KINDS))
    i.add_argument("--duration", type=float, required=True, help="seconds of load")
    i.add_argument("--log", type=Path, required=True, help="JSON lines file its record is appended to")
    i.add_argument("--gb", type=float, default=20.0, help="GiB of GPU, pinned or host memory (default 20)")
    i.add_argument("--procs", type=int, default=None, help="loader_cpu: busy processes (default one per CPU)")
    a = p.parse_args(argv)
    if a.what == "job":
        n = run_job(a.device, a.duration, a.steps, a.size)
        print(json.dumps({"steps": n}))
    else:
        print(json.dumps(interfere(a.kind, a.duration, a.log, a.gb, a.procs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
