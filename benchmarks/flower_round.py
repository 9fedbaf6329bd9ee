"""FedAvg rounds of 50 IID MNIST clients (MLP 784-200-200-10, E = 1, B = 50, every client in every round) in
Flower's simulation engine (``flwr.simulation.run_simulation`` with Ray, one CPU per client actor, NumPyClients
written as Flower's tutorials write them) vs fedlib's engine on the same clients, batches and model.

Flower is not a dependency of fedlib: ``pip install -r benchmarks/requirements-flower.txt`` first (without it the
row is skipped). Ray's start-up is left out: after a warm-up run, Flower's time per round is (T(3 rounds) −
T(1 round)) / 2.
Before any time is printed, the models after one round must agree to 1e-4 (Flower averages float32 arrays weighted
by n_i = 1,200 in numpy, and each Ray actor runs torch on one thread: measured 3.6e-5 apart; a different batch
order would differ by 1e-2).
"""

from __future__ import annotations

import functools
import logging
import time

import numpy as np
import torch

from benchmarks.seed_style import seed_style_local
from fedlib.experiments.common import fresh_model, make_federation
from fedlib.fl import FLConfig, LocalSGD, run_federated
from fedlib.rng import make_generator

CLIENTS, EPOCHS, BATCH, LR, SEED = 50, 1, 50, 0.1, 0


@functools.lru_cache(maxsize=1)
def _federation():
    return make_federation("mnist", "iid", CLIENTS, seed=SEED)


def _flower_run(rounds: int) -> tuple[float, torch.Tensor]:
    """Seconds for ``rounds`` Flower rounds (Ray start-up included) and the final flat model."""
    from flwr.client import ClientApp, NumPyClient
    from flwr.common import Context, ndarrays_to_parameters, parameters_to_ndarrays
    from flwr.server import ServerApp, ServerAppComponents, ServerConfig
    from flwr.server.strategy import FedAvg
    from flwr.simulation import run_simulation

    class MnistClient(NumPyClient):
        def __init__(self, cid: int) -> None:
            self.cid = cid
            self.model = fresh_model("mlp", SEED)

        def fit(self, parameters, config):
            torch.set_num_threads(1)
            with torch.no_grad():
                for p, value in zip(self.model.parameters(), parameters):
                    p.copy_(torch.from_numpy(value))
            fed = _federation()
            idx = fed.clients[self.cid]
            gen = make_generator(SEED, "train", int(config["server_round"]) - 1, self.cid)
            seed_style_local(self.model, fed.train.x[idx], fed.train.y[idx], gen, epochs=EPOCHS, batch_size=BATCH,
                             lr=LR)
            return [p.detach().numpy() for p in self.model.parameters()], len(idx), {}

    def client_fn(context: Context):
        return MnistClient(int(context.node_config["partition-id"])).to_client()

    final: list = []

    class KeepLast(FedAvg):
        def aggregate_fit(self, server_round, results, failures):
            params, metrics = super().aggregate_fit(server_round, results, failures)
            final[:] = parameters_to_ndarrays(params)
            return params, metrics

    init = [p.detach().numpy() for p in fresh_model("mlp", SEED).parameters()]
    strategy = KeepLast(fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=CLIENTS,
                        min_available_clients=CLIENTS, initial_parameters=ndarrays_to_parameters(init),
                        on_fit_config_fn=lambda r: {"server_round": r})

    def server_fn(context: Context):
        return ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=rounds))

    began = time.perf_counter()
    run_simulation(server_app=ServerApp(server_fn=server_fn), client_app=ClientApp(client_fn=client_fn),
                   num_supernodes=CLIENTS, backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}})
    seconds = time.perf_counter() - began
    return seconds, torch.from_numpy(np.concatenate([a.reshape(-1) for a in final]))


def run() -> list[dict]:
    try:
        import flwr  # noqa: F401
    except ImportError:
        return [{"row": "Flower round: skipped (pip install -r benchmarks/requirements-flower.txt)", "skipped": True}]
    logging.getLogger("flwr").setLevel(logging.ERROR)
    fed = _federation()
    config = FLConfig(rounds=1, clients_per_round=CLIENTS, local=LocalSGD(EPOCHS, BATCH), lr=LR, seed=SEED)
    ours = run_federated(fresh_model("mlp", SEED), fed.train, fed.clients, None, config).params
    _, theirs = _flower_run(1)  # also pays the one-time costs (imports, Ray's first start)
    diff = float((ours - theirs).abs().max())
    if diff > 1e-4:
        raise AssertionError(f"fedlib and Flower disagree after one round (max |diff| {diff:.2e}); no timing printed")
    t1, _ = _flower_run(1)
    t3, _ = _flower_run(3)
    t_flower = (t3 - t1) / 2
    config = FLConfig(rounds=3, clients_per_round=CLIENTS, local=LocalSGD(EPOCHS, BATCH), lr=LR, seed=SEED)
    began = time.perf_counter()
    run_federated(fresh_model("mlp", SEED), fed.train, fed.clients, None, config)
    t_ours = (time.perf_counter() - began) / 3
    return [
        {"row": f"FL round, Flower simulation ({CLIENTS} clients)", "s_per_round": t_flower, "ratio": 1.0},
        {"row": f"FL round, fedlib engine ({CLIENTS} clients)", "s_per_round": t_ours, "ratio": t_flower / t_ours,
         "max_abs_diff": diff, "flower_startup_s": t1 - t_flower},
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
