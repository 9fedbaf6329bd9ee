"""FedAvg rounds of 50 IID MNIST clients × 1,200 samples (MLP 784-200-200-10, E = 1, B = 50, every client in every
round) in Flower's simulation engine (``flwr.simulation.run_simulation`` with Ray, one CPU per client actor,
NumPyClients written as Flower's tutorials write them) vs fedlib's engine on the same clients, batches and model:
on an idle machine, then with a busy neighbour (another process multiplying matrices on 2 threads).

Flower is not a dependency of fedlib: ``pip install -r benchmarks/requirements-flower.txt`` first (without it the
rows are skipped with a message). The two are interleaved inside one simulation: Flower's round r is timed from its
``configure_fit`` to the end of its ``aggregate_fit``; then, still inside ``aggregate_fit`` (Flower's actors idle,
waiting for round r + 1), fedlib trains the same round from W^0, one client at a time and with ``client_batch=5``.
Ray's start-up is not counted, and a burst of load slows both sides. Round 1 is the warm-up (Ray spawns its actors,
they import torch) and the check: after it, both fedlib models must agree with Flower's to the float32 bound of
:mod:`benchmarks.timing` (updates compared; longest reduction 784, chained 3 passes × 3 layers × 24 steps; Flower
averages float32 arrays in numpy and trains each client with autograd on one thread).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable

import numpy as np
import torch

from benchmarks.seed_style import seed_style_local
from benchmarks.timing import Timing, busy_neighbour, check_close, float32_rtol, speedup, target
from fedlib.experiments.common import fresh_model, make_federation
from fedlib.fl import FLConfig, LocalSGD, get_flat, run_federated
from fedlib.rng import make_generator

CLIENTS, EPOCHS, BATCH, LR, SEED, CLIENT_BATCH, REPEATS = 50, 1, 50, 0.1, 0, 5, 5


@functools.lru_cache(maxsize=1)
def _federation():
    return make_federation("mnist", "iid", CLIENTS, seed=SEED)


def _simulate(fedlib: dict[str, Callable[[], torch.Tensor]]) -> tuple[Timing, dict[str, Timing], dict]:
    """One Flower simulation of 1 + REPEATS rounds with the ``fedlib`` rounds run after each of Flower's. Returns
    Flower's and fedlib's seconds per round (round 1 left out) and the models after round 1."""
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

    flower: list[float] = []
    ours: dict[str, list[float]] = {name: [] for name in fedlib}
    first: dict = {}
    errors: list[BaseException] = []
    began: list[float] = []

    class Interleaved(FedAvg):
        def configure_fit(self, server_round, parameters, client_manager):
            began.append(time.perf_counter())
            return super().configure_fit(server_round, parameters, client_manager)

        def aggregate_fit(self, server_round, results, failures):
            params, metrics = super().aggregate_fit(server_round, results, failures)
            flower.append(time.perf_counter() - began[-1])
            try:
                if failures:
                    raise RuntimeError(f"{len(failures)} Flower clients failed in round {server_round}")
                if server_round == 1:
                    first["flower"] = torch.from_numpy(np.concatenate([a.reshape(-1)
                                                                       for a in parameters_to_ndarrays(params)]))
                for name, fn in fedlib.items():
                    t = time.perf_counter()
                    out = fn()
                    ours[name].append(time.perf_counter() - t)
                    first.setdefault(name, out)
            except BaseException as e:  # noqa: BLE001 - re-raised after the simulation
                errors.append(e)
            return params, metrics

    init = [p.detach().numpy() for p in fresh_model("mlp", SEED).parameters()]
    strategy = Interleaved(fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=CLIENTS,
                           min_available_clients=CLIENTS, initial_parameters=ndarrays_to_parameters(init),
                           on_fit_config_fn=lambda r: {"server_round": r})

    def server_fn(context: Context):
        return ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=1 + REPEATS))

    run_simulation(server_app=ServerApp(server_fn=server_fn), client_app=ClientApp(client_fn=client_fn),
                   num_supernodes=CLIENTS, backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}})
    if errors:
        raise errors[0]
    if len(flower) != 1 + REPEATS:
        raise RuntimeError(f"Flower ran {len(flower)} of {1 + REPEATS} rounds; no timing printed")
    return Timing(tuple(flower[1:])), {k: Timing(tuple(v[1:])) for k, v in ours.items()}, first


def run() -> list[dict]:
    try:
        import flwr  # noqa: F401
    except ImportError:
        return [{"row": "Flower rounds: skipped (Flower is not installed: "
                        "pip install -r benchmarks/requirements-flower.txt)", "skipped": True}]
    logging.getLogger("flwr").setLevel(logging.ERROR)
    fed = _federation()
    config = FLConfig(rounds=1, clients_per_round=CLIENTS, local=LocalSGD(EPOCHS, BATCH), lr=LR, seed=SEED)
    fedlib = {k: (lambda k=k: run_federated(fresh_model("mlp", SEED), fed.train, fed.clients, None, config,
                                            client_batch=k).params) for k in (1, CLIENT_BATCH)}
    w0 = get_flat(fresh_model("mlp", SEED))
    steps = -(-len(fed.clients[0]) // BATCH)
    rtol = float32_rtol(784, chained=3 * 3 * steps * EPOCHS)
    rows = []
    for loaded in (False, True):
        if loaded:
            with busy_neighbour():
                flower, ours, first = _simulate(fedlib)
        else:
            flower, ours, first = _simulate(fedlib)
        diffs = {k: check_close(f"fedlib (client_batch={k}) and Flower after one round", first[k],
                                first["flower"], rtol, origin=w0) for k in fedlib}
        suffix, goal = (", busy neighbour", 1.5) if loaded else ("", 3.0)
        rows.append({"row": f"FL round ({CLIENTS} x 1,200), Flower simulation{suffix}", "time": flower})
        for k in fedlib:
            ratio = speedup(flower, ours[k])
            how = "one client at a time" if k == 1 else f"client_batch={k}"
            rows.append({"row": f"FL round ({CLIENTS} x 1,200), fedlib {how}{suffix}", "time": ours[k],
                         "ratio": ratio, "target": target("x Flower", ratio.median, goal),
                         "check": f"models agree with Flower's to {diffs[k]:.1e} (bound {rtol:.1e})"})
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
