"""Real ML workloads for the lab dataset: small PyTorch models on synthetic data, on the CPU.

Three model families (plain ``torch.nn``, no torchvision), each with a train and an
infer phase:

* ``CNN`` -- image classification on synthetic 3x32x32 images (10 classes);
* ``Transformer`` -- a 2-layer Transformer encoder text classifier on synthetic token
  sequences (vocabulary 4000, length 64, 4 classes);
* ``MLP`` -- a 3-layer perceptron on synthetic 784-feature vectors (10 classes).

Training can run as two-process distributed data parallel (``torch.distributed`` over
gloo, one process per lab host; ``--world-size 2 --rank R --master-addr ADDR``).

Each process runs for a fixed wall-clock ``--duration`` with ``torch.set_num_threads(1)``
and, when ``--log`` is given, writes one JSON line per second (steps, samples, loss) so a
fault's effect on throughput can be checked beside the telemetry.

Run as a module (the harness does this inside the lab namespaces)::

    python -m reveal_lab.lab._workloads --model CNN --phase train --duration 30

torch is imported only inside the functions that need it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["WORKLOADS", "WorkloadSpec", "workload_spec", "build_model", "run_workload", "main"]


@dataclass(frozen=True)
class WorkloadSpec:
    """How one model family is named in the dataset grammar and fed with data."""

    model: str  #: the ``{MODEL}`` of the file-name grammar
    task: str  #: the ``{Task}`` of the file-name grammar
    dataset: str = "synthetic"
    train_batch: int = 32
    infer_batch: int = 128


#: model family -> dataset naming and batch sizes
WORKLOADS: dict[str, WorkloadSpec] = {
    "CNN": WorkloadSpec("CNN", "ImageClassification", train_batch=32, infer_batch=128),
    "Transformer": WorkloadSpec("Transformer", "TextClassification", train_batch=16, infer_batch=64),
    "MLP": WorkloadSpec("MLP", "ImageClassification", train_batch=256, infer_batch=1024),
}


def workload_spec(model: str) -> WorkloadSpec:
    """The :class:`WorkloadSpec` of a model family (``CNN``, ``Transformer``, ``MLP``)."""
    try:
        return WORKLOADS[model]
    except KeyError:
        raise ValueError(f"unknown lab model {model!r}; expected one of {sorted(WORKLOADS)}") from None


def build_model(model: str):  # noqa: ANN201 - returns a torch.nn.Module (torch imported lazily)
    """A fresh, seeded ``torch.nn.Module`` for a model family."""
    import torch
    from torch import nn

    workload_spec(model)
    torch.manual_seed(0)
    if model == "CNN":
        return nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(128 * 4 * 4, 256),
            nn.ReLU(),
            nn.Linear(256, 10),
        )
    if model == "MLP":
        return nn.Sequential(
            nn.Linear(784, 1024),
            nn.ReLU(),
            nn.Linear(1024, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    class TextTransformer(nn.Module):
        def __init__(
            self,
            vocab: int = 4000,
            d: int = 128,
            heads: int = 4,
            layers: int = 2,
            seq: int = 64,
            classes: int = 4,
        ) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(torch.zeros(1, seq, d))
            layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, batch_first=True, dropout=0.1)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d, classes)

        def forward(self, tokens):  # noqa: ANN001, ANN202
            h = self.encoder(self.embed(tokens) + self.pos[:, : tokens.shape[1]])
            return self.head(h.mean(dim=1))

    return TextTransformer()


def _batch(model: str, n: int, gen):  # noqa: ANN001, ANN202
    """A synthetic batch whose label is learnable from the input (so loss really falls)."""
    import torch

    if model == "CNN":
        y = torch.randint(0, 10, (n,), generator=gen)
        x = torch.randn(n, 3, 32, 32, generator=gen) * 0.5
        x[:, y % 3, :4, :4] += (y.float() / 5.0)[:, None, None, None]  # class signal in a corner patch
        return x, y
    if model == "MLP":
        y = torch.randint(0, 10, (n,), generator=gen)
        x = torch.randn(n, 784, generator=gen)
        x[torch.arange(n), y] += 3.0
        return x, y
    y = torch.randint(0, 4, (n,), generator=gen)
    x = torch.randint(0, 4000, (n, 64), generator=gen)
    x[:, 0] = y  # the class is the first token
    return x, y


def run_workload(
    model: str,
    phase: str,
    duration_s: float,
    *,
    seed: int = 0,
    rank: int = 0,
    world_size: int = 1,
    master_addr: str = "127.0.0.1",
    master_port: int = 29500,
    log_path: str | None = None,
    threads: int = 1,
    emit: Callable[[dict], None] | None = None,
) -> dict:
    """Train or infer ``model`` for ``duration_s`` seconds of wall clock; return a summary.

    ``emit`` is called with the summary as soon as the last step is done, before the process
    group is torn down: gloo's teardown has aborted the process after a complete run (SIGABRT,
    "terminate called without an active exception": in all three attempts at v3's slot 42,
    whose rank has 4 intra-op threads, and in one DDP warm-up), and the summary of the run it
    finished must not be lost with it.

    With ``world_size > 1`` (training only) the model is wrapped in
    ``DistributedDataParallel`` over gloo; every rank stops after the same number of steps
    (rank 0 decides when the time is up and broadcasts it), so no rank hangs in a
    collective when another has already left.
    """
    import torch
    import torch.distributed as dist
    from torch import nn

    if phase not in ("train", "infer"):
        raise ValueError(f"phase must be 'train' or 'infer', got {phase!r}")
    if world_size > 1 and phase != "train":
        raise ValueError("distributed runs are training runs (phase='train')")
    spec = workload_spec(model)
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(seed * 1000 + rank)
    net = build_model(model)
    distributed = world_size > 1
    if distributed:
        os.environ.setdefault("MASTER_ADDR", master_addr)
        os.environ.setdefault("MASTER_PORT", str(master_port))
        dist.init_process_group(
            "gloo", rank=rank, world_size=world_size, init_method=f"tcp://{master_addr}:{master_port}"
        )
        net = nn.parallel.DistributedDataParallel(net)
    log = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9) if phase == "train" else None
    batch = spec.train_batch if phase == "train" else spec.infer_batch
    if phase == "infer":
        net.eval()
    t0 = time.time()
    if log:  # the harness anchors fault times on this line (after imports and DDP set-up)
        log.write(json.dumps({"event": "start", "time_ms": int(t0 * 1000), "rank": rank}) + "\n")
        log.flush()
    steps = samples = 0
    last_log, last_steps, loss_v = t0, 0, float("nan")
    stop = torch.zeros(1)
    try:
        while True:
            x, y = _batch(model, batch, gen)
            if phase == "train":
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(net(x), y)
                loss.backward()
                opt.step()
                loss_v = float(loss.detach())
            else:
                with torch.inference_mode():
                    loss_v = float(loss_fn(net(x), y))
            steps += 1
            samples += batch
            now = time.time()
            if distributed:
                stop[0] = 1.0 if (rank == 0 and now - t0 >= duration_s) else 0.0
                dist.broadcast(stop, src=0)
                done = bool(stop[0])
            else:
                done = now - t0 >= duration_s
            if log and (now - last_log >= 1.0 or done):
                log.write(
                    json.dumps(
                        {
                            "time_ms": int(now * 1000),
                            "rank": rank,
                            "steps": steps,
                            "steps_per_s": (steps - last_steps) / max(now - last_log, 1e-9),
                            "loss": loss_v,
                        }
                    )
                    + "\n"
                )
                log.flush()
                last_log, last_steps = now, steps
            if done:
                break
        elapsed = time.time() - t0
        summary = {
            "model": model,
            "phase": phase,
            "rank": rank,
            "world_size": world_size,
            "steps": steps,
            "samples": samples,
            "elapsed_s": elapsed,
            "final_loss": loss_v,
            "samples_per_s": samples / max(elapsed, 1e-9),
        }
        if emit is not None:
            emit(summary)
    finally:
        if log:
            log.close()
        if distributed and dist.is_initialized():
            dist.destroy_process_group()
    return summary


def _print_summary(summary: dict) -> None:
    print(json.dumps(summary), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m reveal_lab.lab._workloads", description=__doc__.split("\n")[0]
    )
    p.add_argument("--model", required=True, choices=sorted(WORKLOADS))
    p.add_argument("--phase", required=True, choices=("train", "infer"))
    p.add_argument("--duration", type=float, default=30.0, help="seconds of wall clock")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world-size", type=int, default=1)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=29500)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--log", default=None, help="JSON-lines progress log (one line a second)")
    a = p.parse_args(argv)
    run_workload(
        a.model,
        a.phase,
        a.duration,
        seed=a.seed,
        rank=a.rank,
        world_size=a.world_size,
        master_addr=a.master_addr,
        master_port=a.master_port,
        log_path=a.log,
        threads=a.threads,
        emit=_print_summary,  # printed before the teardown, which can abort (see run_workload)
    )
    return 0


if __name__ == "__main__":  # pragma: no cover - the harness runs this as a subprocess
    sys.exit(main())
