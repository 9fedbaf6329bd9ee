"""FedAvg with per-client sensitivity tracking and an accuracy stopping rule: one "stage" of SIFU's history.

The SIFU paper, §3-§4: every round the server samples m of the remaining clients, each
runs K local SGD steps from θ^n, the server averages the local models (η_g = 1) and adds to every sampled
client's bounded sensitivity Ψ(n, i) the norm by which dropping it would move the aggregate (eqs. 8, 45).
A stage stops once the mean accuracy of the remaining clients on their own data reaches a* (and at least
``min_rounds`` rounds ran), or after ``max_rounds``. All schemes of the chapter (SIFU, SCRATCH, FINE-TUNING,
LAST, DP, FedAccum, FedEraser) are stages with different starts, members and server steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from fedlib.fl.batched import BatchedClients
from fedlib.rng import make_generator


@dataclass(frozen=True)
class StageConfig:
    """Hyper-parameters of local work and of the stopping rule (the SIFU paper Table 1).

    Attributes:
        clients_per_round: m, sampled uniformly without replacement among the remaining clients.
        local_steps: K, local SGD steps per round.
        batch_size: B (B ≥ n_i: full-batch gradient descent).
        lr: η, the local learning rate.
        momentum: local heavy-ball momentum, reset every round (authors' code: 0.9; 0 is plain SGD).
        target_accuracy: a*, the mean accuracy of the remaining clients on their own data that ends a stage.
        min_rounds, max_rounds: the stage runs at least / at most this many aggregations (paper: 50 / 10,000).
        sampling_aware: Ψ increments with 1/(``|S_n|`` − 1) (the realised weights; ours) instead
            of the paper's p_i/(1 − p_i) = 1/(``|I_r|`` − 1).
    """

    clients_per_round: int
    local_steps: int
    batch_size: int
    lr: float
    target_accuracy: float
    momentum: float = 0.9
    min_rounds: int = 50
    max_rounds: int = 10_000
    sampling_aware: bool = False

    def __post_init__(self) -> None:
        for name in ("clients_per_round", "local_steps", "batch_size", "max_rounds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(self.min_rounds, int) or not 0 <= self.min_rounds <= self.max_rounds:
            raise ValueError(f"min_rounds must be an int in [0, max_rounds = {self.max_rounds}], "
                             f"got {self.min_rounds!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")
        if not 0 < self.target_accuracy <= 1:
            raise ValueError(f"target_accuracy must be in (0, 1], got {self.target_accuracy!r}")


@dataclass
class Federation:
    """The clients' data stacked as (M, n, ...) and (M, n), the network, and the seed of every stream."""

    trainer: BatchedClients
    x: Tensor
    y: Tensor
    seed: int

    @property
    def num_clients(self) -> int:
        return int(self.y.shape[0])

    def client_accuracy(self, params: Tensor, clients: Sequence[int] | None = None) -> Tensor:
        """Accuracy of ``params`` on each client's own samples (all clients, or ``clients``)."""
        idx = list(range(self.num_clients)) if clients is None else list(clients)
        return self.trainer.accuracy(params, self.x[idx], self.y[idx])


@dataclass
class RoundRecord:
    """What a stage observer sees after round n: θ^n, the sampled clients, their local models and θ^{n+1}."""

    stage: int
    round: int
    start: Tensor
    clients: tuple[int, ...]
    local_models: Tensor
    new: Tensor


#: server step: (θ^n, local models (m, d), sampled clients, generator) -> θ^{n+1}
ServerStep = Callable[[Tensor, Tensor, tuple[int, ...], torch.Generator], Tensor]


def fedavg_step(start: Tensor, local_models: Tensor, clients: tuple[int, ...], generator: torch.Generator) -> Tensor:
    """θ^{n+1} = θ^n + η_g Σ_{i∈S_n} w_i (θ_i^{n+1} − θ^n) with η_g = 1 and w_i = 1/``|S_n|`` (eq. 6 with sampling):
    written as θ^n plus the mean update, so that the DP step with C = ∞ and no noise is bitwise this one."""
    return start + (local_models - start).mean(0)


@dataclass
class Stage:
    """One FedAvg run of the history: branch ``index`` trained on ``members`` from ``start``.

    Attributes:
        psi: Ψ(n, i) for n = 0..rounds and every client (zero for non-members), float64 (rounds+1, M).
        snapshots: θ^n kept for the rounds some pointer refers to (the last round each client stayed at or
            below each tracked threshold), plus θ^0 and the final model.
        accuracy: the stopping rule's mean member accuracy, per evaluated round n = 0..rounds.
        client_updates: local trainings performed (the clients' cost).
    """

    index: int
    members: tuple[int, ...]
    start: Tensor
    params: Tensor
    rounds: int
    psi: Tensor
    snapshots: dict[int, Tensor]
    accuracy: list[float] = field(default_factory=list)
    client_updates: int = 0
    reached_target: bool = True

    @property
    def stored_bytes(self) -> int:
        """Bytes of the models the server keeps for unlearning."""
        return sum(t.numel() * t.element_size() for t in self.snapshots.values())

    def model(self, n: int) -> Tensor:
        """θ^n, if it was kept."""
        if n not in self.snapshots:
            raise KeyError(f"θ^{n} of stage {self.index} was not kept (kept: {sorted(self.snapshots)}); track its "
                           "threshold with run_stage(thresholds=...)")
        return self.snapshots[n]


def sensitivity_increment(local_models: Tensor, new: Tensor, weight: float) -> Tensor:
    """‖Δ(I, θ^n) − Δ(I_{−i}, θ^n)‖₂ = p_i/(1 − p_i) · ‖θ_i^{n+1} − θ^{n+1}‖₂ for each sampled client i
    (eq. 8 simplified by eqs. 43-45), with ``weight`` = p_i/(1 − p_i)."""
    return weight * torch.linalg.vector_norm((local_models - new).double(), dim=1)


def run_stage(fed: Federation, cfg: StageConfig, start: Tensor, members: Sequence[int], *, index: int,
              thresholds: Sequence[float] = (), server_step: ServerStep = fedavg_step,
              observers: Sequence[Callable[[RoundRecord], None]] = (), stream: str = "stage",
              progress: bool = False) -> Stage:
    """Run FedAvg on ``members`` from ``start`` until the stopping rule, tracking Ψ.

    Random streams are keyed by (seed, ``stream``, ``index``, round[, client]), so two schemes that run stage r
    from the same start produce the same trajectory (σ = 0 SIFU ≡ SCRATCH).

    Args:
        thresholds: Ψ* values whose last-good models are kept (one pointer per client and threshold).
        server_step: the aggregation (default FedAvg; the DP baseline clips and adds noise).
        observers: called after every round with a :class:`RoundRecord` (FedAccum, FedEraser bookkeeping).
    """
    members = tuple(sorted(int(i) for i in members))
    if len(members) < 2:
        raise ValueError(f"a stage needs at least 2 clients, got members={members}")
    if not all(0 <= i < fed.num_clients for i in members):
        raise ValueError(f"members must be client indices in [0, {fed.num_clients}), got {members}")
    m = min(cfg.clients_per_round, len(members))
    member_idx = torch.tensor(members)
    psi = torch.zeros(cfg.max_rounds + 1, fed.num_clients, dtype=torch.float64)
    pointers = {(i, k): 0 for i in members for k in range(len(thresholds))}
    snapshots = {0: start.clone()}
    theta = start.clone()
    accuracy: list[float] = []
    stage = Stage(index, members, start.clone(), theta, 0, psi, snapshots, accuracy)
    bar = None
    if progress:
        from fedlib.progress import progress_bar
        bar = progress_bar(total=cfg.max_rounds, desc=f"{stream} {index}", leave=False)
    x_members, y_members = fed.x[list(members)], fed.y[list(members)]  # gathered once: evaluated every round
    n = 0
    while True:
        acc = float(fed.trainer.accuracy(theta, x_members, y_members).mean())
        accuracy.append(acc)
        if (acc >= cfg.target_accuracy and n >= cfg.min_rounds) or n == cfg.max_rounds:
            stage.reached_target = acc >= cfg.target_accuracy
            break
        order = torch.randperm(len(members), generator=make_generator(fed.seed, stream, index, "sample", n))
        chosen = tuple(sorted(member_idx[order[:m]].tolist()))
        gens = [make_generator(fed.seed, stream, index, "batch", n, c) for c in chosen]
        local = fed.trainer.train(theta, fed.x[list(chosen)], fed.y[list(chosen)], steps=cfg.local_steps,
                                  batch_size=cfg.batch_size, lr=cfg.lr, momentum=cfg.momentum, generators=gens)
        new = server_step(theta, local, chosen, make_generator(fed.seed, stream, index, "server", n))
        weight = 1.0 / (len(chosen) - 1 if cfg.sampling_aware else len(members) - 1)
        psi[n + 1] = psi[n]
        psi[n + 1, list(chosen)] += sensitivity_increment(local, new, weight)
        for obs in observers:
            obs(RoundRecord(index, n, theta, chosen, local, new))
        stage.client_updates += len(chosen)
        theta = new
        n += 1
        moved = False
        for (i, k), ptr in pointers.items():
            if ptr == n - 1 and psi[n, i] <= thresholds[k]:
                pointers[(i, k)] = n
                moved = True
        if moved:
            snapshots[n] = theta.clone()
        keep = set(pointers.values()) | {0}
        for old in [r for r in snapshots if r not in keep]:
            del snapshots[old]
        if bar is not None:
            bar.update(1)
            bar.set_postfix(acc=f"{acc:.3f}")
    if bar is not None:
        bar.close()
    snapshots[n] = theta.clone()
    stage.params, stage.rounds, stage.psi = theta, n, psi[: n + 1].clone()
    return stage
