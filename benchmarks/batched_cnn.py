"""Vectorised CNN clients on a CPU: one local step of m clients through :class:`~fedlib.fl.batched.BatchedClients`,
``torch.func.vmap`` over the clients (its GPU path, and its CPU path until 2026-12-05) against its CPU default,
``torch.func.grad`` one client at a time. Under vmap each convolution becomes a grouped one, which a CPU computes far
slower than m ordinary ones. Cases: plausible deniability's LeNet5, ConvNet and ResNet-mini (50 clients, B = 128;
10 timed here) and SIFU's CIFAR-10 CNN (m = 5, B = 20). Both must give the same gradients to float32 rounding before
a time is printed.
"""

from __future__ import annotations

import torch

from benchmarks.timing import check_close, float32_rtol, interleaved, speedup
from fedlib.experiments.common import fresh_model
from fedlib.fl.batched import BatchedClients
from fedlib.fl.params import get_flat
from fedlib.rng import make_generator

#: model -> (clients, batch size, input shape)
CASES = {"lenet5": (10, 128, (1, 28, 28)), "convnet": (10, 128, (1, 28, 28)), "resnet_mini": (10, 128, (1, 28, 28)),
         "cnn_sifu_cifar": (5, 20, (3, 32, 32))}


def run() -> list[dict]:
    rows = []
    for name, (m, batch, shape) in CASES.items():
        clients = BatchedClients(fresh_model(name, 0))
        if not clients.client_by_client:
            raise AssertionError(f"{name}: BatchedClients does not take its client-by-client path on this CPU")
        g = make_generator(0, "benchmark", name)
        theta = get_flat(clients.model) + 0.01 * torch.randn(m, clients.dim, generator=g)
        x, y = torch.rand(m, batch, *shape, generator=g), torch.randint(0, 10, (m, batch), generator=g)

        def vmapped() -> torch.Tensor:
            return clients._flatten(clients._grads(clients._unflatten(theta), x, y))

        def one_at_a_time() -> torch.Tensor:
            return clients._gradients(theta, x, y)

        check_close(f"{name}: vmapped and client-by-client gradients", one_at_a_time(), vmapped(),
                    float32_rtol(batch * 5 * 5 * 64, chained=8))
        times = interleaved({"vmap": vmapped, "loop": one_at_a_time}, per=1)
        rows += [{"row": f"local step of {m} clients, {name} (B = {batch}), vmap", "time": times["vmap"]},
                 {"row": f"local step of {m} clients, {name} (B = {batch}), one at a time", "time": times["loop"],
                  "ratio": speedup(times["vmap"], times["loop"]),
                  "check": "the same gradients to float32 rounding"}]
    return rows
