"""fedlib's server side as a Flower Strategy and ServerApp: sampling, aggregation, server update, privacy ledger.

:class:`FedlibStrategy` runs round t as fedlib's engine does, with the engine's own functions: participants
from the (seed, "sample", t) stream (:func:`~fedlib.fl.engine.round_context`), the budget check
(:meth:`~fedlib.fl.Algorithm.allows_round`), the weights p_i (:func:`~fedlib.fl.engine.round_weights`) and the
aggregation and server step (:meth:`~fedlib.fl.Algorithm.server_update`: FedAvg, central DP noise, median
clipping bound, Global-MGD momentum). It keeps its own copy of the algorithm's parts: the aggregator's
accountant (central DP) spends on the server, and for every upload received it records the client
transforms' privacy cost (:meth:`~fedlib.fl.ClientTransform.account`, local DP), so the server's ledger
holds the same ε as the engine's. That ledger assumes a trusted server for central DP and honest clients
for local DP: a client that skips its noise is not detected. Optionally it keeps SIFU's bounded
sensitivity Ψ (:class:`~fedlib.unlearning.sensitivity.SensitivityLedger`) so that the server can serve a
request to forget clients.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from logging import INFO
from pathlib import Path

import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MessageType, MetricRecord, RecordDict
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import Strategy
from flwr.supercore import log
from torch import Tensor

from fedlib.fl import RoundContext, evaluate, layer_slices
from fedlib.fl.aggregators import WeightedMean
from fedlib.fl.engine import RunResult, evaluation_row, round_context, round_weights
from fedlib.flower.records import (
    CONFIG,
    METRICS,
    PARAMS,
    TRANSFORM_METRICS,
    UPDATE,
    context_record,
    flat_record,
    record_flat,
)
from fedlib.flower.task import ConfigValue, Task, TaskFactory, standard_task, task_config
from fedlib.unlearning.sensitivity import SensitivityLedger


class FedlibStrategy(Strategy):
    """Round t of fedlib's engine, with the clients reached through Flower's Grid.

    Args:
        task: the run (its config, partition size M, W^0, test split and algorithm).
        members: the clients trained on (default all); participants are sampled among them exactly as the engine
            samples among all clients, so ``members=None`` gives the engine's rounds.
        init: W^0 (default ``task.init``), e.g. the restart model of an unlearning request.
        track_sensitivity: keep Ψ for unlearning (needs plain FedAvg: uniform weights, no server momentum).
        sampling_aware: Ψ's weights 1/(``|S_n|`` − 1) instead of 1/(``|I|`` − 1) (see the ledger).
    """

    def __init__(self, task: Task, *, members: Sequence[int] | None = None, init: Tensor | None = None,
                 track_sensitivity: bool = False, sampling_aware: bool = False) -> None:
        self.task = task
        num_clients = len(task.clients)
        self.members = sorted({int(c) for c in members}) if members is not None else list(range(num_clients))
        if not all(0 <= c < num_clients for c in self.members):
            raise ValueError(f"members must be client ids in [0, {num_clients}), got {members!r}")
        if task.config.clients_per_round > len(self.members):
            raise ValueError(f"clients_per_round ({task.config.clients_per_round}) exceeds the number of members "
                             f"({len(self.members)})")
        self.algorithm = task.algorithm()
        for comp in self.algorithm.components():
            comp.reset()
        self.slices = layer_slices(task.model)
        self.params = (task.init if init is None else init).detach().clone()
        self.sensitivity: SensitivityLedger | None = None
        if track_sensitivity:
            server = self.algorithm.server
            if (not isinstance(self.algorithm.aggregator, WeightedMean) or task.config.weighting != "uniform"
                    or server.momentum != 0 or server.lr != 1):
                raise ValueError("track_sensitivity needs plain FedAvg (SIFU's eq. 6): a WeightedMean aggregator, "
                                 "weighting='uniform' and a server step with lr=1, momentum=0")
            self.sensitivity = SensitivityLedger(self.params, num_clients, len(self.members),
                                                 sampling_aware=sampling_aware)
        self.nodes: dict[int, int] = {}
        self.metrics: list[dict[str, float]] = []
        self.rounds_completed = 0
        self.stopped = False
        self.diverged = False
        self.elapsed_s = 0.0
        self._ctx: RoundContext | None = None

    def connect(self, grid: Grid, *, timeout: float = 600.0, poll: float = 0.5) -> None:
        """Wait (at most ``timeout`` s in all) until enough nodes are connected, then ask each for its client id."""
        deadline = time.monotonic() + timeout
        while len(nodes := list(grid.get_node_ids())) < len(self.members):
            if time.monotonic() > deadline:
                raise TimeoutError(f"after {timeout:.0f} s only {len(nodes)} nodes are connected; "
                                   f"{len(self.members)} members are needed")
            time.sleep(poll)
        replies = grid.send_and_receive(
            [Message(RecordDict(), dst_node_id=n, message_type=MessageType.QUERY) for n in nodes],
            timeout=max(deadline - time.monotonic(), 1.0))
        self.nodes = _client_nodes(replies)
        missing = [c for c in self.members if c not in self.nodes]
        if missing:
            raise TimeoutError(f"no node answered for clients {missing} within {timeout:.0f} s "
                               f"(answered: {sorted(self.nodes)})")

    def round_context(self, t: int) -> RoundContext | None:
        """Round t's context; participants drawn among the members as the engine draws among all clients, leaving
        out those that dropped out (thesis Alg. 3.2); None when too few are left."""
        out = frozenset().union(*(c.dropped_out(max(self.members) + 1) for c in self.algorithm.components()))
        dropped = frozenset(i for i, c in enumerate(self.members) if c in out)
        if len(self.members) - len(dropped) < self.task.config.clients_per_round:
            return None
        ctx = round_context(self.task.config, len(self.members), self.slices, t, dropped)
        return dataclasses.replace(ctx, participants=tuple(self.members[i] for i in ctx.participants))

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> Iterable[Message]:
        t = server_round - 1
        ctx = self.round_context(t)
        self._ctx = None
        if self.stopped or ctx is None or not self.algorithm.allows_round(ctx):
            self.stopped = True  # a privacy budget (or divergence) ended training; later rounds send nothing
            return []
        missing = [c for c in ctx.participants if c not in self.nodes]
        if missing:
            raise RuntimeError(f"round {t}: no node holds clients {missing}; call connect(grid) first")
        self._ctx = ctx
        content = RecordDict({PARAMS: flat_record(PARAMS, self.params),
                              CONFIG: context_record(ctx, self.task.config.lr_at(t))})
        return [Message(content, dst_node_id=self.nodes[c], message_type=MessageType.TRAIN, group_id=str(t))
                for c in ctx.participants]

    def aggregate_train(self, server_round: int,
                        replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        ctx, self._ctx = self._ctx, None
        if ctx is None:
            return None, None
        t, chosen, cfg = ctx.round, ctx.participants, self.task.config
        by_client = _train_replies(replies, chosen, t)
        uploads = torch.stack([record_flat(by_client[c].content[UPDATE], UPDATE) for c in chosen])
        sizes = torch.tensor([float(by_client[c].content[METRICS]["num-examples"]) for c in chosen],
                             dtype=torch.float64)
        train_loss = 0.0
        for c in chosen:
            train_loss += float(by_client[c].content[METRICS]["train-loss"]) / len(chosen)
        for c in chosen:
            for transform in self.algorithm.transforms:
                transform.account(c, ctx)
        if not bool(torch.isfinite(uploads).all()):  # as the engine: report it and stop, never aggregate NaNs
            self.stopped = self.diverged = True
            log(INFO, "round %d: non-finite client updates; training stopped (diverged)", t)
            row = {"round": t + 1, "accuracy": math.nan, "loss": math.nan, "diverged": 1.0}
            if self.task.test is not None:
                row["accuracy"], row["loss"] = evaluate(self.task.model, self.params, self.task.test.x,
                                                        self.task.test.y)
            self.metrics.append(row)
            return None, MetricRecord(row)
        start = self.params
        self.params = self.algorithm.server_update(start, uploads, round_weights(sizes, cfg.weighting), ctx)
        if self.sensitivity is not None:
            self.sensitivity.record(chosen, start, uploads, self.params)
        self.rounds_completed = completed = t + 1
        row = {"round": completed, "train_loss": train_loss}
        if self.task.test is not None and (completed % cfg.eval_every == 0 or completed == cfg.rounds):
            row, _ = evaluation_row(self.task.model, self.params, self.task.test, self.algorithm, completed,
                                    train_loss, cfg.lr_at(t))
            # the clients' transforms measured what the server's copies did not run (e.g. top-k's upload size)
            row.update({k: float(v) for k, v in by_client[chosen[-1]].content[TRANSFORM_METRICS].items()})
            self.metrics.append(row)
        return flat_record(PARAMS, self.params), MetricRecord(row)

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                           grid: Grid) -> Iterable[Message]:
        return []  # the server evaluates the global model on the task's test split, as the engine does

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> MetricRecord | None:
        return None

    def summary(self) -> None:
        parts = ", ".join(type(c).__name__ for c in self.algorithm.components())
        log(INFO, "\t├──> fedlib: %d clients (%d members), %d per round, %d rounds, seed %d", len(self.task.clients),
            len(self.members), self.task.config.clients_per_round, self.task.config.rounds, self.task.config.seed)
        log(INFO, "\t└──> parts: %s", parts)

    def result(self) -> RunResult:
        """The run's outcome in the engine's terms (``elapsed_s``: the wall time of :meth:`run`)."""
        return RunResult(self.params, self.metrics, None, self.rounds_completed, self.elapsed_s, self.diverged)

    def run(self, grid: Grid, *, timeout: float = 600.0) -> RunResult:
        """Connect to the members' nodes and run ``task.config.rounds`` rounds, waiting at most ``timeout`` s for
        the nodes and for each round's replies."""
        began = time.perf_counter()
        self.connect(grid, timeout=timeout)
        self.start(grid, flat_record(PARAMS, self.params), num_rounds=self.task.config.rounds, timeout=timeout)
        self.elapsed_s = time.perf_counter() - began
        return self.result()


def _client_nodes(replies: Iterable[Message]) -> dict[int, int]:
    """fedlib client id → Flower node id, from the answers to a query."""
    nodes: dict[int, int] = {}
    for msg in replies:
        if msg.has_error():
            raise RuntimeError(f"node {msg.metadata.src_node_id} failed to answer a query: {msg.error.reason}")
        client = int(msg.content[METRICS]["client"])
        if client in nodes:
            raise ValueError(f"nodes {nodes[client]} and {msg.metadata.src_node_id} both hold client {client}; "
                             "give every SuperNode its own partition-id")
        nodes[client] = msg.metadata.src_node_id
    return nodes


def _train_replies(replies: Iterable[Message], chosen: Sequence[int], t: int) -> dict[int, Message]:
    """The round's replies by client; any failure or missing reply stops the run (no partial aggregation)."""
    by_client: dict[int, Message] = {}
    for msg in replies:
        if msg.has_error():
            raise RuntimeError(f"round {t}: node {msg.metadata.src_node_id} failed: {msg.error.reason}")
        by_client[int(msg.content[METRICS]["client"])] = msg
    missing = sorted(set(chosen) - set(by_client))
    if missing:
        raise RuntimeError(f"round {t}: no reply from clients {missing} (timeout or lost node)")
    return by_client


def server_app(make_task: TaskFactory = standard_task, config: Mapping[str, ConfigValue] | None = None, *,
               on_result: Callable[[FedlibStrategy], None] | None = None, **strategy_kwargs) -> ServerApp:
    """A ServerApp that runs ``make_task(config)`` with a :class:`FedlibStrategy`.

    Flower's run config (``flwr run``) overrides ``config``; its key ``result-file`` names a file the final
    model and metrics are saved to (``torch.save``), and ``timeout`` bounds the wait for the nodes and for each
    round's replies (s). ``on_result`` receives the strategy after the last round (in-process runs, e.g. simulation);
    ``strategy_kwargs`` go to :class:`FedlibStrategy`.
    """
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        run_config = {**(config or {}), **context.run_config}
        strategy = FedlibStrategy(make_task(task_config(run_config)), **strategy_kwargs)
        result = strategy.run(grid, timeout=float(run_config.get("timeout", 600.0)))
        if run_config.get("result-file"):
            path = Path(str(run_config["result-file"]))
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"params": result.params, "metrics": result.metrics,
                        "rounds_completed": result.rounds_completed}, path)
        if on_result is not None:
            on_result(strategy)

    return app
