"""Weng's thesis §3.2: LDP-FL and LCDP-FL with top-k sparsification and Global-MGD, and their baselines; and the
privacy conventions of thesis ch. 3 (§3.2 and §3.3 alike).

Each algorithm is a composition of :mod:`fedlib.fl` parts; local training (with local MGD) is set in
:class:`~fedlib.fl.engine.FLConfig`. Privacy follows the thesis's moments-accountant convention (spec §3.P,
"P1"): integer orders 2..33, classic conversion; the LDP accountant composes one sampled Gaussian
mechanism with q = 1/M per participating client, the CDP accountant one with q = m/M per round.

Two ways to state what a client's upload with noise std σS_i, S_i = C_i/n_i, spends (both chapters of thesis ch. 3
show both):

* :func:`thesis_epsilon`, **the thesis's convention**: σ is the noise multiplier on a sensitivity C_i/n_i (one
  sample's influence), and client sampling amplifies privacy (q = 1/M per participant);
* :func:`epsilon_as_run`, **the mechanism as run** against the server that receives the uploads: it sees who
  uploaded, so sampling amplifies nothing (q = 1, as for any local DP), and a client's data can move its clipped
  update by C, so each upload is a Gaussian mechanism with multiplier σ/n_i, composed over the client's uploads.
  The sample-level reading of C_i/n_i needs one sample to move the update by at most C_i/n_i, which local SGD
  without per-sample clipping does not guarantee (:func:`sensitivity_ratio` measures it).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from fedlib.fl import Algorithm, CentralGaussian, GaussianNoise, NormBound, ServerOptimizer, TopK
from fedlib.fl.engine import sample_clients
from fedlib.privacy.accountant import (
    DEFAULT_ORDERS,
    MOMENTS_ORDERS,
    Conversion,
    PrivacyBudget,
    RDPAccountant,
    compute_rdp,
    rdp_to_epsilon,
)
from fedlib.privacy.clipping import clip_per_layer
from fedlib.rng import make_generator


def moments_budget(epsilon: float, delta: float) -> PrivacyBudget:
    """A budget checked the way thesis §3.2 checks it (classic conversion, orders 2..33)."""
    return PrivacyBudget(epsilon, delta, "classic")


def vanilla_fl() -> Algorithm:
    """Vanilla-FL (A1): FedAvg with weights n_i / Σ n_j; pair it with local MGD in the FLConfig."""
    return Algorithm()


def ldp_fl(noise_multiplier: float, *, top_rate: float = 0.1, momentum: float = 0.5,
           budget: PrivacyBudget | None = None) -> Algorithm:
    """LDP-FL (Alg. 3.1 without CDP; A2 with ``top_rate=1, momentum=0``, A3 otherwise).

    Client: keep the ``top_rate`` fraction of D_i's entries largest in magnitude (§3.2.1.1), add N(0, σ² S_i²) with
    S_i = ‖D_i(sparse)‖ / n_i on the kept entries only (eqs. 3.1-3.2; no clipping). Server: weighted
    mean (3.3 without CDP), Global-MGD V^t = β V^{t−1} + (1 − β) G^t and W^{t+1} = W^t − V^t (3.6-3.7).
    """
    sparse = top_rate < 1
    transforms = [TopK(top_rate)] if sparse else []
    transforms += [NormBound(), GaussianNoise(noise_multiplier, per_sample=True, support="kept" if sparse else "all",
                                              accounting="global", budget=budget, orders=MOMENTS_ORDERS)]
    return Algorithm(transforms=transforms, server=ServerOptimizer(momentum=momentum, style="ema"))


def lcdp_fl(ldp_noise_multiplier: float, cdp_noise_multiplier: float, *, top_rate: float = 0.1,
            momentum: float = 0.5, ldp_budget: PrivacyBudget | None = None,
            cdp_budget: PrivacyBudget | None = None, noise_on: Literal["sum", "average"] = "sum",
            placement: Literal["before_momentum", "after_momentum"] = "before_momentum") -> Algorithm:
    """LCDP-FL (Alg. 3.1, A4): LDP-FL's clients, then the server clips at the median received norm
    (eq. 2.27 / 3.5), averages, adds central noise and applies Global-MGD. Training stops when either
    budget would be exceeded.

    ``noise_on="sum"`` is Geyer et al.'s scaling (std σ_CDP S / m on the average; our correction);
    ``"average"`` is the source's literal eq. 3.3 (std σ_CDP S on the average). ``placement="before_momentum"``
    follows eqs. 3.3, 3.6-3.7 (our default: momentum is then post-processing of the noisy average);
    ``"after_momentum"`` follows Alg. 3.1 line 14 (noise added to the new model).
    """
    algorithm = ldp_fl(ldp_noise_multiplier, top_rate=top_rate, momentum=momentum, budget=ldp_budget)
    algorithm.aggregator = CentralGaussian(cdp_noise_multiplier, "median", noise_on=noise_on, placement=placement,
                                           budget=cdp_budget, orders=MOMENTS_ORDERS)
    return algorithm


def cdp_fl(noise_multiplier: float, *, budget: PrivacyBudget | None = None) -> Algorithm:
    """CDP-FL of Geyer et al. (A5): median clipping at the server, Gaussian noise on the sum, plain FedAvg."""
    return Algorithm(aggregator=CentralGaussian(noise_multiplier, "median", budget=budget, orders=MOMENTS_ORDERS))


def rounds_within_budget(*, noise_multiplier: float, sample_rate: float, steps_per_round: int,
                         budget: PrivacyBudget, orders: Sequence[float] = MOMENTS_ORDERS,
                         max_rounds: int = 100_000) -> int:
    """How many rounds fit in ``budget`` (the thesis's stopping rule: stop before the next round overspends).

    The default orders are §3.2's moments accountant (P1); §3.3 uses TF-Privacy's orders (P2,
    :data:`~fedlib.privacy.DEFAULT_ORDERS`)."""
    acc = RDPAccountant(orders)
    for t in range(max_rounds):
        if acc.would_exceed(budget, noise_multiplier=noise_multiplier, sample_rate=sample_rate,
                            steps=steps_per_round):
            return t
        acc.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps_per_round)
    return max_rounds


def thesis_epsilon(*, noise_multiplier: float, num_clients: int, clients_per_round: int, rounds: int, delta: float,
                   orders: Sequence[float] = DEFAULT_ORDERS, conversion: Conversion = "improved"
                   ) -> tuple[float, float]:
    """ε and the optimal Rényi order in **the thesis's convention** (§3.2.2 with the moments accountant, §3.3.3 with
    RDP; spec P1/P2): each of the ``clients_per_round`` participants of a round is one sampled Gaussian mechanism
    with q = 1/M and multiplier σ (sensitivity S_i = C_i/n_i, eqs. 3.2, 3.9). Table 3.3's "(0.27, 63)-RDP" is
    (ε, order) for σ = 8, 52 rounds, M = 100, m = 50, δ = 1e-6."""
    rdp = compute_rdp(q=1 / num_clients, noise_multiplier=noise_multiplier, steps=rounds * clients_per_round,
                      orders=orders)
    return rdp_to_epsilon(orders, rdp, delta, conversion)


def epsilon_as_run(*, noise_multiplier: float, num_samples: float, participations: int, delta: float,
                   orders: Sequence[float] = DEFAULT_ORDERS, conversion: Conversion = "improved"
                   ) -> tuple[float, float]:
    """ε and the optimal order of one client's uploads **as run**, against the server that receives them
    (client-level: the client's data may change, so its upload clipped at C moves by up to C; add/remove).

    Each upload adds noise of std σC/n_i (eqs. 3.9-3.10; eq. 3.1 with C = ‖D_i‖): a Gaussian mechanism with
    multiplier σ/n_i. The server sees who uploaded, so sampling amplifies nothing (q = 1); the client's
    ``participations`` compose (RDP, Lemma 4)."""
    if not num_samples > 0:
        raise ValueError(f"num_samples must be > 0, got {num_samples!r}")
    if isinstance(participations, bool) or not isinstance(participations, int) or participations < 0:
        raise ValueError(f"participations must be an int >= 0, got {participations!r}")
    if participations == 0 or noise_multiplier == 0:
        return (0.0 if participations == 0 else math.inf), math.nan
    rdp = compute_rdp(q=1.0, noise_multiplier=noise_multiplier / num_samples, steps=participations, orders=orders)
    return rdp_to_epsilon(orders, rdp, delta, conversion)


def participations(num_clients: int, clients_per_round: int, rounds: int, seed: int) -> list[int]:
    """How many of the first ``rounds`` rounds each client takes part in, under the engine's sampler of a run with
    ``seed`` (no drop-out)."""
    counts: Counter[int] = Counter()
    for t in range(rounds):
        counts.update(sample_clients(num_clients, clients_per_round, make_generator(seed, "sample", t)))
    return [counts[c] for c in range(num_clients)]


def sensitivity_ratio(update: Tensor, neighbour: Tensor, bounds: Tensor, slices: list[slice],
                      num_samples: int) -> float:
    """How far one sample moved a client's upload, in units of the sensitivity the thesis accounts with:
    sqrt(Σ_l (‖clip(D'_l) − D_l‖ / S_l)²) with S_l = C_l / n_i (eq. 3.9; per layer, eq. 3.8; one flat block and
    C = ‖D‖ for LDP-FL's eq. 3.2). ``update`` D is trained on the client's data, ``neighbour`` D' on the same data
    with one sample replaced (same mini-batch order); D' is clipped at the same bounds C_l. The thesis's
    guarantee needs this ≤ 1 for every neighbouring pair."""
    if len(bounds) != len(slices):
        raise ValueError(f"bounds has {len(bounds)} entries for {len(slices)} layer slices")
    diff = clip_per_layer(neighbour, slices, bounds) - update
    ratios = torch.stack([torch.linalg.vector_norm(diff[s]) for s in slices]) * num_samples / bounds
    return float(torch.linalg.vector_norm(ratios))
