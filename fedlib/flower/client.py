"""fedlib's client side as a Flower ClientApp: local training and the client transforms on the node's partition.

The node holding ``partition-id`` i (Flower's node config: set by the simulation engine, or by
``flower-supernode --node-config "partition-id=i"``) is fedlib's client i. It trains with
:func:`~fedlib.fl.engine.train_client` and transforms its update with :func:`~fedlib.fl.engine.client_message`,
the functions fedlib's engine calls, on the same (seed, purpose, round, client) random streams, so its upload
is the engine's. Transform state that outlives a round (a client's running median of its norms) is kept in
the node's context. A node may set its own ``seed`` in its node config: its streams then differ from the
engine's and nobody else can regenerate its noise, which local DP needs in a real deployment.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from flwr.app import Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from fedlib.fl import LocalTrainer, layer_slices
from fedlib.fl.engine import client_message, train_client
from fedlib.flower.records import (
    CONFIG,
    METRICS,
    PARAMS,
    STATE,
    TRANSFORM_METRICS,
    UPDATE,
    flat_record,
    pack_state,
    record_context,
    record_flat,
    unpack_state,
)
from fedlib.flower.task import ConfigValue, Task, TaskFactory, standard_task, task_config


def node_client(context: Context, task: Task) -> int:
    """fedlib's client id of this node: its ``partition-id``, checked against the task's partition."""
    if "partition-id" not in context.node_config:
        raise ValueError("the node config has no 'partition-id'; start the SuperNode with "
                         "--node-config 'partition-id=<i> num-partitions=<M>'")
    client = int(context.node_config["partition-id"])
    parts = int(context.node_config.get("num-partitions", len(task.clients)))
    if parts != len(task.clients) or not 0 <= client < parts:
        raise ValueError(f"node has partition-id={client}, num-partitions={parts}; the task has "
                         f"{len(task.clients)} clients")
    return client


def client_app(make_task: TaskFactory = standard_task, config: Mapping[str, ConfigValue] | None = None) -> ClientApp:
    """A ClientApp that runs the client side of ``make_task(config)``'s algorithm.

    Args:
        make_task: builds the task from the run configuration (default: :func:`~fedlib.flower.task.standard_task`).
        config: defaults for the run configuration; Flower's run config (``flwr run``) overrides them.

    The app answers a ``query`` with its client id and sample count n_i, and a ``train`` message (the global
    model and the round's context) with its upload, n_i, its training loss and its transforms' metrics.
    """
    app = ClientApp()

    def setup(context: Context) -> tuple[Task, int]:
        task = make_task(task_config({**(config or {}), **context.run_config}))
        return task, node_client(context, task)

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        task, client = setup(context)
        return Message(RecordDict({METRICS: MetricRecord({"client": client,
                                                          "num-examples": len(task.clients[client])})}),
                       reply_to=msg)

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        task, client = setup(context)
        seed = int(context.node_config.get("seed", task.config.seed))
        ctx, lr = record_context(msg.content[CONFIG], layer_slices(task.model), seed)
        if client not in ctx.participants:
            raise ValueError(f"client {client} was sent a round it does not take part in ({ctx.participants})")
        algorithm = task.algorithm()
        transforms = list(algorithm.transforms)
        if STATE in context.state:
            unpack_state(context.state[STATE], transforms)
        indices = task.clients[client]
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # as the engine trains each client: one thread, the same floats
        try:
            trainer = LocalTrainer(task.model, algorithm.loss, algorithm.penalty)
            update, loss = train_client(trainer, record_flat(msg.content[PARAMS], PARAMS), task.train, indices,
                                        client, lr, task.config.local, ctx)
            upload = client_message(transforms, client, len(indices), update, ctx)
        finally:
            torch.set_num_threads(threads)
        context.state[STATE] = pack_state(transforms)
        shown = {k: v for t in transforms if not t.spends_privacy for k, v in t.metrics().items()}
        return Message(RecordDict({
            UPDATE: flat_record(UPDATE, upload.update),
            METRICS: MetricRecord({"client": client, "num-examples": len(indices), "train-loss": loss}),
            TRANSFORM_METRICS: MetricRecord(shown),
        }), reply_to=msg)

    return app
