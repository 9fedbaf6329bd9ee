"""An independent, obviously-correct FedAvg in the seed codes' style (deepcopy + torch.optim.SGD per
client), used as the slow reference that fedlib's lean engine must match."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from fedlib.rng import make_generator


def seed_style_fedavg(model, train, clients, *, rounds, clients_per_round, epochs, batch_size, lr, seed):
    global_model = copy.deepcopy(model)
    for t in range(rounds):
        chosen = sorted(torch.randperm(len(clients), generator=make_generator(seed, "sample", t))
                        [:clients_per_round].tolist())
        start = parameters_to_vector(global_model.parameters()).detach().clone()
        sizes = torch.tensor([len(clients[c]) for c in chosen], dtype=torch.float64)
        total = torch.zeros_like(start)
        for c, size in zip(chosen, sizes):
            local = copy.deepcopy(global_model)
            opt = torch.optim.SGD(local.parameters(), lr=lr)
            gen = make_generator(seed, "train", t, c)
            idx = clients[c]
            for _ in range(epochs):
                order = idx[torch.randperm(len(idx), generator=gen)]
                for s in range(0, len(order), batch_size):
                    b = order[s:s + batch_size]
                    opt.zero_grad()
                    F.cross_entropy(local(train.x[b]), train.y[b]).backward()
                    opt.step()
            update = start - parameters_to_vector(local.parameters()).detach()
            total += float(size / sizes.sum()) * update
        vector_to_parameters(start - total, global_model.parameters())
    return parameters_to_vector(global_model.parameters()).detach()
