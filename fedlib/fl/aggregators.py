"""Server-side aggregation of the uploaded updates into one global update G^t."""

from __future__ import annotations

import torch
from torch import Tensor

from fedlib.fl.component import Component, RoundContext
from fedlib.privacy.accountant import PrivacyBudget, RDPAccountant
from fedlib.privacy.clipping import clip_rows, median_clip_rows
from fedlib.privacy.mechanisms import gaussian_noise


class Aggregator(Component):
    """(updates (m, d), weights p_i (m,), summing to 1) → global update G (d,)."""

    def __call__(self, updates: Tensor, weights: Tensor, ctx: RoundContext) -> Tensor:
        raise NotImplementedError


class WeightedMean(Aggregator):
    """G = Σ_i p_i ∇W_i (FedAvg; thesis §2.1.2 Step 3 with p_i = 1/m or n_i / Σ_j n_j)."""

    def __call__(self, updates: Tensor, weights: Tensor, ctx: RoundContext) -> Tensor:
        return weights.to(updates.dtype) @ updates


class CentralGaussian(Aggregator):
    """Central (client-level) DP: clip each update to S, average, add N(0, (σ S / m)²) per coordinate.

    DP-FedAvg of McMahan et al. (2018) and CDP-FL of Geyer et al. (thesis §2.1.5.1). ``bound="median"``
    clips at the median norm of the round's updates (thesis eq. 2.27), as Geyer et al. do; a number
    clips at that constant. Weights are uniform (1/m): the sensitivity of the average is S/m. Each
    round is one sampled Gaussian mechanism with q = m/M on the accountant.

    Args:
        noise_multiplier: σ.
        bound: S, a positive constant or ``"median"``.
        budget: stop training before this (ε, δ) would be exceeded.
        delta: δ at which ε is reported when no budget is given.
    """

    def __init__(self, noise_multiplier: float, bound: float | str = "median",
                 budget: PrivacyBudget | None = None, delta: float = 1e-5) -> None:
        if not noise_multiplier >= 0:
            raise ValueError(f"noise_multiplier must be >= 0, got {noise_multiplier!r}")
        if not (bound == "median" or (isinstance(bound, (int, float)) and bound > 0)):
            raise ValueError(f"bound must be 'median' or a number > 0, got {bound!r}")
        self.noise_multiplier = float(noise_multiplier)
        self.bound = bound
        self.budget = budget
        self.report = budget or PrivacyBudget(1.0, delta)
        self.accountant = RDPAccountant()
        self.last_bound = float("nan")

    def __call__(self, updates: Tensor, weights: Tensor, ctx: RoundContext) -> Tensor:
        if self.bound == "median":
            clipped, bound = median_clip_rows(updates)
        else:
            bound = float(self.bound)
            clipped = clip_rows(updates, bound)
        self.last_bound = bound
        m = updates.shape[0]
        noise = gaussian_noise((updates.shape[1],), self.noise_multiplier * bound / m,
                               generator=ctx.generator("cdp_noise"), dtype=updates.dtype)
        if self.noise_multiplier > 0:
            self.accountant.step(noise_multiplier=self.noise_multiplier,
                                 sample_rate=ctx.clients_per_round / ctx.num_clients)
        return clipped.mean(dim=0) + noise

    def allows_round(self, ctx: RoundContext) -> bool:
        if self.budget is None or self.noise_multiplier == 0:
            return True
        return not self.accountant.would_exceed(self.budget, noise_multiplier=self.noise_multiplier,
                                                sample_rate=ctx.clients_per_round / ctx.num_clients)

    def metrics(self) -> dict[str, float]:
        return {"clip_bound": self.last_bound,
                "epsilon_cdp": self.accountant.get_epsilon(self.report.delta, self.report.conversion)}

    def reset(self) -> None:
        self.accountant = RDPAccountant()

    def state_dict(self) -> dict:
        return self.accountant.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.accountant.load_state_dict(state)
