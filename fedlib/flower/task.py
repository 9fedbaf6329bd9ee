"""What the server and every client of a federation must agree on, built from a flat configuration.

Flower hands every ServerApp and ClientApp the run's configuration as a flat mapping of strings, numbers and
booleans (``[tool.flwr.app.config]``, overridden by ``flwr run --run-config``). :func:`standard_task` turns such
a mapping into a :class:`Task`: the data and its partition, the network with W^0, the :class:`~fedlib.fl.FLConfig`
and a factory of fresh :class:`~fedlib.fl.Algorithm` parts. Each process builds the task itself (no data
travels): the partition and W^0 come from the run's seed, so every process builds the same one.
This module does not import Flower.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Union

import torch
from torch import Tensor, nn

from fedlib.algorithms.dpfl import cdp_fl, lcdp_fl, ldp_fl
from fedlib.algorithms.fednore import fednore
from fedlib.data.datasets import Split
from fedlib.experiments.common import fresh_model, make_federation
from fedlib.fl import Algorithm, CentralGaussian, FLConfig, LocalSGD, get_flat

#: A value of Flower's run configuration.
ConfigValue = Union[bool, int, float, str]


@dataclass
class Task:
    """A federated run as both sides see it.

    Attributes:
        model: the network (a working copy: training overwrites its parameters).
        init: W^0, flat.
        train: the training samples; ``clients[i]`` are client i's indices into them.
        clients: the partition, one index tensor per client (client i is the node with ``partition-id`` i).
        test: the server's evaluation split (None: no evaluation).
        config: rounds, clients per round, local training, learning rate, weighting, seed.
        algorithm: builds fresh parts (the server and every client keep their own).
    """

    model: nn.Module
    init: Tensor
    train: Split
    clients: Sequence[Tensor]
    test: Split | None
    config: FLConfig
    algorithm: Callable[[], Algorithm]


#: (run configuration) -> Task; must build the same task in every process.
TaskFactory = Callable[[Mapping[str, ConfigValue]], Task]

#: Keys of the run configuration read by the apps themselves, not by the task factory.
RUNNER_KEYS = ("result-file", "timeout")

#: The keys :func:`standard_task` reads, with their defaults.
DEFAULTS: dict[str, ConfigValue] = {
    "algorithm": "fedavg",
    "dataset": "mnist",
    "partition": "iid",
    "num-clients": 10,
    "samples-per-client": 0,
    "test-samples": 1000,
    "model": "mlp",
    "hidden": "200,200",
    "rounds": 3,
    "clients-per-round": 10,
    "epochs": 1,
    "batch-size": 50,
    "local-momentum": 0.0,
    "lr": 0.1,
    "weighting": "samples",
    "seed": 0,
    "noise-multiplier": 0.0,
    "cdp-noise-multiplier": 0.0,
    "clip": 1.0,
    "top-rate": 0.1,
    "momentum": 0.5,
    "lam1": 0.0,
    "lam2": 0.0,
}


#: The runs of the tests, the benchmark and the book: LDP-FL on 10 clients (σ > 0, top-k, Global-MGD; engine vs
#: simulation) and DP-FedAvg on 3 clients (central DP, constant bound; engine vs simulation vs deployment).
EXAMPLES: dict[str, dict[str, ConfigValue]] = {
    "ldp-fl": {"algorithm": "ldp-fl", "noise-multiplier": 1.0, "top-rate": 0.1, "momentum": 0.5, "num-clients": 10,
               "clients-per-round": 5, "rounds": 4, "samples-per-client": 600, "hidden": "64", "test-samples": 1000},
    "dp-fedavg": {"algorithm": "dp-fedavg", "noise-multiplier": 1.0, "clip": 1.0, "num-clients": 3,
                  "clients-per-round": 3, "rounds": 3, "weighting": "uniform", "samples-per-client": 300,
                  "hidden": "32", "test-samples": 500},
}


def _algorithm(c: Mapping[str, ConfigValue]) -> Callable[[], Algorithm]:
    name, sigma = c["algorithm"], float(c["noise-multiplier"])
    factories: dict[str, Callable[[], Algorithm]] = {
        "fedavg": Algorithm,
        "ldp-fl": lambda: ldp_fl(sigma, top_rate=float(c["top-rate"]), momentum=float(c["momentum"])),
        "lcdp-fl": lambda: lcdp_fl(sigma, float(c["cdp-noise-multiplier"]), top_rate=float(c["top-rate"]),
                                   momentum=float(c["momentum"])),
        "cdp-fl": lambda: cdp_fl(sigma),
        "dp-fedavg": lambda: Algorithm(aggregator=CentralGaussian(sigma, float(c["clip"]))),
        "fednore": lambda: fednore(sigma, lam1=float(c["lam1"]), lam2=float(c["lam2"])),
    }
    if name not in factories:
        raise ValueError(f"algorithm must be one of {sorted(factories)}, got {name!r}")
    return factories[name]


@lru_cache(maxsize=4)
def _standard_task(items: tuple[tuple[str, ConfigValue], ...]) -> Task:
    c = dict(items)
    make_algorithm = _algorithm(c)
    seed = int(c["seed"])
    fed = make_federation(str(c["dataset"]), str(c["partition"]), int(c["num-clients"]), seed=seed)
    clients = fed.clients
    if int(c["samples-per-client"]) > 0:
        clients = [idx[: int(c["samples-per-client"])] for idx in clients]
    test = fed.test
    if int(c["test-samples"]) > 0:
        test = test.subset(torch.arange(min(int(c["test-samples"]), len(test.y))))
    kwargs = {}
    if c["model"] == "mlp":
        kwargs["hidden"] = tuple(int(h) for h in str(c["hidden"]).split(","))
    model = fresh_model(str(c["model"]), seed, **kwargs)
    local = LocalSGD(int(c["epochs"]), int(c["batch-size"]), float(c["local-momentum"]))
    config = FLConfig(rounds=int(c["rounds"]), clients_per_round=int(c["clients-per-round"]), local=local,
                      lr=float(c["lr"]), weighting=str(c["weighting"]), seed=seed)  # type: ignore[arg-type]
    make_algorithm()  # a bad parameter fails here, in every process, before any training
    return Task(model, get_flat(model), fed.train, clients, test, config, make_algorithm)


def standard_task(config: Mapping[str, ConfigValue]) -> Task:
    """A task from fedlib's named parts: ``config`` overrides :data:`DEFAULTS` (keys as in Flower's run config).

    ``algorithm`` is ``"fedavg"``, ``"ldp-fl"`` / ``"lcdp-fl"`` / ``"cdp-fl"`` (thesis §3.2,
    :mod:`fedlib.algorithms.dpfl`), ``"dp-fedavg"`` (central DP with a constant bound ``clip``,
    :class:`~fedlib.fl.CentralGaussian`) or ``"fednore"`` (plain DPFL with Fed-nore's ``lam1`` / ``lam2``,
    :mod:`fedlib.algorithms.fednore`). ``samples-per-client`` > 0 keeps each client's first that many samples;
    ``test-samples`` > 0 evaluates on the first that many test images. The same configuration gives the same
    task (cached per process).
    """
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown task keys {unknown}; allowed: {sorted(DEFAULTS)}")
    return _standard_task(tuple(sorted({**DEFAULTS, **config}.items())))


def task_config(run_config: Mapping[str, ConfigValue]) -> dict[str, ConfigValue]:
    """The run configuration without the keys the apps read themselves (:data:`RUNNER_KEYS`)."""
    return {k: v for k, v in run_config.items() if k not in RUNNER_KEYS}


def tolerance(config: FLConfig, *params: Tensor) -> float:
    """The largest absolute difference of two float32 runs of a task that add the same numbers in other orders.

    Every float32 addition rounds with relative error ≤ u = 2^-24. In round t the server sums m uploads
    (error ≤ (m − 1) u ‖∇W_i‖_∞) and takes the momentum and model steps (≤ 2u ‖W‖_∞, ‖V‖_∞); with every
    magnitude ≤ s = max ‖params‖_∞ (W^0, W^T, ...) and ‖∇W_i‖_∞ ≤ 2s that is ≤ 2(m + 1) u s per round, so
    T (m + 2) · 2u · s after T rounds, taking local training as non-expansive on a difference of that size. The
    forms compared here run the same kernels on one thread per client, so in practice they agree bitwise.
    """
    scale = max(float(p.abs().max()) for p in params)
    return config.rounds * (config.clients_per_round + 2) * torch.finfo(torch.float32).eps * scale
