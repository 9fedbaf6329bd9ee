"""The shared shape of every pluggable piece of a federated round."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from fedlib.rng import make_generator


@dataclass(frozen=True)
class RoundContext:
    """What a component may know about the current round.

    Attributes:
        round: t, counted from 0.
        num_clients: M, clients in the federation.
        clients_per_round: m, clients sampled per round.
        participants: ids of the clients sampled this round (sorted).
        slices: per-layer slices of the flat parameter vector.
        seed: the run's seed, from which every random stream is derived.
    """

    round: int
    num_clients: int
    clients_per_round: int
    participants: tuple[int, ...]
    slices: list[slice] = field(repr=False)
    seed: int

    def generator(self, purpose: str, *keys: int) -> torch.Generator:
        """The random stream for ``purpose`` in this round (and for ``keys``, e.g. a client id)."""
        return make_generator(self.seed, purpose, self.round, *keys)


class Component:
    """Base class of client transforms, aggregators and server optimizers.

    A component that keeps state across rounds (a momentum buffer, an accountant, a running median)
    overrides ``reset``, ``state_dict`` and ``load_state_dict``, so that the engine can start fresh
    runs and resume checkpointed ones exactly. ``metrics`` adds per-round numbers to the run's log;
    ``allows_round`` lets a component with a privacy budget stop training before it is overspent, and
    ``dropped_out`` lets it take clients whose own budget is spent out of the sampling (thesis Alg. 3.2).
    """

    def reset(self) -> None:
        """Forget all state (called when a fresh run starts)."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""

    def metrics(self) -> dict[str, float]:
        return {}

    def allows_round(self, ctx: RoundContext) -> bool:
        return True

    def dropped_out(self, num_clients: int) -> frozenset[int]:
        """Clients that may no longer be sampled (none by default)."""
        return frozenset()
