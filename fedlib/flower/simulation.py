"""Run a fedlib task through Flower's simulation engine (Ray): one virtual SuperNode per client."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from flwr.simulation import run_simulation as flwr_run_simulation

from fedlib.flower.client import client_app
from fedlib.flower.server import FedlibStrategy, server_app
from fedlib.flower.task import ConfigValue, TaskFactory, standard_task, task_config


def run_simulation(config: Mapping[str, ConfigValue], make_task: TaskFactory = standard_task, *, num_cpus: int = 2,
                   cpus_per_client: float = 1.0, verbose: bool = False, **strategy_kwargs) -> FedlibStrategy:
    """Run ``make_task(config)`` on M virtual SuperNodes (node i holds client i) and return the strategy.

    Ray starts with ``num_cpus`` CPUs and runs ``num_cpus / cpus_per_client`` ClientApps at a time. To scale out,
    start a Ray cluster (``ray start --head`` here, ``ray start --address=<head>:6379`` on each other machine)
    and pass ``num_cpus`` up to the cluster's total. ``strategy_kwargs`` go to
    :class:`~fedlib.flower.server.FedlibStrategy` (``members``, ``init``, ``track_sensitivity``); the strategy
    returned holds the final model (``result()``), the privacy ledger (``algorithm``) and Ψ (``sensitivity``).
    """
    if not num_cpus >= cpus_per_client > 0:
        raise ValueError(f"need num_cpus >= cpus_per_client > 0, got num_cpus={num_cpus!r}, "
                         f"cpus_per_client={cpus_per_client!r}")
    done: list[FedlibStrategy] = []
    num_clients = len(make_task(task_config(config)).clients)
    if not verbose:
        logging.getLogger("flwr").setLevel(logging.WARNING)
    flwr_run_simulation(
        server_app=server_app(make_task, config, on_result=done.append, **strategy_kwargs),
        client_app=client_app(make_task, config), num_supernodes=num_clients, verbose_logging=verbose,
        backend_config={"init_args": {"num_cpus": num_cpus, "num_gpus": 0},
                        "client_resources": {"num_cpus": cpus_per_client, "num_gpus": 0.0}})
    if not done:
        raise RuntimeError("Flower's simulation ended without a result (see its log above)")
    return done[0]
