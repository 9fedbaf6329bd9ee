"""Run a fedlib task through Flower's simulation engine (Ray): one virtual SuperNode per client."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from flwr.simulation import run_simulation as flwr_run_simulation

from fedlib.flower.client import client_app
from fedlib.flower.server import FedlibStrategy, server_app
from fedlib.flower.task import ConfigValue, TaskFactory, standard_task, task_config


def run_simulation(config: Mapping[str, ConfigValue], make_task: TaskFactory = standard_task, *, num_cpus: int = 2,
                   cpus_per_client: float = 1.0, ray_address: str | None = None, verbose: bool = False,
                   **strategy_kwargs) -> FedlibStrategy:
    """Run ``make_task(config)`` on M virtual SuperNodes (node i holds client i) and return the strategy.

    Ray starts here with ``num_cpus`` CPUs and runs ``num_cpus / cpus_per_client`` ClientApps at a time. To scale
    out, start a Ray cluster (``ray start --head`` on one machine, ``ray start --address=<head>:6379`` on the
    others, each with fedlib and the data) and pass ``ray_address="auto"`` from the head: the ClientApps then
    spread over every machine's CPUs. ``strategy_kwargs`` go to :class:`~fedlib.flower.server.FedlibStrategy`
    (``members``, ``init``, ``track_sensitivity``); the strategy returned holds the final model (``result()``),
    the privacy ledger (``algorithm``) and Ψ (``sensitivity``).
    """
    if not num_cpus >= cpus_per_client > 0:
        raise ValueError(f"need num_cpus >= cpus_per_client > 0, got num_cpus={num_cpus!r}, "
                         f"cpus_per_client={cpus_per_client!r}")
    init_args = {"address": ray_address} if ray_address else {"num_cpus": num_cpus, "num_gpus": 0}
    done: list[FedlibStrategy] = []
    num_clients = len(make_task(task_config(config)).clients)
    logger = logging.getLogger("flwr")
    level = logger.level
    if not verbose:
        logger.setLevel(logging.WARNING)  # Flower logs every round at INFO
    try:
        flwr_run_simulation(
            server_app=server_app(make_task, config, on_result=done.append, **strategy_kwargs),
            client_app=client_app(make_task, config), num_supernodes=num_clients, verbose_logging=verbose,
            backend_config={"init_args": init_args,
                            "client_resources": {"num_cpus": cpus_per_client, "num_gpus": 0.0}})
    finally:
        logger.setLevel(level)
    if not done:
        raise RuntimeError("Flower's simulation ended without a result (see its log above)")
    return done[0]
