"""One FedAvg round of 100 and of 1,000 IID MNIST clients on one CUDA device (MLP 784-200-200-10, 600 or 60
samples per client, E = 1, B = 50): fedlib's vectorised clients (:class:`~fedlib.fl.batched.BatchedClients`: one
batched matrix product per layer for all clients at once) vs a per-client loop on the same GPU (one persistent
``nn.Module`` and ``torch.optim.SGD``, reset per client — already leaner than the seed codes' deepcopy per client).

Both draw every client's batches from the same per-client generators. Before any time is printed, the two GPU
aggregates and the CPU engine's (the same vectorised clients on the CPU) must agree to the float32 bound of
:mod:`benchmarks.timing` (updates compared; longest reduction 784, chained 3 passes × 3 layers × the steps).
Skipped cleanly without CUDA (``python -m benchmarks.gpu_round cpu`` runs the same comparison on the CPU, to test
the script).
"""
from __future__ import annotations

import sys

import torch
import torch.nn.functional as F

from benchmarks.timing import check_close, float32_rtol, interleaved, speedup, target
from fedlib.experiments.common import fresh_model, make_federation
from fedlib.fl.batched import BatchedClients, stack_clients
from fedlib.fl.params import get_flat, set_flat
from fedlib.rng import make_generator

CLIENTS, EPOCHS, BATCH, LR = (100, 1000), 1, 50, 0.1


def _generators(count: int) -> list[torch.Generator]:
    return [make_generator(0, "gpu-bench", k) for k in range(count)]  # client k's batch order


def per_client_loop(model: torch.nn.Module, start: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The mean local model of a round, one client after the other on ``x.device``."""
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    total = torch.zeros_like(start)
    for k, g in enumerate(_generators(len(y))):
        set_flat(model, start)
        for _ in range(EPOCHS):
            order = torch.randperm(y.shape[1], generator=g).to(y.device)
            for s in range(0, y.shape[1], BATCH):
                idx = order[s:s + BATCH]
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(x[k, idx]), y[k, idx]).backward()
                opt.step()
        total += get_flat(model)
    return total / len(y)


def batched(clients: BatchedClients, start: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The mean local model of a round, all clients at once."""
    return clients.train(start, x, y, epochs=EPOCHS, batch_size=BATCH, lr=LR, generators=_generators(len(y))).mean(0)


def _synced(fn, device: torch.device):
    """``fn`` followed by a wait for the device, so that its time covers the kernels it launched."""
    def call() -> None:
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
    return call


def run(device_name: str = "cuda") -> list[dict]:
    if device_name == "cuda" and not torch.cuda.is_available():
        return [{"row": "GPU round: skipped (no CUDA device)", "skipped": True}]
    return [row for clients in CLIENTS for row in _compare(torch.device(device_name), clients)]


def _compare(device: torch.device, num_clients: int) -> list[dict]:
    fed = make_federation("mnist", "iid", num_clients, seed=0)
    x, y = stack_clients(fed.train, fed.clients)
    model = fresh_model("mlp", 0)
    start = get_flat(model)
    reference = batched(BatchedClients(model), start, x, y)  # the CPU engine

    gpu_model = fresh_model("mlp", 0).to(device)
    xd, yd, sd = x.to(device), y.to(device), start.to(device)
    clients = BatchedClients(gpu_model)
    ours = batched(clients, sd, xd, yd)
    loop = per_client_loop(gpu_model, sd, xd, yd)
    steps = -(-y.shape[1] // BATCH) * EPOCHS
    rtol = float32_rtol(x[0, 0].numel(), chained=9 * steps)
    diffs = {"batched vs CPU": check_close("the GPU batched round and the CPU engine", ours.cpu(), reference, rtol,
                                           origin=start),
             "loop vs CPU": check_close("the GPU per-client loop and the CPU engine", loop.cpu(), reference, rtol,
                                        origin=start)}
    times = interleaved({"loop": _synced(lambda: per_client_loop(gpu_model, sd, xd, yd), device),
                         "ours": _synced(lambda: batched(clients, sd, xd, yd), device)})
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    ratio = speedup(times["loop"], times["ours"])
    return [
        {"row": f"{num_clients}-client round, per-client loop ({name})", "time": times["loop"]},
        {"row": f"{num_clients}-client round, fedlib batched ({name})", "time": times["ours"], "ratio": ratio,
         "target": target("x per-client loop", ratio.median, 20) if num_clients == 100 else "",
         "check": "updates agree with the CPU engine to " + ", ".join(f"{v:.1e} ({k})" for k, v in diffs.items())
                  + f" (bound {rtol:.1e})"},
    ]


if __name__ == "__main__":
    for row in run(*sys.argv[1:2]):
        print(row)
