"""What travels in Flower's messages: fedlib's flat vectors as ArrayRecords, and the round's context."""

from __future__ import annotations

import io
from collections.abc import Sequence

import torch
from flwr.app import Array, ArrayRecord, ConfigRecord
from torch import Tensor

from fedlib.fl import Component, RoundContext

#: Record keys of the messages between fedlib's ServerApp and ClientApp.
PARAMS, UPDATE, CONFIG, METRICS, TRANSFORM_METRICS, STATE = (
    "params", "update", "config", "metrics", "transform-metrics", "fedlib-state")


def flat_record(key: str, flat: Tensor) -> ArrayRecord:
    """An ArrayRecord holding one flat float vector (its bytes unchanged)."""
    return ArrayRecord({key: Array(flat.detach().contiguous())})


def record_flat(record: ArrayRecord, key: str) -> Tensor:
    """The flat vector stored by :func:`flat_record`."""
    return torch.from_numpy(record[key].numpy().copy())


def context_record(ctx: RoundContext, lr: float) -> ConfigRecord:
    """Round t's context and learning rate γ_t, for the participants (the slices and seed they know)."""
    return ConfigRecord({"round": ctx.round, "lr": lr, "num-clients": ctx.num_clients,
                         "clients-per-round": ctx.clients_per_round, "participants": list(ctx.participants)})


def record_context(record: ConfigRecord, slices: list[slice], seed: int) -> tuple[RoundContext, float]:
    """The :class:`RoundContext` and γ_t sent by :func:`context_record`."""
    ctx = RoundContext(int(record["round"]), int(record["num-clients"]), int(record["clients-per-round"]),
                       tuple(int(c) for c in record["participants"]), slices, seed)
    return ctx, float(record["lr"])


def pack_state(components: Sequence[Component]) -> ConfigRecord:
    """The components' state (e.g. a client's running median of its norms), to keep in a node's context."""
    buffer = io.BytesIO()
    torch.save([c.state_dict() for c in components], buffer)
    return ConfigRecord({"state": buffer.getvalue()})


def unpack_state(record: ConfigRecord, components: Sequence[Component]) -> None:
    """Restore what :func:`pack_state` saved."""
    states = torch.load(io.BytesIO(record["state"]), weights_only=False)
    for comp, state in zip(components, states, strict=True):
        comp.load_state_dict(state)
