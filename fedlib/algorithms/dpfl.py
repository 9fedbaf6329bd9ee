"""Thesis 001 §3.2: LDP-FL and LCDP-FL with top-k sparsification and Global-MGD, and their baselines.

Each is a composition of :mod:`fedlib.fl` parts; local training (with local MGD) is set in
:class:`~fedlib.fl.engine.FLConfig`. Privacy follows the thesis's moments-accountant convention (spec §3.P,
"P1"): integer orders 2..33, classic conversion; the LDP accountant composes one sampled Gaussian
mechanism with q = 1/M per participating client, the CDP accountant one with q = m/M per round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from fedlib.fl import Algorithm, CentralGaussian, GaussianNoise, NormBound, ServerOptimizer, TopK
from fedlib.privacy.accountant import MOMENTS_ORDERS, PrivacyBudget, RDPAccountant


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
    ``"average"`` is the seed's literal eq. 3.3 (std σ_CDP S on the average). ``placement="before_momentum"``
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
