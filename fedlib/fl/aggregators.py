"""Server-side aggregation of the uploaded updates into one global update G^t."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from torch import Tensor

from fedlib.fl.component import Component, RoundContext
from fedlib.privacy.accountant import DEFAULT_ORDERS, PrivacyBudget, RDPAccountant
from fedlib.privacy.clipping import clip_rows, median_clip_rows
from fedlib.privacy.mechanisms import gaussian_noise


class Aggregator(Component):
    """(updates (m, d), weights p_i (m,), summing to 1) → global update G (d,)."""

    def __call__(self, updates: Tensor, weights: Tensor, ctx: RoundContext) -> Tensor:
        raise NotImplementedError

    def after_server_step(self, params: Tensor) -> Tensor:
        """The broadcast model given the server optimizer's output (identity unless noise is added there)."""
        return params


class WeightedMean(Aggregator):
    """G = Σ_i p_i ∇W_i (FedAvg; thesis §2.1.2 Step 3 with p_i = 1/m or n_i / Σ_j n_j)."""

    def __call__(self, updates: Tensor, weights: Tensor, ctx: RoundContext) -> Tensor:
        return weights.to(updates.dtype) @ updates


class CentralGaussian(Aggregator):
    """Central (client-level) DP: clip each update to S, average, add Gaussian noise.

    DP-FedAvg of McMahan et al. (2018) and CDP-FL of Geyer et al. (thesis §2.1.5.1). ``bound="median"``
    clips at the median norm of the round's updates (thesis eq. 2.27), as Geyer et al. do; a number
    clips at that constant. Weights are uniform (1/m). ``noise_on="sum"`` (Geyer scaling, default) adds
    N(0, σ²S²) to the sum, i.e. std σS/m on the average, which is what the accountant's sensitivity
    assumes; ``noise_on="average"`` is the source's literal eq. 3.3, std σS on the average (m times more).
    ``placement="before_momentum"`` adds the noise to G^t (eq. 3.3, then 3.6-3.7: momentum is
    post-processing); ``"after_momentum"`` adds it to the new model instead (thesis Alg. 3.1 line 14).
    Each round is one sampled Gaussian mechanism with q = m/M on the accountant.

    Args:
        noise_multiplier: σ.
        bound: S, a positive constant or ``"median"``.
        noise_on: ``"sum"`` or ``"average"``.
        placement: ``"before_momentum"`` or ``"after_momentum"``.
        budget: stop training before this (ε, δ) would be exceeded.
        delta: δ at which ε is reported when no budget is given.
        orders: Rényi orders of the accountant.
    """

    def __init__(self, noise_multiplier: float, bound: float | str = "median", *,
                 noise_on: Literal["sum", "average"] = "sum",
                 placement: Literal["before_momentum", "after_momentum"] = "before_momentum",
                 budget: PrivacyBudget | None = None,
                 delta: float = 1e-5, orders: Sequence[float] = DEFAULT_ORDERS) -> None:
        if not noise_multiplier >= 0:
            raise ValueError(f"noise_multiplier must be >= 0, got {noise_multiplier!r}")
        if not (bound == "median" or (isinstance(bound, (int, float)) and bound > 0)):
            raise ValueError(f"bound must be 'median' or a number > 0, got {bound!r}")
        if noise_on not in ("sum", "average"):
            raise ValueError(f"noise_on must be 'sum' or 'average', got {noise_on!r}")
        if placement not in ("before_momentum", "after_momentum"):
            raise ValueError(f"placement must be 'before_momentum' or 'after_momentum', got {placement!r}")
        self.placement = placement
        self.pending_noise: Tensor | None = None
        self.noise_multiplier = float(noise_multiplier)
        self.bound = bound
        self.noise_on = noise_on
        self.budget = budget
        self.report = budget or PrivacyBudget(1.0, delta)
        self.orders = tuple(orders)
        self.last_bound = float("nan")
        self.reset()

    def __call__(self, updates: Tensor, weights: Tensor, ctx: RoundContext) -> Tensor:
        if self.bound == "median":
            clipped, bound = median_clip_rows(updates)
        else:
            bound = float(self.bound)
            clipped = clip_rows(updates, bound)
        self.last_bound = bound
        m = updates.shape[0] if self.noise_on == "sum" else 1
        noise = gaussian_noise((updates.shape[1],), self.noise_multiplier * bound / m,
                               generator=ctx.generator("cdp_noise"), dtype=updates.dtype)
        if self.noise_multiplier > 0:
            self.accountant.step(noise_multiplier=self.noise_multiplier,
                                 sample_rate=ctx.clients_per_round / ctx.num_clients)
        if self.placement == "after_momentum":
            self.pending_noise = noise
            return clipped.mean(dim=0)
        return clipped.mean(dim=0) + noise

    def after_server_step(self, params: Tensor) -> Tensor:
        if self.pending_noise is None:
            return params
        noisy, self.pending_noise = params + self.pending_noise, None
        return noisy

    def allows_round(self, ctx: RoundContext) -> bool:
        if self.budget is None or self.noise_multiplier == 0:
            return True
        return not self.accountant.would_exceed(self.budget, noise_multiplier=self.noise_multiplier,
                                                sample_rate=ctx.clients_per_round / ctx.num_clients)

    def metrics(self) -> dict[str, float]:
        return {"clip_bound": self.last_bound,
                "epsilon_cdp": self.accountant.get_epsilon(self.report.delta, self.report.conversion)}

    def reset(self) -> None:
        self.accountant = RDPAccountant(self.orders)

    def state_dict(self) -> dict:
        return self.accountant.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.accountant.load_state_dict(state)
