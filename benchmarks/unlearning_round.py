"""One SIFU training round (seed 002 Table 1, MNIST: 10 of 100 clients, 100 samples each, K = 10 full-batch steps,
momentum 0.9, logistic regression): fedlib's vectorised clients vs the authors'-code-style loop (a deep copy of
the model per client, ``torch.optim.SGD`` and a shuffled ``DataLoader`` per step) and vs fedlib's per-client
:class:`~fedlib.fl.client.LocalTrainer`. The local updates must agree to the float32 bound of :mod:`benchmarks.timing`
(longest reduction: the 784 inputs; chained: 2 passes × 10 steps) before any time is printed; a round is timed as
the mean of 10.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from benchmarks.timing import check_close, float32_rtol, interleaved, speedup
from fedlib.data import load_dataset
from fedlib.data.partition import fixed_size
from fedlib.experiments.common import fresh_model
from fedlib.fl.batched import BatchedClients, stack_clients
from fedlib.fl.client import LocalSGD, LocalTrainer
from fedlib.fl.params import get_flat
from fedlib.rng import make_generator

CLIENTS, PER_ROUND, SAMPLES, STEPS, LR, MOMENTUM, ROUNDS = 100, 10, 100, 10, 0.01, 0.9, 10


def code_style_round(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The authors' local work: per client a deep copy, an SGD optimizer and a DataLoader batch per step."""
    out = []
    for i in range(len(y)):
        local = copy.deepcopy(model)
        opt = torch.optim.SGD(local.parameters(), lr=LR, momentum=MOMENTUM)
        loader = DataLoader(TensorDataset(x[i], y[i]), batch_size=SAMPLES, shuffle=True)
        for _ in range(STEPS):
            xb, yb = next(iter(loader))
            opt.zero_grad()
            F.cross_entropy(local(xb), yb).backward()
            opt.step()
        out.append(get_flat(local))
    return torch.stack(out)


def run() -> list[dict]:
    train = load_dataset("mnist")
    clients = fixed_size(train.y, CLIENTS, generator=make_generator(0, "partition"), samples_per_client=SAMPLES)
    x, y = stack_clients(train, clients)
    x, y = x[:PER_ROUND], y[:PER_ROUND]
    model = fresh_model("logreg", 0)
    start = get_flat(model)
    batched = BatchedClients(model)
    trainer = LocalTrainer(copy.deepcopy(model))
    opt = LocalSGD(STEPS, SAMPLES, momentum=MOMENTUM)
    gens = [torch.Generator() for _ in range(PER_ROUND)]

    def ours() -> torch.Tensor:
        return batched.train(start, x, y, steps=STEPS, batch_size=SAMPLES, lr=LR, momentum=MOMENTUM, generators=gens)

    def per_client() -> torch.Tensor:
        return torch.stack([start - trainer.train(start, x[i], y[i], torch.arange(SAMPLES), lr=LR, opt=opt,
                                                  generator=gens[i])[0] for i in range(PER_ROUND)])

    ref = code_style_round(model, x, y)
    rtol = float32_rtol(x[0, 0].numel(), chained=2 * STEPS)
    diffs = {fn.__name__: check_close(f"{fn.__name__} and the code-style loop", fn(), ref, rtol, origin=start)
             for fn in (ours, per_client)}

    def rounds(fn):
        return lambda: [fn() for _ in range(ROUNDS)]

    times = interleaved({"ref": rounds(lambda: code_style_round(model, x, y)), "loop": rounds(per_client),
                         "ours": rounds(ours)}, per=ROUNDS)
    return [{"row": "SIFU round, authors'-code style", "time": times["ref"]},
            {"row": "SIFU round, LocalTrainer loop", "time": times["loop"], "ratio": speedup(times["ref"], times["loop"]),
             "check": f"updates agree to {diffs['per_client']:.1e} (bound {rtol:.1e})"},
            {"row": "SIFU round, vectorised clients", "time": times["ours"], "ratio": speedup(times["ref"], times["ours"]),
             "check": f"updates agree to {diffs['ours']:.1e} (bound {rtol:.1e})"}]
