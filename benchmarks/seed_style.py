"""FedAvg written the way the seed codes write it: per client a deepcopy of the global model, a
DataLoader and a torch.optim.SGD. It is the baseline of the FL-round benchmark and, being obviously
correct, the slow reference that fedlib's engine is tested against.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters
from torch.utils.data import DataLoader, TensorDataset

from fedlib.rng import make_generator


def seed_style_local(model, x, y, generator, *, epochs, batch_size, lr) -> None:
    """Train ``model`` in place: E epochs of SGD over a DataLoader, batches in the ``generator``'s order."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    data = TensorDataset(x, y)
    for _ in range(epochs):
        order = torch.randperm(len(y), generator=generator).tolist()
        for xb, yb in DataLoader(data, batch_size=batch_size, sampler=order):
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()


def seed_style_fedavg(model, train, clients, *, rounds, clients_per_round, epochs, batch_size, lr, seed):
    """Run ``rounds`` of FedAvg (weights n_i / Σ n_j) and return the final flat parameters.

    Clients, and each client's batch order, are drawn from the same streams as fedlib's engine, so the
    two must agree up to floating-point rounding.
    """
    global_model = copy.deepcopy(model)
    for t in range(rounds):
        chosen = sorted(torch.randperm(len(clients), generator=make_generator(seed, "sample", t))
                        [:clients_per_round].tolist())
        start = parameters_to_vector(global_model.parameters()).detach().clone()
        sizes = torch.tensor([len(clients[c]) for c in chosen], dtype=torch.float64)
        total = torch.zeros_like(start)
        for c, size in zip(chosen, sizes):
            local = copy.deepcopy(global_model)
            idx = clients[c]
            seed_style_local(local, train.x[idx], train.y[idx], make_generator(seed, "train", t, c), epochs=epochs,
                             batch_size=batch_size, lr=lr)
            update = start - parameters_to_vector(local.parameters()).detach()
            total += float(size / sizes.sum()) * update
        vector_to_parameters(start - total, global_model.parameters())
    return parameters_to_vector(global_model.parameters()).detach()
